"""The package builds with colcon into a ROS install tree (ament_python layout), as on a ROS machine.

Runs the venv's ``colcon build`` on the repository and on the nested interface package (isolated install, no
symlinks; the venv is the underlay, as /opt/ros/<distro> is on a ROS machine) into a temporary directory, then
checks the interface package's messages import from the install, the ament index entry, the shared files, the
console script in lib/robofollow (where ``ros2 run`` looks) and that the installed Python package is the one
imported after sourcing the install's setup.sh.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = 'robofollow'
INTERFACES = 'robofollow_interfaces'
SHARED_FOLDERS = ('config', 'launch', 'urdf')
SOURCE_ARTIFACTS = ('build', 'install', 'log', f'{PACKAGE}.egg-info')


def colcon_executable() -> str:
    candidate = Path(sys.executable).with_name('colcon')
    found = str(candidate) if candidate.exists() else shutil.which('colcon')
    if found is None:
        pytest.skip('colcon is not installed (colcon-core, colcon-ros, colcon-python-setup-py)')
    return found


def clean_environment(tmp_path: Path) -> dict[str, str]:
    env = {
        key: value
        for key, value in os.environ.items()
        if key not in ('PYTHONPATH', 'AMENT_PREFIX_PATH', 'CMAKE_PREFIX_PATH') and not key.startswith('COLCON')
    }
    env['COLCON_HOME'] = str(tmp_path / 'colcon_home')
    # The venv holds the ROS wheels: it is the underlay a ROS user would have sourced.
    env['AMENT_PREFIX_PATH'] = env['CMAKE_PREFIX_PATH'] = sys.prefix
    return env


def shared_source_files() -> list[Path]:
    return [
        path
        for folder in SHARED_FOLDERS
        if (ROOT / folder).is_dir()
        for path in sorted((ROOT / folder).rglob('*'))
        if path.is_file() and not path.name.startswith(('.', 'README')) and '__pycache__' not in path.parts
    ]


@pytest.fixture(scope='module')
def install(tmp_path_factory) -> tuple[Path, Path, dict[str, str]]:
    tmp_path = tmp_path_factory.mktemp('colcon')
    env = clean_environment(tmp_path)
    artifacts_before = {name for name in SOURCE_ARTIFACTS if (ROOT / name).exists()}
    command = [
        colcon_executable(),
        '--log-base',
        str(tmp_path / 'log'),
        'build',
        '--base-paths',
        str(ROOT),
        # colcon does not look for a package inside another package's folder: name the nested one too.
        str(ROOT / INTERFACES),
        '--build-base',
        str(tmp_path / 'build'),
        '--install-base',
        str(tmp_path / 'install'),
        '--cmake-args',
        '-DBUILD_TESTING=OFF',
        f'-DPython3_EXECUTABLE={sys.executable}',
    ]
    # The interface package's C and Python code generation and compilation takes ~1 min idle, minutes when loaded.
    result = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=900)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-4000:]
    started = [line.split()[-1] for line in result.stdout.splitlines() if line.startswith('Starting >>> ')]
    assert started == [INTERFACES, PACKAGE], started  # the interfaces first: robofollow depends on them
    assert f'Finished <<< {PACKAGE}' in result.stdout and f'Finished <<< {INTERFACES}' in result.stdout
    assert {name for name in SOURCE_ARTIFACTS if (ROOT / name).exists()} == artifacts_before
    return tmp_path / 'install', tmp_path / 'install' / PACKAGE, env


def sourced(install_base: Path, script: str, env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    """Run a shell snippet after sourcing the install's setup.sh, as a ROS user would."""
    return subprocess.run(
        ['bash', '-c', f'. "{install_base}/setup.sh" && {script}'],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_ament_index_and_package_manifest(install):
    _, prefix, _ = install
    assert (prefix / 'share/ament_index/resource_index/packages' / PACKAGE).is_file()
    assert (prefix / 'share' / PACKAGE / 'package.xml').read_bytes() == (ROOT / 'package.xml').read_bytes()


def test_interface_package_is_installed_and_its_messages_import_after_sourcing(install, tmp_path):
    install_base, _, env = install
    prefix = install_base / INTERFACES
    assert (prefix / 'share/ament_index/resource_index/packages' / INTERFACES).is_file()
    for name in ('EpisodeSpec', 'SimStatus', 'EpisodeEnd', 'Stage', 'Adjustment', 'Result', 'ChunkTicket'):
        installed = prefix / 'share' / INTERFACES / 'msg' / f'{name}.msg'
        assert installed.read_bytes() == (ROOT / INTERFACES / 'msg' / f'{name}.msg').read_bytes()
    probe = (
        'import robofollow_interfaces.msg as m, robofollow_interfaces.srv as s; '
        'r = m.Result(stages=[m.Stage(name=chr(120), intent=0.5)]); '
        'print(m.__file__); print(r.stages[0].name, r.stages[0].intent, s.ResetEpisode.Response.RESET_FAILED)'
    )
    result = sourced(install_base, f'"{sys.executable}" -c "{probe}"', env, tmp_path)
    assert result.returncode == 0, result.stderr
    module, typed = result.stdout.splitlines()
    assert Path(module).is_relative_to(prefix)  # the install's build, not the venv's
    assert typed == 'x 0.5 2'


def test_config_launch_and_urdf_files_are_installed(install):
    _, prefix, _ = install
    for source in shared_source_files():
        installed = prefix / 'share' / PACKAGE / source.relative_to(ROOT)
        assert installed.is_file(), f'{source.relative_to(ROOT)} is not installed (setup.py data_files)'
        assert installed.read_bytes() == source.read_bytes()


def test_console_script_is_where_ros2_run_looks(install, tmp_path):
    install_base, prefix, env = install
    script = prefix / 'lib' / PACKAGE / PACKAGE
    assert script.is_file()
    assert script.stat().st_mode & stat.S_IXUSR
    result = sourced(install_base, f'"{script}" --help', env, tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith('usage: robofollow')


def test_installed_python_package_is_imported_after_sourcing(install, tmp_path):
    install_base, prefix, env = install
    site_packages = prefix / 'lib' / f'python{sys.version_info.major}.{sys.version_info.minor}' / 'site-packages'
    installed_init = site_packages / 'robofollow_ros' / '__init__.py'
    assert installed_init.is_file() and not installed_init.is_symlink()
    assert not list(site_packages.glob('*.egg-link')), 'symlink/develop install instead of a copy'
    probe = (
        'import importlib.metadata, robofollow_ros, robofollow_ros.bags; '
        'from ament_index_python.packages import get_package_share_directory; '
        'print(robofollow_ros.__file__); print(robofollow_ros.bags.__file__); '
        f"print(get_package_share_directory('{PACKAGE}')); "
        f"print(importlib.metadata.distribution('{PACKAGE}').locate_file('robofollow_ros/__init__.py'))"
    )
    result = sourced(install_base, f'"{sys.executable}" -c "{probe}"', env, tmp_path)
    assert result.returncode == 0, result.stderr
    module, bags, share, located = result.stdout.split()
    assert Path(module) == installed_init
    assert Path(bags) == site_packages / 'robofollow_ros' / 'bags' / '__init__.py'
    assert Path(share) == prefix / 'share' / PACKAGE
    assert Path(located) == installed_init


def test_node_executables_are_where_ros2_run_looks(install):
    _, prefix, _ = install
    for node in ('sim', 'policy_bridge', 'referee', 'recorder', 'evaluator'):
        script = prefix / 'lib' / PACKAGE / node
        assert script.is_file() and script.stat().st_mode & stat.S_IXUSR, node


def test_installed_package_evaluates_and_scores_outside_the_source_tree(install, tmp_path):
    install_base, _, env = install
    env = {**env, 'MUJOCO_GL': os.environ.get('MUJOCO_GL', 'egl')}
    env.pop('ROBOFOLLOW_SHARE', None)
    command = (
        f'"{sys.executable}" -m robofollow_ros eval --in-process --policy expert '
        '--tasks L0_pickup_yellow_block_1_left --record bag --out run --quiet && '
        f'"{sys.executable}" -m robofollow_ros score run/episodes/L0_pickup_yellow_block_1_left__r01'
    )
    result = subprocess.run(
        ['bash', '-c', f'. "{install_base}/setup.sh" && {command}'],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    record = json.loads(result.stdout.strip().splitlines()[-1])
    assert record['task_id'] == 'L0_pickup_yellow_block_1_left' and record['completion_ok'] is True


def test_the_installed_package_names_the_commit_it_was_built_from(install, tmp_path):
    # Under the real `ros2 launch` the nodes import this installed copy, which is no git checkout: run.json's
    # git_commit comes from what the build recorded (and never from the current directory's repository).
    install_base, _, env = install
    env = {key: value for key, value in env.items() if key != 'ROBOFOLLOW_GIT_COMMIT'}
    probe = 'from robofollow_ros.evaluation.status import git_commit; print(git_commit())'
    result = sourced(install_base, f'"{sys.executable}" -c "{probe}"', env, tmp_path)
    assert result.returncode == 0, result.stderr
    head = subprocess.run(['git', 'rev-parse', 'HEAD'], cwd=ROOT, capture_output=True, text=True, check=True)
    assert result.stdout.strip() == head.stdout.strip()
