#!/usr/bin/env bash
# Runs the whole test suite (ruff included) in .venv, creating .venv first if needed.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
export MUJOCO_GL="${MUJOCO_GL:-egl}"
exec .venv/bin/python -m pytest -q "$@"
