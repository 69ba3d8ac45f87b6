"""Robot assets installed with the package: the ViperX 300 meshes of the ALOHA cell, the Piper kinematics' licence.

The meshes are unchanged copies of gym-aloha 0.1.5's (Apache-2.0; ``meshes/vx300s/LICENSE``), shipped under
``share/robofollow/meshes/vx300s/`` beside the URDF that references them as ``package://robofollow/meshes/vx300s/``
(a URI robot_state_publisher / RViz resolve through the ament index), so nothing beyond ``pip install`` is needed.
Beside them, ``light/`` holds decimated copies (~10 % of the triangles, ``tools/make_light_meshes.py``) that only the
cameras draw; the physics collides with the shipped meshes. The Piper cell has no meshes: its URDF states AgileX's
joint origins and inertias as numbers (``tools/make_piper_urdf.py``), and their MIT licence and provenance ship beside
it as ``share/robofollow/urdf/piper/`` (``PIPER_LICENSE``).
"""

from __future__ import annotations

from pathlib import Path

from robofollow_ros.errors import RoboFollowError, SimulationError
from robofollow_ros.resources import share_file

VX300S_URI = 'package://robofollow/meshes/vx300s/'
"""How the ALOHA URDF names the folder of its meshes."""
VX300S_LICENSE = 'meshes/vx300s/LICENSE'
VX300S_LIGHT = 'meshes/vx300s/light/README.md'
PIPER_LICENSE = 'urdf/piper/LICENSE'
"""The MIT licence of the Piper kinematics that ``urdf/piper_cell.urdf`` states (``urdf/piper/README.md``: whence)."""


def vx300s_meshes() -> Path:
    """The installed folder of the ViperX 300 6DoF STL meshes (``share/robofollow/meshes/vx300s``).

    Raises:
        SimulationError: the package was installed without them (a broken or partial install).
    """
    try:
        return share_file(VX300S_LICENSE).parent
    except RoboFollowError as exc:
        raise SimulationError(f'the ViperX 300 meshes are missing ({exc}); reinstall robofollow') from exc


def vx300s_light_meshes() -> Path:
    """The installed folder of the decimated ViperX meshes the cameras draw (``tools/make_light_meshes.py``).

    Raises:
        SimulationError: the package was installed without them.
    """
    try:
        return share_file(VX300S_LIGHT).parent
    except RoboFollowError as exc:
        raise SimulationError(f'the light ViperX 300 meshes are missing ({exc}); reinstall robofollow') from exc
