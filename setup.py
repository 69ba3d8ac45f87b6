"""Build script of the `robofollow` ROS 2 package (ament_python; also a plain Python package)."""

import subprocess
from glob import glob
from pathlib import Path

from setuptools import find_packages, setup
from setuptools.command.build_py import build_py

PACKAGE_NAME = 'robofollow'
HERE = Path(__file__).parent
BUILD_COMMIT = 'BUILD_COMMIT'
"""Written into the built package: the git commit it was built from (run.json's ``git_commit`` when installed)."""


class BuildWithCommit(build_py):
    """``build_py`` that also records the source checkout's git commit in the built package (an installed copy,
    as ``colcon build`` or ``pip install .`` makes it, is no git checkout)."""

    def run(self) -> None:
        super().run()
        try:
            commit = subprocess.run(
                ['git', 'rev-parse', 'HEAD'], capture_output=True, text=True, check=True, cwd=HERE
            ).stdout.strip()
        except (OSError, subprocess.CalledProcessError):
            return
        if commit and not self.dry_run:
            (Path(self.build_lib) / 'robofollow_ros' / BUILD_COMMIT).write_text(commit + '\n', encoding='utf-8')


def share(folder: str, *patterns: str) -> tuple[str, list[str]]:
    """Return a data_files entry installing ``folder/<pattern>`` under ``share/robofollow/folder``."""
    return (
        f'share/{PACKAGE_NAME}/{folder}',
        sorted(path for pattern in patterns for path in glob(f'{folder}/{pattern}')),
    )


def requirements() -> list[str]:
    """The runtime requirements of ``requirements.txt`` (one source for ``pip install .`` and scripts/setup.sh)."""
    lines = (line.split('#', 1)[0].strip() for line in (HERE / 'requirements.txt').read_text().splitlines())
    return [line for line in lines if line]


setup(
    name=PACKAGE_NAME,
    version='0.1.0',
    description='RoboFollow instruction-following benchmark on ROS 2 and MuJoCo',
    long_description=(HERE / 'README.md').read_text(encoding='utf-8') if (HERE / 'README.md').exists() else '',
    long_description_content_type='text/markdown',
    license='Apache-2.0',
    python_requires='>=3.10',
    packages=find_packages(include=['robofollow_ros', 'robofollow_ros.*']),
    package_data={'robofollow_ros': ['py.typed']},
    data_files=[
        ('share/ament_index/resource_index/packages', [f'resource/{PACKAGE_NAME}']),
        (f'share/{PACKAGE_NAME}', ['package.xml']),
        share('launch', '*.launch.py'),
        share('config', '*.yaml'),
        share('config', '*.xml'),
        share('config/robots', '*.yaml'),
        share('config/markers', '*.yaml'),
        share('urdf', '*.urdf'),
        # The licence and provenance of the Piper kinematics urdf/piper_cell.urdf states (tools/make_piper_urdf.py).
        share('urdf/piper', 'LICENSE', 'README.md'),
        # The ALOHA cell's ViperX 300 meshes (gym-aloha 0.1.5, with its license); the MJCF beside them is only
        # read by tools/make_aloha_urdf.py and is not installed.
        share('meshes/vx300s', '*.stl', 'LICENSE', 'README.md'),
        # Their decimated copies, which only the cameras draw (tools/make_light_meshes.py).
        share('meshes/vx300s/light', '*.stl', 'README.md'),
        # The graph's message definitions, for the bag writer's typestore where the interface package is not
        # installed (a plain pip install; robofollow_ros/interfaces.py).
        share('robofollow_interfaces/msg', '*.msg'),
    ],
    # Everything `robofollow eval` needs, the ROS 2 Kilted wheels included (the default eval runs the node graph,
    # and in-process bags need the message packages); a colcon build uses package.xml's dependencies instead.
    install_requires=['setuptools', *requirements()],
    extras_require={'ray': ['ray>=2.60']},
    zip_safe=False,
    cmdclass={'build_py': BuildWithCommit},
    entry_points={
        'console_scripts': [
            'robofollow = robofollow_ros.cli:main',
            'sim = robofollow_ros.nodes.sim:main',
            'policy_bridge = robofollow_ros.nodes.policy_bridge:main',
            'referee = robofollow_ros.nodes.referee:main',
            'recorder = robofollow_ros.nodes.recorder:main',
            'evaluator = robofollow_ros.nodes.evaluator:main',
            'ee_pose = robofollow_ros.nodes.ee_pose:main',
            'fake_hardware = robofollow_ros.nodes.fake_hardware:main',
            'aruco_tracker = robofollow_ros.nodes.aruco_tracker:main',
        ],
    },
)
