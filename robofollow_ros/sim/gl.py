"""The OpenGL backend of MuJoCo's offscreen renderer, chosen by the entry points that render.

MuJoCo reads ``MUJOCO_GL`` once, when ``mujoco`` is first imported, and falls back to GLFW, which needs a display.
The ``robofollow`` command, the sim node, the Gymnasium environment and the test suite call ``choose_gl_backend``
before anything imports MuJoCo; a library user sets ``MUJOCO_GL`` themselves (``CameraRig`` says so if it is wrong).
"""

from __future__ import annotations

import ctypes.util
import os
from collections.abc import MutableMapping


def choose_gl_backend(environ: MutableMapping[str, str] | None = None) -> str:
    """Pick a headless backend when ``MUJOCO_GL`` is unset: EGL when libEGL is present, OSMesa otherwise.

    Args:
        environ: the environment to set (the process environment by default).

    Returns:
        The backend in effect (an explicit ``MUJOCO_GL`` is kept).
    """
    target = os.environ if environ is None else environ
    if 'MUJOCO_GL' not in target:
        target['MUJOCO_GL'] = 'egl' if ctypes.util.find_library('EGL') else 'osmesa'
        target.setdefault('PYOPENGL_PLATFORM', target['MUJOCO_GL'])
    return target['MUJOCO_GL']
