"""The MuJoCo dual-arm cell: model composition, action executor, cameras, reset, scripted expert.

Importing this package picks a headless OpenGL backend for MuJoCo's offscreen renderer when ``MUJOCO_GL`` is unset:
EGL when libEGL is present, OSMesa otherwise (it must happen before ``mujoco`` is first imported).
"""

from __future__ import annotations

import ctypes.util
import os


def _choose_gl_backend() -> None:
    if 'MUJOCO_GL' in os.environ:
        return
    os.environ['MUJOCO_GL'] = 'egl' if ctypes.util.find_library('EGL') else 'osmesa'
    os.environ.setdefault('PYOPENGL_PLATFORM', os.environ['MUJOCO_GL'])


_choose_gl_backend()
