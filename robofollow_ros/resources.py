"""Where the package's shared files (``config/``, ``urdf/``, ``launch/``) are, however it was installed.

Looked up in order: ``$ROBOFOLLOW_SHARE``; the source checkout (the folder beside ``robofollow_ros/``); the install
prefix of the imported package (``<prefix>/lib/pythonX.Y/site-packages/robofollow_ros`` ->
``<prefix>/share/robofollow``, which covers a colcon install tree and ``pip install --prefix``); ``sys.prefix``
(a plain ``pip install .`` into a venv); every prefix of ``AMENT_PREFIX_PATH`` (the ament index).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from robofollow_ros.errors import RoboFollowError

PACKAGE = 'robofollow'
ENVIRONMENT_VARIABLE = 'ROBOFOLLOW_SHARE'


def share_candidates() -> list[Path]:
    """Folders that may hold the shared files, in lookup order."""
    package = Path(__file__).resolve().parent
    candidates = []
    if os.environ.get(ENVIRONMENT_VARIABLE):
        candidates.append(Path(os.environ[ENVIRONMENT_VARIABLE]))
    candidates.append(package.parent)
    if package.parent.name == 'site-packages' and len(package.parents) > 3:
        candidates.append(package.parents[3] / 'share' / PACKAGE)
    candidates.append(Path(sys.prefix) / 'share' / PACKAGE)
    for prefix in os.environ.get('AMENT_PREFIX_PATH', '').split(os.pathsep):
        if prefix:
            candidates.append(Path(prefix) / 'share' / PACKAGE)
    return candidates


def share_file(relative: str) -> Path:
    """The installed file ``relative`` (e.g. ``config/referee.yaml``).

    Raises:
        RoboFollowError: no candidate folder holds it.
    """
    candidates = [folder / relative for folder in share_candidates()]
    for candidate in candidates:
        if candidate.is_file():
            return candidate
    searched = ', '.join(str(candidate) for candidate in candidates)
    raise RoboFollowError(f'{relative} not found (searched {searched})')


def share_file_or_default(relative: str) -> Path:
    """Like ``share_file``, but the source-tree path when nothing holds it (the error then comes on reading)."""
    try:
        return share_file(relative)
    except RoboFollowError:
        return share_candidates()[0] / relative
