#!/usr/bin/env bash
# Runs the demo evaluation in simulation (expert and language-blind policies, one round of the L0-L3
# tasks of Scene 1), creating .venv first if needed. Results and reports go to runs/demo/.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
export MUJOCO_GL="${MUJOCO_GL:-egl}"
exec .venv/bin/robofollow demo "$@"
