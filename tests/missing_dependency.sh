#!/usr/bin/env bash
# Stands in for a test whose dependency was missing when the build was configured, or ends a test
# script that finds one missing when it runs: the test counts as skipped (exit 77) with its
# reason instead of vanishing from the count. Under CI=true every dependency must be present:
# the missing one is a failure.
# Usage: missing_dependency.sh REASON...
reason="$*"
if [ "${CI:-}" = "true" ]; then
  echo "FAIL: $reason (CI=true needs every dependency)" >&2
  exit 1
fi
echo "SKIP: $reason" >&2
exit 77
