"""The code base passes ruff (configured in pyproject.toml), keeps its import layers (import-linter contracts in
pyproject.toml, docs/architecture.md) and type-checks with mypy (pyproject.toml); a wrong-way import or a type
error in a copy of the package makes the checks fail."""

import os
import shutil
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = 'robofollow_ros'


def tool(name: str) -> str:
    candidate = Path(sys.executable).with_name(name)
    return str(candidate) if candidate.exists() else (shutil.which(name) or name)


def ruff() -> str:
    return tool('ruff')


def run_in(folder: Path, command: list[str]) -> subprocess.CompletedProcess[str]:
    """``command`` in ``folder`` with that folder first on the import path (a copy is checked, not the install)."""
    env = {**os.environ, 'PYTHONPATH': str(folder)}
    return subprocess.run(command, cwd=folder, capture_output=True, text=True, env=env, check=False)


def lint_imports(folder: Path) -> subprocess.CompletedProcess[str]:
    return run_in(folder, [tool('lint-imports'), '--no-cache', '--config', str(folder / 'pyproject.toml')])


def mypy(folder: Path, cache: Path | None = None) -> subprocess.CompletedProcess[str]:
    """mypy as configured in ``folder``'s pyproject.toml (the package, strict for benchmark and referee), its own
    crashes with a traceback."""
    where = [] if cache is None else ['--cache-dir', str(cache)]
    return run_in(folder, [tool('mypy'), '--show-traceback', *where])


def copy_of_the_package(tmp_path: Path) -> Path:
    """The package and its pyproject.toml in a fresh folder, to break on purpose (file times kept, so that a copy
    of mypy's cache stays valid for every module not changed)."""
    folder = tmp_path / 'copy'
    shutil.copytree(ROOT / PACKAGE, folder / PACKAGE, ignore=shutil.ignore_patterns('__pycache__'))
    shutil.copy2(ROOT / 'pyproject.toml', folder / 'pyproject.toml')
    return folder


@pytest.fixture(scope='module')
def mypy_result(tmp_path_factory: pytest.TempPathFactory) -> subprocess.CompletedProcess[str]:
    """mypy on the package with its own cache (``.mypy_cache``, ignored by git): ~15 s from nothing, ~1 s after.

    One clean-clone suite on two workers ended in mypy's ``INTERNAL ERROR`` (no traceback then; a type error is
    reported, never a crash): a crash is run again once with a fresh cache, its traceback kept as a warning."""
    result = mypy(ROOT)
    if result.returncode == 2 and 'INTERNAL ERROR' in result.stderr:
        warnings.warn(f'mypy crashed, run again with a fresh cache: {result.stderr[-3000:]}', stacklevel=1)
        fresh = tmp_path_factory.mktemp('mypy_cache')
        result = mypy(ROOT, fresh)
        shutil.rmtree(ROOT / '.mypy_cache', ignore_errors=True)
        shutil.copytree(fresh, ROOT / '.mypy_cache')
    return result


def append(path: Path, text: str) -> None:
    path.write_text(path.read_text(encoding='utf-8') + text, encoding='utf-8')


def test_ruff_check_passes():
    result = subprocess.run([ruff(), 'check', '--no-cache', str(ROOT)], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_import_layers_hold():
    result = lint_imports(ROOT)
    assert result.returncode == 0, result.stdout + result.stderr
    assert 'broken' in result.stdout and ' 0 broken' in result.stdout, result.stdout


@pytest.mark.parametrize(
    ('module', 'line', 'broken'),
    [
        (
            'referee/score.py',
            'from robofollow_ros.sim.env import CellEnv  # noqa: E402, F401\n',
            'robofollow_ros.referee is not allowed to import robofollow_ros.sim',
        ),
        (
            'bags/reader.py',
            'def _late() -> None:\n    from robofollow_ros.ros import qos  # noqa: F401\n',
            'robofollow_ros.bags is not allowed to import robofollow_ros.ros',
        ),
        (
            'nodes/referee.py',
            'from robofollow_ros.nodes.sim import SimNode  # noqa: E402, F401\n',
            'robofollow_ros.nodes.referee is not allowed to import robofollow_ros.nodes.sim',
        ),
    ],
)
def test_a_wrong_way_import_fails_the_layer_lint(tmp_path: Path, module: str, line: str, broken: str):
    folder = copy_of_the_package(tmp_path)
    assert lint_imports(folder).returncode == 0, 'the unchanged copy must pass'
    append(folder / PACKAGE / module, '\n' + line)
    result = lint_imports(folder)
    assert result.returncode != 0 and broken in result.stdout, result.stdout + result.stderr


def test_rclpy_below_the_ros_layers_fails_the_layer_lint(tmp_path: Path):
    folder = copy_of_the_package(tmp_path)
    append(folder / PACKAGE / 'bags' / 'writer.py', '\ndef _late() -> None:\n    import rclpy  # noqa: F401\n')
    result = lint_imports(folder)
    assert result.returncode != 0, result.stdout
    assert 'robofollow_ros.bags is not allowed to import rclpy' in result.stdout, result.stdout


def test_mypy_passes(mypy_result: subprocess.CompletedProcess[str]):
    result = mypy_result
    assert result.returncode == 0 and 'Success: no issues found' in result.stdout, result.stdout + result.stderr


@pytest.mark.parametrize(
    ('module', 'code', 'error'),
    [
        (
            'sim/physics.py',
            "\n\ndef _late_arm() -> Arm:\n    return 'middle'\n",
            "Incompatible return value type (got \"Literal['middle']\", expected \"Literal['left', 'right']\")",
        ),
        (
            'referee/score.py',
            '\n\ndef _untyped(value):\n    return value\n',
            'Function is missing a type annotation',
        ),
    ],
    ids=['wrong-literal', 'untyped-def-in-strict-referee'],
)
def test_a_type_error_fails_mypy(
    tmp_path: Path, mypy_result: subprocess.CompletedProcess[str], module: str, code: str, error: str
):
    assert mypy_result.returncode == 0, 'the unchanged package must pass'
    folder = copy_of_the_package(tmp_path)
    cache = tmp_path / 'cache'
    # The other worker's mypy may be writing the same cache: its SQLite journals come and go mid-copy (a clean-clone
    # run failed on a vanished cache.*.db-wal); the databases alone hold the last checkpointed, consistent cache.
    shutil.copytree(ROOT / '.mypy_cache', cache, ignore=shutil.ignore_patterns('*.db-wal', '*.db-shm', '*.db-journal'))
    append(folder / PACKAGE / module, code)
    result = mypy(folder, cache)
    assert result.returncode != 0 and error in result.stdout, result.stdout + result.stderr
