#!/usr/bin/env bash
# Creates .venv-lerobot with LeRobot 0.4.4 (and its CUDA build of torch: ~8 GB, a few minutes), apart from .venv
# because LeRobot pins opencv-python-headless < 4.13 and av < 16 while robofollow_ros uses OpenCV 5 and PyAV >= 16.
# Then: ROBOFOLLOW_LEROBOT_PYTHON=.venv-lerobot/bin/python scripts/test.sh test/test_data_lerobot.py
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-python3}"
"$PYTHON" -m venv .venv-lerobot
.venv-lerobot/bin/python -m pip install -q --upgrade pip
.venv-lerobot/bin/python -m pip install -q 'lerobot==0.4.4'
.venv-lerobot/bin/python -c 'import lerobot; print("lerobot", lerobot.__version__, "in .venv-lerobot")'
