#!/usr/bin/env bash
# Builds the robofollow_interfaces package (messages and services of the graph) and interbotix_xs_msgs (the two
# Interbotix command messages the fake hardware reads; Interbotix ships no wheel) with plain cmake from the ROS 2
# Kilted wheels and installs them into the venv prefix, so `import robofollow_interfaces.msg` works there with no
# sourcing. Called by scripts/setup.sh; safe to run again (an unchanged package is not rebuilt: one stamp each).
# Usage: scripts/build_interfaces.sh [VENV]   (default .venv)
set -euo pipefail
cd "$(dirname "$0")/.."

VENV="$(cd "${1:-${VENV:-.venv}}" && pwd -P)"
PY="$VENV/bin/python"

# The package's sources and this script, hashed: an unchanged package that imports is not rebuilt.
package_stamp() {
    cat "$1"/CMakeLists.txt "$1"/package.xml "$1"/msg/*.msg $(ls "$1"/srv/*.srv 2>/dev/null) "$0" | sha256sum | cut -d' ' -f1
}
up_to_date() {  # package, import check
    [ -f "$VENV/.$1-stamp" ] && [ "$(cat "$VENV/.$1-stamp")" = "$(package_stamp "$1")" ] && "$PY" -c "$2" 2>/dev/null
}
ROBOFOLLOW_IMPORT='import robofollow_interfaces.msg, robofollow_interfaces.srv'
INTERBOTIX_IMPORT='import interbotix_xs_msgs.msg, interbotix_xs_msgs.srv'
if up_to_date robofollow_interfaces "$ROBOFOLLOW_IMPORT" && up_to_date interbotix_xs_msgs "$INTERBOTIX_IMPORT"; then
    exit 0
fi

# The wheels' rosidl_generator_py export files name the Python and numpy include folders of the machine the wheels
# were built on (/opt/python/cp311-cp311/...): point them at this interpreter's, or the generated C extension
# does not compile. Done on every build because a further msg wheel brings its own copy.
"$PY" - <<'PY'
import numpy, pathlib, re, sys, sysconfig
prefix = pathlib.Path(sys.prefix)
python_include, numpy_include = sysconfig.get_paths()['include'], numpy.get_include()
for path in (prefix / 'share').glob('*/cmake/*__rosidl_generator_pyExport.cmake'):
    text = path.read_text()
    fixed = re.sub(r'/opt/python/[^;"]*?/include/python3\.\d+', python_include, text)
    fixed = re.sub(r'/opt/python/[^;"]*?/numpy/(_core|core)/include', numpy_include, fixed)
    if fixed != text:
        path.write_text(fixed)
PY

export AMENT_PREFIX_PATH="$VENV${AMENT_PREFIX_PATH:+:$AMENT_PREFIX_PATH}"
export CMAKE_PREFIX_PATH="$VENV${CMAKE_PREFIX_PATH:+:$CMAKE_PREFIX_PATH}"
export PATH="$VENV/bin:$PATH"

build_package() {  # package, import check
    up_to_date "$1" "$2" && return 0
    local build log
    build="$(mktemp -d)"
    log="$build.log"
    {
        cmake -S "$1" -B "$build" -DCMAKE_INSTALL_PREFIX="$VENV" -DBUILD_TESTING=OFF \
            -DPython3_EXECUTABLE="$PY" -DCMAKE_BUILD_TYPE=Release \
            && cmake --build "$build" -j "$(nproc)" \
            && cmake --install "$build"
    } >"$log" 2>&1 || { tail -n 60 "$log"; rm -rf "$build" "$log"; echo "build_interfaces: cmake of $1 failed (above)" >&2; exit 1; }
    rm -rf "$build" "$log"
    "$PY" -c "$2"
    package_stamp "$1" > "$VENV/.$1-stamp"
}
build_package robofollow_interfaces "$ROBOFOLLOW_IMPORT"
build_package interbotix_xs_msgs "$INTERBOTIX_IMPORT"
