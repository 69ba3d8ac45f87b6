"""``--policy-python``: a sandboxed policy runs under the Python whose environment holds its dependencies and its
module (a user's own venv), not under robofollow's; policies that run in this process refuse the option."""

from __future__ import annotations

import json
import subprocess
import sys
import sysconfig
import textwrap
from pathlib import Path

import pytest
from graph_helpers import read_records

from robofollow_ros.errors import PolicyError
from robofollow_ros.policy.factory import resolve_policy
from robofollow_ros.policy.isolation.sandbox import sandbox_problem

TASK = 'L0_pickup_yellow_block_2'
MODULE = 'policy_only_in_its_own_env'

POLICY = '''
import sys

import numpy as np


class Holding:
    """Holds the observed state; refuses to be built under any other Python than the one it was written for."""

    needs_images = False

    def __init__(self, prefix: str) -> None:
        if sys.prefix != prefix:
            raise RuntimeError(f'built under {sys.prefix}, not {prefix}')

    def reset(self) -> None:
        pass

    def set_instruction(self, text: str) -> None:
        pass

    def predict(self, observation):
        return np.tile(np.asarray(observation.state, dtype=np.float32), (3, 1))
'''


@pytest.fixture(scope='module')
def own_environment(tmp_path_factory) -> Path:
    """A venv of its own (under /tmp, which the sandbox covers) whose site-packages hold the policy's module, and
    reach robofollow's dependencies (numpy) through a ``.pth`` file: its Python, not this one."""
    folder = tmp_path_factory.mktemp('user') / 'env'
    subprocess.run([sys.executable, '-m', 'venv', '--without-pip', str(folder)], check=True, timeout=120)
    python = folder / 'bin' / 'python'
    site = subprocess.run(
        [str(python), '-c', 'import sysconfig; print(sysconfig.get_path("purelib"))'],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    Path(site, f'{MODULE}.py').write_text(textwrap.dedent(POLICY), encoding='utf-8')
    Path(site, 'robofollow_dependencies.pth').write_text(sysconfig.get_path('purelib') + '\n', encoding='utf-8')
    return python


def test_a_builtin_or_trusted_policy_refuses_another_python() -> None:
    with pytest.raises(PolicyError, match=r'^--policy-python is for a policy in its own process: built-in'):
        resolve_policy('blind', python=sys.executable)
    with pytest.raises(PolicyError, match=r'--trusted-policy runs it in this one'):
        resolve_policy('policy_doubles:HoldingPolicy', trusted=True, python=sys.executable)


def test_a_python_that_is_not_there_is_refused_in_one_line(tmp_path) -> None:
    missing = tmp_path / 'bin' / 'python'
    with pytest.raises(PolicyError, match=rf'^--policy-python {missing} is not a Python interpreter \(no such file\)$'):
        resolve_policy('policy_doubles:HoldingPolicy', python=str(missing))
    plain = tmp_path / 'python'
    plain.write_text('', encoding='utf-8')
    with pytest.raises(PolicyError, match=r'\(not executable\)$'):
        resolve_policy('policy_doubles:HoldingPolicy', python=str(plain))


def test_a_module_of_the_other_environment_is_looked_for_there_only(own_environment) -> None:
    with pytest.raises(PolicyError, match=MODULE):
        resolve_policy(f'{MODULE}:Holding')
    factory = resolve_policy(f'{MODULE}:Holding', python=str(own_environment))
    assert factory.interpreter == str(own_environment)
    assert factory.readable == (str(own_environment.parent.parent),)
    assert factory.isolation == 'sandbox'


@pytest.mark.skipif(sandbox_problem() is not None, reason=str(sandbox_problem()))
def test_eval_runs_the_policy_under_its_own_python_in_the_sandbox(tmp_path, own_environment) -> None:
    from robofollow_ros.cli import main

    prefix = str(own_environment.parent.parent)
    out = tmp_path / 'run'
    args = ['eval', '--in-process', '--policy', f'{MODULE}:Holding', '--tasks', TASK, '--quiet', '--out', str(out)]
    args += ['--policy-kwargs', json.dumps({'prefix': prefix}), '--max-queries', '2']
    assert main([*args, '--policy-python', str(own_environment)]) == 0
    [record] = read_records(out / 'results.jsonl')
    assert record['isolation'] == 'sandbox'
    assert record['policy_error'] is None, record['policy_error']
    assert record['queries'] == 2

    wrong = tmp_path / 'wrong'
    args = ['eval', '--in-process', '--policy', f'{MODULE}:Holding', '--tasks', TASK, '--quiet', '--out', str(wrong)]
    args += ['--policy-kwargs', json.dumps({'prefix': sys.prefix}), '--policy-python', str(own_environment)]
    assert main(args) == 0
    [record] = read_records(wrong / 'results.jsonl')
    assert f'built under {prefix}, not {sys.prefix}' in record['policy_error']
