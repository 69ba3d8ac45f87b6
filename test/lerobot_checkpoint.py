"""A LeRobot checkpoint trained here, for the tests of ``--policy lerobot`` and ``--policy lerobot-async``: one
training per test session (``conftest.py`` registers the fixture), skipped where no Python has LeRobot."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from robofollow_ros.errors import PolicyError
from robofollow_ros.policy.interpreters import lerobot_python


def lerobot_interpreter() -> str:
    try:
        python = lerobot_python()
    except PolicyError as error:
        pytest.skip(str(error))
    found = subprocess.run([python, '-c', 'import lerobot'], capture_output=True, check=False)
    if found.returncode != 0:
        pytest.skip(f'{python} has no LeRobot')
    return python


@pytest.fixture(scope='session')
def checkpoint(tmp_path_factory) -> Path:
    """An ACT checkpoint trained two steps by ``lerobot-train`` on two demonstrations exported here."""
    python = lerobot_interpreter()
    folder = tmp_path_factory.mktemp('lerobot_loop')
    env = {**os.environ, 'MUJOCO_GL': os.environ.get('MUJOCO_GL', 'egl'), 'HF_HUB_OFFLINE': '1'}
    collect = [sys.executable, '-m', 'robofollow_ros', 'collect', '--labels', 'pickup_yellow_block_1_left']
    collect += ['--episodes', '2', '--image-size', '64x48', '--out', str(folder / 'demos'), '--format', 'lerobot']
    subprocess.run([*collect, '--quiet'], check=True, env=env, cwd=folder, timeout=600)
    train = [str(Path(python).parent / 'lerobot-train'), '--dataset.repo_id=robofollow/demos']
    train += [f'--dataset.root={folder / "demos" / "lerobot"}', '--policy.type=act', '--policy.device=cpu']
    train += ['--policy.push_to_hub=false', '--policy.pretrained_backbone_weights=null', '--policy.chunk_size=20']
    train += ['--policy.n_action_steps=20', '--policy.dim_model=64', '--policy.dim_feedforward=128']
    train += [f'--output_dir={folder / "train"}', '--steps=2', '--batch_size=2', '--save_freq=2']
    train += ['--wandb.enable=false', '--num_workers=0']
    done = subprocess.run(train, env=env, cwd=folder, timeout=900, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    return folder / 'train' / 'checkpoints' / '000002' / 'pretrained_model'
