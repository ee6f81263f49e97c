#!/usr/bin/env bash
# Runs a Python check of the trainer's Python twin in the venv of scripts/python_env.sh (numpy
# lives there), with the hvdc package from bindings/python. The meson test passes HVDC_LIBRARY.
# Usage: run_python_trainer.sh SCRIPT ARGS...
#   e.g. run_python_trainer.sh run_trainer.py python-digits-mlp-np2 train.py hvdcrun
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
if ! venv=$("$root/scripts/python_env.sh"); then
  echo "trainer suite: cannot create the test venv (python3 -m venv and PyPI are needed)" >&2
  [ "${CI:-}" = true ] && exit 1
  exit 77
fi
export PYTHONPATH=$root/bindings/python PYTHONDONTWRITEBYTECODE=1
exec "$venv/bin/python" "$@"
