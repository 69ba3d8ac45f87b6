"""Image degradations a real camera adds to a clean render, for ``bench/bench_tracker.py --rendered --degrade``.

Pure numpy and OpenCV on (H, W, 3) uint8 images (any channel order; the bench passes BGR, as the detector takes
it). Each returns a new image; the random ones take a ``numpy.random.Generator`` so a seed fixes the result.

- ``sensor_noise``: zero-mean Gaussian noise of ``sigma`` grey levels per pixel and channel, rounded and clipped.
- ``motion_blur``: a linear kernel ``length`` px long at angle ``angle`` (rad), uniform weights (the camera or the
  scene moving during the exposure).
- ``defocus_blur``: a disk kernel ``diameter`` px across, each tap weighted by the disk's area over it.
- ``jpeg``: encoded and decoded at JPEG ``quality`` (OpenCV's encoder, 4:2:0 chroma).
- ``exposure``: every level times ``gain``, clipped at 255 (``gain`` > 1: overexposed, highlights burn out).
- ``gamma``: level -> 255 (level / 255) ** ``value`` (``value`` < 1 brightens the shadows, > 1 darkens: dim light).
- ``lens_distortion``: the image a lens with OpenCV distortion coefficients ``dist`` would give of the same scene,
  from the undistorted pinhole render with camera matrix ``matrix``: each output pixel takes the render's colour
  where its undistorted ray lands (OpenCV's iterative undistortion run to convergence, then ``cv2.remap``, bilinear).
  Output pixels whose ray falls outside the render (the corners, for barrel distortion) are black.
- ``bump``: a camera pose moved by ``translation`` m in a random 3-D direction and turned by ``angle_deg`` about a
  random axis through its optical centre.
"""

from __future__ import annotations

import math

import cv2
import numpy as np

from robofollow_ros.tracking.camera import CameraPose


def sensor_noise(image: np.ndarray, sigma: float, rng: np.random.Generator) -> np.ndarray:
    noisy = image.astype(np.float64) + rng.normal(0.0, sigma, image.shape)
    return np.clip(np.rint(noisy), 0, 255).astype(np.uint8)


def motion_blur(image: np.ndarray, length: int, angle: float) -> np.ndarray:
    size = length if length % 2 else length + 1
    centre = (size - 1) / 2.0
    kernel = np.zeros((size, size), dtype=np.float64)
    # Sample the segment densely and spread each sample bilinearly over the taps: any angle, same length.
    for t in np.linspace(-(length - 1) / 2.0, (length - 1) / 2.0, 16 * length):
        x, y = centre + t * math.cos(angle), centre + t * math.sin(angle)
        x0, y0 = math.floor(x), math.floor(y)
        fx, fy = x - x0, y - y0
        for dx, dy, w in ((0, 0, (1 - fx) * (1 - fy)), (1, 0, fx * (1 - fy)), (0, 1, (1 - fx) * fy), (1, 1, fx * fy)):
            if 0 <= x0 + dx < size and 0 <= y0 + dy < size:
                kernel[y0 + dy, x0 + dx] += w
    kernel /= kernel.sum()
    return cv2.filter2D(image, -1, kernel, borderType=cv2.BORDER_REFLECT)


def defocus_blur(image: np.ndarray, diameter: float) -> np.ndarray:
    size = math.ceil(diameter)
    size = size if size % 2 else size + 1
    centre = (size - 1) / 2.0
    sub = 16
    offsets = (np.arange(sub) + 0.5) / sub - 0.5
    kernel = np.zeros((size, size), dtype=np.float64)
    for row in range(size):
        for col in range(size):
            ys = row - centre + offsets[:, None]
            xs = col - centre + offsets[None, :]
            kernel[row, col] = np.mean(xs**2 + ys**2 <= (diameter / 2.0) ** 2)
    kernel /= kernel.sum()
    return cv2.filter2D(image, -1, kernel, borderType=cv2.BORDER_REFLECT)


def jpeg(image: np.ndarray, quality: int) -> np.ndarray:
    ok, encoded = cv2.imencode('.jpg', image, [cv2.IMWRITE_JPEG_QUALITY, int(quality)])
    if not ok:
        raise RuntimeError('JPEG encoding failed')
    return cv2.imdecode(encoded, cv2.IMREAD_COLOR)


def exposure(image: np.ndarray, gain: float) -> np.ndarray:
    return np.clip(np.rint(image.astype(np.float64) * gain), 0, 255).astype(np.uint8)


def gamma(image: np.ndarray, value: float) -> np.ndarray:
    table = np.clip(np.rint(255.0 * (np.arange(256) / 255.0) ** value), 0, 255).astype(np.uint8)
    return cv2.LUT(image, table)


def distortion_maps(matrix: np.ndarray, dist: np.ndarray, width: int, height: int) -> tuple[np.ndarray, np.ndarray]:
    """For each pixel of the distorted image, where its ray lands in the undistorted render (``cv2.remap``'s maps)."""
    u, v = np.meshgrid(np.arange(width, dtype=np.float64), np.arange(height, dtype=np.float64))
    pixels = np.stack([u.ravel(), v.ravel()], axis=1).reshape(-1, 1, 2)
    criteria = (cv2.TERM_CRITERIA_COUNT | cv2.TERM_CRITERIA_EPS, 100, 1e-10)
    if hasattr(cv2, 'undistortPointsIter'):  # OpenCV 4; OpenCV 5 takes the criteria in undistortPoints
        undistorted = cv2.undistortPointsIter(pixels, matrix, dist, None, matrix, criteria)
    else:
        undistorted = cv2.undistortPoints(pixels, matrix, dist, R=None, P=matrix, criteria=criteria)
    undistorted = undistorted.reshape(height, width, 2)
    return undistorted[:, :, 0].astype(np.float32), undistorted[:, :, 1].astype(np.float32)


def lens_distortion(image: np.ndarray, maps: tuple[np.ndarray, np.ndarray]) -> np.ndarray:
    return cv2.remap(image, maps[0], maps[1], cv2.INTER_LINEAR, borderMode=cv2.BORDER_CONSTANT, borderValue=0)


def _unit(rng: np.random.Generator) -> np.ndarray:
    vector = rng.normal(size=3)
    return vector / np.linalg.norm(vector)


def bump(camera: CameraPose, translation: float, angle_deg: float, rng: np.random.Generator) -> CameraPose:
    turn, _ = cv2.Rodrigues(_unit(rng) * math.radians(angle_deg))
    return CameraPose(rotation=turn @ camera.rotation, position=camera.position + translation * _unit(rng))
