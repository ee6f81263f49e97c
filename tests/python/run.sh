#!/usr/bin/env bash
# Runs one part of the python suite in the venv of scripts/python_env.sh.
# Usage: run.sh local|np2|np3|faults|packaging
#   local      single-process tests (a singleton engine): types, errors, DLPack, lifetimes
#   np2, np3   every collective at 2 ranks (hvdcrun) and 3 ranks (mpirun, else hvdcrun)
#   faults     a killed peer under hvdcrun -np 3
#   packaging  the wheel of `pip install .` and the pure package, each in a fresh venv
# The meson test passes HVDC_LIBRARY, HVDCRUN and HVDC_BUILD_ROOT.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
mode=$1
if ! venv=$("$root/scripts/python_env.sh"); then
  echo "python suite: cannot create the test venv (python3 -m venv and PyPI are needed)" >&2
  [ "${CI:-}" = true ] && exit 1
  exit 77
fi
py=$venv/bin/python
export PYTHONPATH=$root/bindings/python PYTHONDONTWRITEBYTECODE=1
pytest=("$py" -m pytest -q -p no:cacheprovider -rs --color=no)
case $mode in
  local) exec "${pytest[@]}" "$here/local" ;;
  np2) exec "$HVDCRUN" -np 2 "${pytest[@]}" "$here/ranks" ;;
  np3)
    if command -v mpirun >/dev/null; then
      exec bash "$root/tests/mpi/run_mpi.sh" 3 -x PYTHONPATH -x HVDC_LIBRARY "${pytest[@]}" \
        "$here/ranks"
    fi
    exec "$HVDCRUN" -np 3 "${pytest[@]}" "$here/ranks" ;;
  faults | packaging) exec "${pytest[@]}" "$here/drivers/test_$mode.py" ;;
  *) echo "run.sh: unknown mode '$mode'" >&2; exit 2 ;;
esac
