"""Episode videos that play in a browser: H.264 (yuv420p, MP4) through PyAV's bundled FFmpeg.

``write_episode_video`` lays the three cameras side by side with the instruction as a caption and ends with a card
holding the instruction and the referee's stage results (IS / ES per stage, completion), so a video alone says what
was asked and how it was scored. ``encode_frames`` is the plain encoder the LeRobot export shares.
"""

from __future__ import annotations

import os
import textwrap
from collections.abc import Iterable, Mapping, Sequence
from fractions import Fraction
from pathlib import Path
from typing import Any, Final

import av
import cv2
import numpy as np

from robofollow_ros.errors import DatasetError
from robofollow_ros.evaluation.episode_files import VIDEOS_DIR
from robofollow_ros.state_layout import CAMERAS
from robofollow_ros.textfiles import partial_path

CODEC: Final = 'libx264'
PIXEL_FORMAT = 'yuv420p'
CAPTION_HEIGHT = 40
END_CARD_SECONDS = 2.5
FONT = cv2.FONT_HERSHEY_SIMPLEX


class VideoWriter:
    """Writes (H, W, 3) uint8 RGB frames to an H.264 MP4 at a constant frame rate, pts counting from 0.

    The file appears under its name only when ``close`` succeeds (written under ``textfiles.partial_path`` until
    then, which a resumed run recognises once this process is gone).
    Odd frame sizes are padded by one pixel (yuv420p needs even sizes). B-frames are off so that every frame's
    timestamp is exactly ``index / fps`` (what LeRobot's decoders check).
    """

    def __init__(self, path: Path, *, fps: int | Fraction, crf: int = 23, keyframe_every: int | None = None) -> None:
        self.path = path
        self.fps = fps
        self.count = 0
        gop = keyframe_every or round(2 * fps)
        self._options: dict[str, object] = {'crf': str(crf), 'preset': 'veryfast', 'bf': '0', 'g': str(gop)}
        path.parent.mkdir(parents=True, exist_ok=True)
        self._temporary = partial_path(path)
        self._container = av.open(str(self._temporary), mode='w', format='mp4')
        self._stream: Any = None

    def write(self, frame: np.ndarray) -> None:
        """Append one frame."""
        frame = _even(frame)
        if self._stream is None:
            stream = self._container.add_stream(CODEC, rate=self.fps)
            stream.width, stream.height = frame.shape[1], frame.shape[0]
            stream.pix_fmt = PIXEL_FORMAT
            stream.time_base = 1 / Fraction(self.fps)
            stream.options = self._options
            self._stream = stream
        video_frame = av.VideoFrame.from_ndarray(np.ascontiguousarray(frame), format='rgb24')
        video_frame.pts = self.count
        self._container.mux(self._stream.encode(video_frame))
        self.count += 1

    def close(self) -> None:
        """Flush the encoder and publish the file.

        Raises:
            DatasetError: no frame was written.
        """
        if self._stream is None:
            self._container.close()
            self._temporary.unlink(missing_ok=True)
            raise DatasetError(f'{self.path}: no frames to encode')
        self._container.mux(self._stream.encode(None))
        self._container.close()
        os.replace(self._temporary, self.path)


def encode_frames(path: Path, frames: Iterable[np.ndarray], *, fps: int | Fraction, crf: int = 23) -> int:
    """Encode frames into a new MP4 with ``VideoWriter``; returns the frame count."""
    writer = VideoWriter(path, fps=fps, crf=crf)
    for frame in frames:
        writer.write(frame)
    writer.close()
    return writer.count


def decode_frames(path: Path) -> np.ndarray:
    """Every frame of a video as (N, H, W, 3) uint8 RGB."""
    with av.open(str(path)) as container:
        return np.stack([frame.to_ndarray(format='rgb24') for frame in container.decode(video=0)])


def _even(frame: np.ndarray) -> np.ndarray:
    height, width = frame.shape[:2]
    if height % 2 == 0 and width % 2 == 0:
        return frame
    return np.pad(frame, ((0, height % 2), (0, width % 2), (0, 0)))


