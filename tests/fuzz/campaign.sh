#!/usr/bin/env bash
# A long fuzzing campaign (issue 14): N inputs per strategy (default 10000), under a memory limit,
# counts in the log. Usage: bash tests/fuzz/campaign.sh [N] > fuzz.log 2>&1
set -uo pipefail
cd "$(dirname "$0")/../.."
export PYTHONPATH="$PWD/src:$PWD" KALG_FUZZ_EXAMPLES="${1:-10000}"
ulimit -v $((4 * 1024 * 1024))  # 4 GiB address space
PY="${PYTHON:-python}"
exec nice "$PY" -m pytest -q -p no:randomly -p no:cacheprovider tests/fuzz \
  --hypothesis-show-statistics
