#!/usr/bin/env bash
# kalg's developer entry point. From a fresh clone:
#   bash scripts/dev.sh demo   # make .venv (Python >= 3.12), install kalg, compile an example
#   bash scripts/dev.sh test   # make .venv if needed, then run lint and the whole test suite
#                              # (one pytest process per core; KALG_TEST_JOBS=1 for one)
# Anything after the verb is passed on (to kalg for `demo`, to pytest for `test`).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
venv="${KALG_VENV:-$root/.venv}"

ensure_venv() {
  # Rebuild when pyproject.toml changed since the last install, so a pull never runs stale deps.
  local stamp="$venv/.kalg-installed"
  if [ -x "$venv/bin/python" ] && [ -f "$stamp" ] && [ "$stamp" -nt pyproject.toml ]; then return; fi
  local py; py="$(bash scripts/find-python.sh)" || exit 1
  echo "kalg: creating $venv with $("$py" --version 2>&1) ($py)" >&2
  "$py" -m venv --clear "$venv"
  "$venv/bin/python" -m pip install --quiet --upgrade pip >&2
  "$venv/bin/python" -m pip install --quiet -e ".[test,plots]" >&2
  touch "$stamp"
}

verb="${1:-}"; shift || true
case "$verb" in
  demo)
    ensure_venv
    exec "$venv/bin/kalg" optimize examples/gauss3.kalg --stats "$@" ;;
  test)
    ensure_venv
    "$venv/bin/ruff" check src tests
    # One test process per core (pytest-xdist; KALG_TEST_JOBS overrides): on the 2-core
    # machines here the suite takes about 8 minutes instead of 15.
    exec "$venv/bin/python" -m pytest -n "${KALG_TEST_JOBS:-auto}" "$@" ;;
  *)
    echo "usage: bash scripts/dev.sh demo|test [args...]" >&2; exit 2 ;;
esac
