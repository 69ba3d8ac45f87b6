"""Robot assets shipped by installed packages (found without importing them)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

from robofollow_ros.errors import SimulationError

GYM_ALOHA_INSTALL = "pip install --no-deps 'gym-aloha==0.1.5'"
"""gym-aloha 0.1.5 pins mujoco < 3.9; its assets load under MuJoCo 4, so it is installed without its dependencies."""


def package_dir(package: str, *, install: str) -> Path:
    """Directory of an installed Python package, located without importing it.

    Raises:
        SimulationError: the package is not installed (the message gives ``install``).
    """
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise SimulationError(f'the {package!r} package is not installed; install it with: {install}')
    return Path(next(iter(spec.submodule_search_locations)))


def gym_aloha_assets() -> Path:
    """The ``assets`` folder of the installed gym-aloha package (ViperX 300 6DoF MJCF and STL meshes).

    Raises:
        SimulationError: gym-aloha is not installed or lacks its assets.
    """
    assets = package_dir('gym_aloha', install=GYM_ALOHA_INSTALL) / 'assets'
    if not (assets / 'vx300s_left.xml').is_file():
        raise SimulationError(f'{assets} lacks the ViperX assets; reinstall with: {GYM_ALOHA_INSTALL}')
    return assets
