#!/usr/bin/env bash
# Creates (or brings up to date) .venv with ROS 2 Kilted wheels, MuJoCo, rosbags and the test tools,
# and installs robofollow_ros into it in editable mode. Safe to run again: it does nothing when
# requirements*.txt and setup.py have not changed since the last successful run.
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON="${PYTHON:-python3}"
VENV="${VENV:-.venv}"

"$PYTHON" - <<'PY'
import sys
if sys.version_info < (3, 10):
    sys.exit(f'robofollow_ros needs Python >= 3.10, found {sys.version.split()[0]}')
PY

stamp_of() { cat requirements.txt requirements-test.txt setup.py scripts/setup.sh | sha256sum | cut -d' ' -f1; }

ensure_gl_libraries() {
    # MuJoCo renders headless through EGL (Mesa llvmpipe); OSMesa is the fallback.
    if ldconfig -p 2>/dev/null | grep -q 'libEGL.so.1' && ldconfig -p | grep -q 'libOSMesa.so'; then
        return
    fi
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
        echo "setup: installing EGL/OSMesa libraries for headless rendering"
        if ! { apt-get update -qq >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
                libegl1 libegl-mesa0 libgl1-mesa-dri libopengl0 libosmesa6 >/dev/null; }; then
            echo "setup: warning: could not install the EGL/OSMesa libraries; rendering may fail" >&2
        fi
    else
        echo "setup: warning: EGL/OSMesa libraries missing; install libegl1 libegl-mesa0 libgl1-mesa-dri libosmesa6" >&2
    fi
}

ensure_browser() {
    # The HTML report test drives Debian's Chromium through chromedriver.
    if [ -x /usr/bin/chromium ] && [ -x /usr/bin/chromedriver ]; then
        return
    fi
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
        echo "setup: installing chromium and chromium-driver for the browser test"
        if ! { apt-get update -qq >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
                chromium chromium-driver >/dev/null; }; then
            echo "setup: warning: could not install chromium; the HTML report browser test will fail" >&2
        fi
    else
        echo "setup: warning: chromium missing; install chromium chromium-driver for the browser test" >&2
    fi
}

ensure_gl_libraries
ensure_browser
bash scripts/setup_openpi_client.sh

if [ -f "$VENV/.robofollow-stamp" ] && [ "$(cat "$VENV/.robofollow-stamp")" = "$(stamp_of)" ]; then
    exit 0
fi

echo "setup: creating $VENV (ROS 2 Kilted wheels, MuJoCo, rosbags, test tools)"
"$PYTHON" -m venv "$VENV"
"$VENV/bin/python" -m pip install -q --upgrade pip 'setuptools>=70,<80' wheel
"$VENV/bin/python" -m pip install -q -r requirements.txt -r requirements-test.txt
log="$(mktemp)"
"$VENV/bin/python" -m pip install -q --no-deps --no-build-isolation -e . >"$log" 2>&1 || { cat "$log"; exit 1; }
rm -f "$log"
"$VENV/bin/python" -c 'import rclpy, mujoco, rosbags, cv2, transforms3d, h5py, pyarrow, av, gymnasium, robofollow_ros'
stamp_of > "$VENV/.robofollow-stamp"
echo "setup: ready ($VENV)"
