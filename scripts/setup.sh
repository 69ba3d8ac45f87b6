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

stamp_of() {
    cat requirements.txt requirements-test.txt requirements-interfaces.txt setup.py scripts/setup.sh \
        scripts/build_interfaces.sh robofollow_interfaces/CMakeLists.txt robofollow_interfaces/package.xml \
        robofollow_interfaces/msg/*.msg robofollow_interfaces/srv/*.srv interbotix_xs_msgs/CMakeLists.txt \
        interbotix_xs_msgs/package.xml interbotix_xs_msgs/msg/*.msg | sha256sum | cut -d' ' -f1
}

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

ensure_bubblewrap() {
    # User policies run in a bubblewrap sandbox (robofollow_ros/policy/isolation/sandbox.py); without it they run
    # only with --trusted-policy.
    if command -v bwrap >/dev/null; then
        return
    fi
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
        echo "setup: installing bubblewrap for the policy sandbox"
        if ! { apt-get update -qq >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
                bubblewrap >/dev/null; }; then
            echo "setup: warning: could not install bubblewrap; custom policies will need --trusted-policy" >&2
        fi
    else
        echo "setup: warning: bubblewrap missing; install it (apt install bubblewrap) to sandbox custom policies" >&2
    fi
}

ensure_gl_libraries
ensure_browser
ensure_bubblewrap
bash scripts/setup_openpi_client.sh

if [ -f "$VENV/.robofollow-stamp" ] && [ "$(cat "$VENV/.robofollow-stamp")" = "$(stamp_of)" ]; then
    exit 0
fi

started=$SECONDS
step() { echo "setup: [$1/6] $2 ($((SECONDS - started)) s so far)"; }
log="$(mktemp)"
trap 'rm -f "$log"' EXIT
# pip runs with its normal output going to a log (shown only on failure); these lines say where it is.
pip_logged() {
    "$VENV/bin/python" -m pip "$@" --progress-bar off >"$log" 2>&1 || { tail -n 40 "$log"; echo "setup: pip failed (above)" >&2; exit 1; }
}
pip_counted() {
    # The big install: one line per 25 packages collected, then one line when pip starts unpacking them.
    "$VENV/bin/python" -m pip "$@" --progress-bar off 2>&1 | tee "$log" | awk '
        /^Collecting / { n++; if (n % 25 == 0) { printf "setup:       %d packages resolved (last: %s)\n", n, $2; fflush() } }
        /^Installing collected packages/ { printf "setup:       %d packages resolved; unpacking and installing them (the longest part)\n", n; fflush() }
    ' || { tail -n 40 "$log"; echo "setup: pip failed (above)" >&2; exit 1; }
}

step 1 "creating $VENV (~1 min on an idle machine with a fast index, up to ~8 min on a loaded one; 1.6 GB)"
"$PYTHON" -m venv "$VENV"
step 2 "upgrading pip, setuptools and wheel"
pip_logged install --upgrade pip 'setuptools>=70,<80' wheel
step 3 "installing ROS 2 Kilted wheels, MuJoCo, OpenCV, PyAV, Ray and the test tools (requirements*.txt)"
pip_counted install -r requirements.txt -r requirements-test.txt -r requirements-interfaces.txt
step 4 "installing robofollow_ros in editable mode"
pip_logged install --no-deps --no-build-isolation -e .
step 5 "building the robofollow_interfaces and interbotix_xs_msgs messages into $VENV with cmake (~1 min idle, up to ~4 min loaded)"
bash scripts/build_interfaces.sh "$VENV"
step 6 "checking that everything imports"
"$VENV/bin/python" -c 'import rclpy, mujoco, rosbags, cv2, transforms3d, h5py, pyarrow, av, gymnasium, robofollow_interfaces.msg, interbotix_xs_msgs.msg, robofollow_ros'
stamp_of > "$VENV/.robofollow-stamp"
echo "setup: ready ($VENV) in $((SECONDS - started)) s"