def _text_lines(image: np.ndarray, lines: Sequence[str], *, top: int, scale: float, color=(255, 255, 255)) -> int:
    step = int(30 * scale) + 6
    for line in lines:
        top += step
        cv2.putText(image, line, (10, top), FONT, scale, color, 1, cv2.LINE_AA)
    return top


def _ascii(text: str) -> str:
    return text.encode('ascii', 'replace').decode('ascii')


def side_by_side(images: Mapping[str, np.ndarray], *, caption: str = '') -> np.ndarray:
    """The cameras in ``CAMERAS`` order next to each other, above a caption strip."""
    row = np.concatenate([images[name] for name in CAMERAS if name in images], axis=1)
    strip = np.zeros((CAPTION_HEIGHT, row.shape[1], 3), dtype=np.uint8)
    chars = max(20, row.shape[1] // 8)
    _text_lines(strip, textwrap.wrap(_ascii(caption), chars)[:2], top=-6, scale=0.45)
    return np.concatenate([row, strip], axis=0)


def end_card(shape: tuple[int, ...], *, instruction: str, record: Mapping[str, Any]) -> np.ndarray:
    """A card with the instruction and the referee's stage results."""
    card = np.full(shape, 24, dtype=np.uint8)
    chars = max(30, shape[1] // 9)
    top = _text_lines(card, textwrap.wrap(_ascii(instruction), chars)[:3], top=0, scale=0.55)
    done = bool(record.get('completion_ok'))
    summary = (
        f'IS {float(record.get("intent_score", 0)):.2f}  ES {float(record.get("exec_score", 0)):.2f}  '
        f'CR {"complete" if done else "not complete"}'
    )
    top = _text_lines(card, [summary], top=top + 6, scale=0.6, color=(120, 230, 120) if done else (240, 120, 120))
    lines = []
    for stage in record.get('stages', []):
        reason = stage.get('exec_reason') or stage.get('intent_reason') or ''
        lines.append(
            f'{stage["name"]}: intent {stage["intent"]:.2f} exec {stage["exec"]:.2f} / {stage["max"]:.2f}  {reason}'
        )
    wrapped = [part for line in lines for part in textwrap.wrap(_ascii(line), int(chars * 1.15))]
    _text_lines(card, wrapped[: max(1, (shape[0] - top) // 22 - 1)], top=top + 4, scale=0.45)
    return card


def write_episode_video(
    path: Path,
    images: Mapping[str, np.ndarray],
    *,
    fps: int | Fraction,
    instruction: str,
    record: Mapping[str, Any] | None = None,
) -> Path:
    """Write the episode video: cameras side by side, captioned, then the end card when ``record`` is given.

    Args:
        path: the .mp4 file to write.
        images: camera name -> (N, H, W, 3) uint8 RGB, every frame of the episode.
        fps: frames per second (the row rate of the episode).
        instruction: the instruction the policy was given.
        record: the referee's result record (stages, IS, ES, completion).
    """
    if not images:
        raise DatasetError('an episode video needs camera images')
    count = min(len(frames) for frames in images.values())

    def frames() -> Iterable[np.ndarray]:
        last = None
        for index in range(count):
            last = side_by_side({name: stack[index] for name, stack in images.items()}, caption=instruction)
            yield last
        if record is not None and last is not None:
            card = end_card(last.shape, instruction=instruction, record=record)
            for _ in range(max(1, round(END_CARD_SECONDS * fps))):
                yield card

    encode_frames(path, frames(), fps=fps)
    return path


def save_trial_video(out: Path, stem: str, images: Mapping[str, np.ndarray], *, record: Mapping[str, Any]) -> str:
    """Write ``out/videos/<stem>.mp4`` for an evaluated trial; returns its path relative to ``out``."""
    from robofollow_ros.sim.constants import ROW_FPS

    path = out / VIDEOS_DIR / f'{stem}.mp4'
    write_episode_video(path, images, fps=ROW_FPS, instruction=str(record.get('instruction', '')), record=record)
    return str(path.relative_to(out))
