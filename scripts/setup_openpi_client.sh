#!/usr/bin/env bash
# Creates .venv-openpi with the real openpi-client (it pins numpy<2, so it cannot share .venv), used by
# test/test_openpi_client_compat.py to prove that robofollow's openpi server speaks openpi's wire.
# Safe to run again: it does nothing once the pinned client imports.
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON="${PYTHON:-python3}"
VENV="${OPENPI_VENV:-.venv-openpi}"
CLIENT='openpi-client==0.1.2'

if [ -x "$VENV/bin/python" ] && [ "$(cat "$VENV/.robofollow-stamp" 2>/dev/null)" = "$CLIENT" ]; then
    exit 0
fi
echo "setup: creating $VENV ($CLIENT, for the openpi wire-compatibility test)"
rm -rf "$VENV"
"$PYTHON" -m venv "$VENV"
"$VENV/bin/python" -m pip install -q --upgrade pip
# openpi-client imports typing_extensions without declaring it.
"$VENV/bin/python" -m pip install -q "$CLIENT" typing-extensions
"$VENV/bin/python" -c 'import openpi_client.websocket_client_policy, openpi_client.image_tools'
echo "$CLIENT" > "$VENV/.robofollow-stamp"
