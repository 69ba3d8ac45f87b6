"""Camera images handed to the policy process through one shared-memory file (``memfd``), not the pipe.

The evaluator writes each query's images into the file and sends only their names, shapes and offsets; the
policy process maps the same file and copies the images out (``Observation`` holds read-only copies). The
file holds nothing but the images of the current query, and is written only while the policy process waits
for a request, so the two sides never touch it at once. Where ``memfd_create`` is missing (not Linux),
``SharedImages.available`` is false and the images travel inside the frame instead.
"""

from __future__ import annotations

import mmap
import os
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

ALIGN = 64
ImageSlot = tuple[str, tuple[int, ...], int]
"""(camera name, shape, byte offset) of one image in the shared file."""


def _aligned(size: int) -> int:
    return (size + ALIGN - 1) // ALIGN * ALIGN


class SharedImages:
    """The evaluator's side: a growing shared-memory file the policy process maps (``fd`` is passed to it)."""

    def __init__(self) -> None:
        self.fd = os.memfd_create('robofollow-policy-images') if self.available() else -1
        self.size = 0
        self._map: mmap.mmap | None = None

    @staticmethod
    def available() -> bool:
        """Whether this platform has anonymous shared-memory files."""
        return hasattr(os, 'memfd_create')

    def write(self, images: Mapping[str, Any]) -> list[ImageSlot]:
        """Copy ``images`` (as uint8) into the file, growing it if needed; returns where each one is."""
        arrays = {str(name): np.ascontiguousarray(pixels, dtype=np.uint8) for name, pixels in images.items()}
        slots: list[ImageSlot] = []
        offset = 0
        for name, array in arrays.items():
            slots.append((name, tuple(int(size) for size in array.shape), offset))
            offset += _aligned(array.nbytes)
        if offset > self.size:
            self._grow(offset)
        for (_, _, start), array in zip(slots, arrays.values(), strict=True):
            assert self._map is not None
            target = np.ndarray(array.shape, dtype=np.uint8, buffer=self._map, offset=start)
            target[...] = array
        return slots

    def _grow(self, size: int) -> None:
        if self._map is not None:
            self._map.close()
        os.ftruncate(self.fd, size)
        self.size = size
        self._map = mmap.mmap(self.fd, size)

    def close(self) -> None:
        """Unmap and close the file (the policy process keeps its own mapping until it exits)."""
        if self._map is not None:
            self._map.close()
            self._map = None
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1


class ImageReader:
    """The policy process's side: maps the file and views the images of a request."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.size = 0
        self._map: mmap.mmap | None = None

    def read(self, slots: Sequence[Sequence[Any]], *, size: int) -> dict[str, np.ndarray]:
        """Views of the images at ``slots`` (valid until the next request); ``size`` is the file's size now."""
        if size > self.size:
            if self._map is not None:
                self._map.close()
            self._map = mmap.mmap(self.fd, size, prot=mmap.PROT_READ)
            self.size = size
        images = {}
        for name, shape, offset in slots:
            images[str(name)] = np.ndarray(tuple(shape), dtype=np.uint8, buffer=self._map, offset=int(offset))
        return images
