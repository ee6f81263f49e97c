#!/usr/bin/env bash
# The whole test suite from a fresh Debian machine: installs what is missing, builds, runs every
# suite, and ends with one line "hvdc tests: N passed, M failed, K skipped".
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
# the python suite's venv (numpy, pytest, meson-python, ...) from PyPI, created once
scripts/python_env.sh >/dev/null
scripts/build.sh
status=0
meson test -C build --print-errorlogs --num-processes 2 || status=$?
scripts/check_no_ucx.sh || status=1
scripts/sanitizers.sh || status=1
scripts/fuzz.sh 60 || status=1
python3 scripts/summarize_tests.py build/meson-logs/testlog.json || status=1
exit $status
