"""Camera images as openpi clients send them: letterboxed to a square, uint8, channels first.

``resize_with_pad`` keeps openpi_client.image_tools' geometry (scale by the larger ratio, truncate the
scaled size, centre with zero padding, top-left rounding down) with OpenCV instead of PIL; area
interpolation when shrinking comes closest to PIL's antialiased bilinear filter.
"""

from __future__ import annotations

import cv2
import numpy as np

from robofollow_ros.errors import PolicyError

OPENPI_IMAGE_SIZE = 224


def to_uint8(image: np.ndarray) -> np.ndarray:
    """Float images in [0, 1] become uint8 (clipped); uint8 images pass through."""
    if np.issubdtype(image.dtype, np.floating):
        return (255 * np.clip(image, 0.0, 1.0)).astype(np.uint8)
    return image.astype(np.uint8, copy=False)


def resize_with_pad(image: np.ndarray, height: int, width: int) -> np.ndarray:
    """Fit an (h, w, c) image into (height, width, c) without distortion, padding with zeros."""
    if image.ndim != 3:
        raise PolicyError(f'expected an (h, w, channels) image, got shape {list(image.shape)}')
    current_height, current_width = image.shape[:2]
    if (current_height, current_width) == (height, width):
        return image
    ratio = max(current_width / width, current_height / height)
    resized_height = int(current_height / ratio)
    resized_width = int(current_width / ratio)
    shrinking = resized_width < current_width
    resized = cv2.resize(
        image,
        (resized_width, resized_height),
        interpolation=cv2.INTER_AREA if shrinking else cv2.INTER_LINEAR,
    ).reshape(resized_height, resized_width, image.shape[2])
    padded = np.zeros((height, width, image.shape[2]), dtype=image.dtype)
    top = max(0, int((height - resized_height) / 2))
    left = max(0, int((width - resized_width) / 2))
    padded[top : top + resized_height, left : left + resized_width] = resized
    return padded


def to_openpi(image: np.ndarray, *, size: int = OPENPI_IMAGE_SIZE) -> np.ndarray:
    """An (h, w, 3) RGB image as a (3, size, size) uint8 array, letterboxed."""
    square = resize_with_pad(to_uint8(np.asarray(image)), size, size)
    return np.ascontiguousarray(square.transpose(2, 0, 1))


def from_openpi(image: np.ndarray) -> np.ndarray:
    """A (3, h, w) or (h, w, 3) wire image as (h, w, 3) uint8 RGB."""
    array = np.asarray(image)
    if array.ndim == 3 and array.shape[0] == 3 and array.shape[2] != 3:
        array = array.transpose(1, 2, 0)
    if array.ndim != 3 or array.shape[2] != 3:
        raise PolicyError(f'an image must be (3, h, w) or (h, w, 3), got shape {list(array.shape)}')
    return np.ascontiguousarray(to_uint8(array))
