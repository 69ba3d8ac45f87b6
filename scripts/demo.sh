#!/usr/bin/env bash
# Runs the demo evaluation in simulation over the ROS 2 node graph (sim, policy bridge, referee, recorder and
# evaluator nodes; pass --in-process to run without ROS): the expert and the language-blind policy on one task
# per scene and level, creating .venv first if needed. Results, reports and episode bags go to runs/demo/.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
export MUJOCO_GL="${MUJOCO_GL:-egl}"
exec .venv/bin/robofollow demo "$@"
