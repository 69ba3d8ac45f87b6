"""A plain, non-editable ``pip install`` finds config/ and urdf/ (share/robofollow) and runs outside the sources.

The fresh-venv test installs the package with its dependencies the way a user does (``pip install <source>``, with
pip's own configuration: an index or a local wheelhouse) into an empty venv and evaluates on the default robot:
about 40-60 s here (most of it pip unpacking ~1 GB of wheels), and a network or wheel cache is needed.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
TASK = 'L0_pickup_yellow_block_1_left'
IGNORED = ('.git', '.venv*', 'build', 'install', 'log', 'runs', '*.egg-info', '__pycache__', '.pytest_cache')
SHARED = ('config/referee.yaml', 'config/graph_sim.yaml', 'config/fastdds_shm.xml', 'urdf/robofollow_cell.urdf')


def copy_sources(build: Path) -> Path:
    source = build / 'source'
    shutil.copytree(ROOT, source, ignore=shutil.ignore_patterns(*IGNORED))
    return source


@pytest.fixture(scope='module')
def prefix(tmp_path_factory) -> Path:
    target = tmp_path_factory.mktemp('pip') / 'prefix'
    build = tmp_path_factory.mktemp('pip_build')
    source = copy_sources(build)
    # --ignore-installed: without it pip uninstalls the (editable) robofollow of the running venv first.
    command = [
        *(sys.executable, '-m', 'pip', 'install', '--no-deps', '--no-build-isolation', '--ignore-installed'),
        *('--prefix', str(target)),
    ]
    result = subprocess.run(
        [*command, str(source)],
        cwd=build,
        env={**os.environ, 'PIP_NO_INPUT': '1', 'TMPDIR': str(build)},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    still_here = subprocess.run([sys.executable, '-c', 'import robofollow_ros'], cwd=build, capture_output=True)
    assert still_here.returncode == 0, "installing into a prefix removed the running environment's robofollow_ros"
    return target


def test_installed_share_folder_holds_config_and_urdf(prefix) -> None:
    share = prefix / 'share' / 'robofollow'
    for relative in (
        'config/referee.yaml',
        'config/graph_sim.yaml',
        'config/graph_real.yaml',
        'config/fastdds_shm.xml',
        'urdf/robofollow_cell.urdf',
    ):
        assert (share / relative).read_bytes() == (ROOT / relative).read_bytes(), relative
    assert (share / 'launch' / 'sim.launch.py').is_file() and (share / 'launch' / 'real.launch.py').is_file()


def test_pip_installed_package_evaluates_and_scores_outside_the_source_tree(prefix, tmp_path) -> None:
    site = prefix / 'lib' / f'python{sys.version_info.major}.{sys.version_info.minor}' / 'site-packages'
    env = {key: value for key, value in os.environ.items() if key not in ('PYTHONPATH', 'ROBOFOLLOW_SHARE')}
    env.update(PYTHONPATH=str(site), MUJOCO_GL=os.environ.get('MUJOCO_GL', 'egl'))
    python = [sys.executable, '-m', 'robofollow_ros']
    where = subprocess.run(
        [sys.executable, '-c', 'import robofollow_ros; print(robofollow_ros.__file__)'],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    assert Path(where.stdout.strip()).is_relative_to(site)
    run = [*python, 'eval', '--in-process', '--policy', 'expert', '--tasks', TASK, '--record', 'bag', '--out', 'run']
    result = subprocess.run([*run, '--quiet'], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=240)
    assert result.returncode == 0, result.stderr[-3000:]
    bag = tmp_path / 'run' / 'episodes' / f'{TASK}__r01'
    score = subprocess.run([*python, 'score', str(bag)], cwd=tmp_path, env=env, capture_output=True, text=True)
    assert score.returncode == 0, score.stderr[-3000:]
    record = json.loads(score.stdout)
    assert record['task_id'] == TASK and record['completion_ok'] is True


@pytest.fixture(scope='module')
def fresh_venv(tmp_path_factory) -> Path:
    """An empty venv into which ``pip install <source>`` put robofollow and whatever it declares it needs."""
    build = tmp_path_factory.mktemp('fresh')
    source = copy_sources(build)
    venv = build / 'venv'
    subprocess.run([sys.executable, '-m', 'venv', str(venv)], check=True, timeout=120)
    result = subprocess.run(
        [str(venv / 'bin' / 'python'), '-m', 'pip', 'install', '--quiet', '--progress-bar', 'off', str(source)],
        cwd=build,
        env={**clean_env(), 'PIP_NO_INPUT': '1', 'TMPDIR': str(build)},
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    shutil.rmtree(source)
    return venv


def clean_env() -> dict[str, str]:
    """This process's environment without what points at the checkout or the shared venv."""
    dropped = ('PYTHONPATH', 'ROBOFOLLOW_SHARE', 'VIRTUAL_ENV', 'PYTHONHOME')
    return {key: value for key, value in os.environ.items() if key not in dropped}


@pytest.mark.slow
def test_pip_install_into_a_fresh_venv_evaluates_the_default_robot(fresh_venv, tmp_path) -> None:
    env = {**clean_env(), 'MUJOCO_GL': os.environ.get('MUJOCO_GL', 'egl')}
    python = str(fresh_venv / 'bin' / 'python')
    # The ViperX meshes come with the package (and gym-aloha's license beside them), not from gym-aloha.
    absent = subprocess.run([python, '-c', 'import gym_aloha'], cwd=tmp_path, env=env, capture_output=True)
    assert absent.returncode != 0
    meshes = fresh_venv / 'share' / 'robofollow' / 'meshes' / 'vx300s'
    assert (meshes / 'LICENSE').is_file() and len(list(meshes.glob('*.stl'))) == 11
    assert len(list((meshes / 'light').glob('*.stl'))) == 11, 'the cameras draw these (tools/make_light_meshes.py)'
    piper = fresh_venv / 'share' / 'robofollow' / 'urdf'
    assert (piper / 'piper_cell.urdf').is_file() and (piper / 'piper' / 'LICENSE').is_file()
    robofollow = str(fresh_venv / 'bin' / 'robofollow')
    run = [robofollow, 'eval', '--in-process', '--policy', 'expert', '--tasks', TASK, '--record', 'bag', '--out', 'run']
    result = subprocess.run([*run, '--quiet'], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    (record,) = [json.loads(line) for line in (tmp_path / 'run' / 'results.jsonl').read_text().splitlines()]
    assert record['task_id'] == TASK and record['robot'] == 'aloha' and record['completion_ok'] is True
    score = subprocess.run(
        [robofollow, 'score', str(tmp_path / 'run' / 'episodes' / f'{TASK}__r01')],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
    )
    assert score.returncode == 0, score.stderr[-3000:]
    assert json.loads(score.stdout)['completion_ok'] is True
