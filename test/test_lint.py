"""The code base passes ruff (configured in pyproject.toml)."""

import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def ruff() -> str:
    candidate = Path(sys.executable).with_name('ruff')
    return str(candidate) if candidate.exists() else (shutil.which('ruff') or 'ruff')


def test_ruff_check_passes():
    result = subprocess.run([ruff(), 'check', '--no-cache', str(ROOT)], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr
