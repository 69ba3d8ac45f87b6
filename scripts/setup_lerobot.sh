#!/usr/bin/env bash
# Creates .venv-lerobot with LeRobot 0.4.4 (and its CUDA build of torch: ~8 GB, 7 min here), apart from .venv
# because LeRobot pins opencv-python-headless < 4.13 and av < 16 while robofollow_ros uses OpenCV 5 and PyAV >= 16.
# LeRobot's default video decoder, torchcodec, loads the system's FFmpeg shared libraries (any of FFmpeg 4-8), so
# they are installed too (Debian/Ubuntu as root: the distribution's `ffmpeg`, 79 packages on Debian 12); without
# them pass video_backend='pyav' (see docs/data.md). Safe to run again.
# Then: ROBOFOLLOW_LEROBOT_PYTHON=.venv-lerobot/bin/python scripts/test.sh test/test_data_lerobot.py, and
# robofollow eval --policy lerobot --policy-kwargs '{"path": ".../pretrained_model"}' (docs/policies.md).
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-python3}"
VENV="${LEROBOT_VENV:-.venv-lerobot}"

ensure_ffmpeg_libraries() {
    if ldconfig -p 2>/dev/null | grep -q 'libavdevice\.so\.'; then
        return
    fi
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
        echo "setup_lerobot: installing FFmpeg's shared libraries (ffmpeg) for LeRobot's torchcodec decoder"
        if ! { apt-get update -qq >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
                --no-install-recommends ffmpeg >/dev/null; }; then
            echo "setup_lerobot: warning: could not install ffmpeg; use video_backend='pyav' with LeRobot" >&2
        fi
    else
        echo "setup_lerobot: warning: FFmpeg's shared libraries are missing; install ffmpeg (or libavdevice and" \
            "friends) or use video_backend='pyav' with LeRobot" >&2
    fi
}

ensure_ffmpeg_libraries
if ! "$VENV/bin/python" -c 'import lerobot' 2>/dev/null; then
    echo "setup_lerobot: creating $VENV (lerobot 0.4.4 with torch: ~8 GB, several minutes)"
    "$PYTHON" -m venv "$VENV"
    "$VENV/bin/python" -m pip install -q --upgrade pip
    "$VENV/bin/python" -m pip install -q 'lerobot==0.4.4'
fi
if ! "$VENV/bin/python" -c 'import grpc, lerobot.async_inference.policy_server' 2>/dev/null; then
    # --policy lerobot-async speaks LeRobot's async inference gRPC wire: LeRobot's async extra (grpcio, protobuf).
    "$VENV/bin/python" -m pip install -q 'lerobot[async]==0.4.4'
fi
if ! "$VENV/bin/python" -c 'import msgpack' 2>/dev/null; then
    # --policy lerobot runs robofollow's policy host under this interpreter: its wire needs msgpack.
    "$VENV/bin/python" -m pip install -q 'msgpack>=1.0.5'
fi
"$VENV/bin/python" -c 'import lerobot; print("lerobot", lerobot.__version__, "in '"$VENV"'")'
if "$VENV/bin/python" -c 'import torchcodec.decoders' 2>/dev/null; then
    echo "setup_lerobot: torchcodec (LeRobot's default video backend) loads"
else
    echo "setup_lerobot: warning: torchcodec does not load; use video_backend='pyav'" >&2
fi
