#!/usr/bin/env bash
# Builds the robofollow_interfaces package (messages and services of the graph) with plain cmake from the ROS 2
# Kilted wheels and installs it into the venv prefix, so `import robofollow_interfaces.msg` works there with no
# sourcing. Called by scripts/setup.sh; safe to run again (an unchanged package is not rebuilt).
# Usage: scripts/build_interfaces.sh [VENV]   (default .venv)
set -euo pipefail
cd "$(dirname "$0")/.."

VENV="$(cd "${1:-${VENV:-.venv}}" && pwd -P)"
PY="$VENV/bin/python"
SOURCE=robofollow_interfaces
stamp_file="$VENV/.robofollow-interfaces-stamp"
stamp="$(cat "$SOURCE"/CMakeLists.txt "$SOURCE"/package.xml "$SOURCE"/msg/*.msg "$SOURCE"/srv/*.srv "$0" | sha256sum | cut -d' ' -f1)"
if [ -f "$stamp_file" ] && [ "$(cat "$stamp_file")" = "$stamp" ] \
        && "$PY" -c 'import robofollow_interfaces.msg, robofollow_interfaces.srv' 2>/dev/null; then
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
BUILD="$(mktemp -d)"
log="$BUILD.log"
trap 'rm -rf "$BUILD" "$log"' EXIT
{
    cmake -S "$SOURCE" -B "$BUILD" -DCMAKE_INSTALL_PREFIX="$VENV" -DBUILD_TESTING=OFF \
        -DPython3_EXECUTABLE="$PY" -DCMAKE_BUILD_TYPE=Release \
        && cmake --build "$BUILD" -j "$(nproc)" \
        && cmake --install "$BUILD"
} >"$log" 2>&1 || { tail -n 60 "$log"; echo "build_interfaces: cmake failed (above)" >&2; exit 1; }
"$PY" -c 'import robofollow_interfaces.msg, robofollow_interfaces.srv'
echo "$stamp" > "$stamp_file"
