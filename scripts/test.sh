#!/usr/bin/env bash
# Runs the whole test suite (ruff included) in .venv, creating .venv first if needed, on two pytest-xdist
# workers (ROBOFOLLOW_TEST_WORKERS=0 runs it in one process; the second worker's graph tests use ROS domains 60-101).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
export MUJOCO_GL="${MUJOCO_GL:-egl}"
exec .venv/bin/python -m pytest -q -n "${ROBOFOLLOW_TEST_WORKERS:-2}" --dist loadgroup "$@"
