#!/usr/bin/env bash
# Print the path of a Python >= 3.12 interpreter, or explain on stderr and exit 1.
# Order: python3.13 / python3.12 on PATH if they actually run (pyenv shims that fail are skipped),
# then the newest 3.12+ that pyenv knows, then python3 if it is new enough.
set -u
ok() { "$1" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 12) else 1)' >/dev/null 2>&1; }
for cand in python3.14 python3.13 python3.12; do
  if command -v "$cand" >/dev/null 2>&1 && ok "$cand"; then command -v "$cand"; exit 0; fi
done
if command -v pyenv >/dev/null 2>&1; then
  for v in $(pyenv versions --bare 2>/dev/null | grep -E '^3\.(1[2-9]|[2-9][0-9])(\.[0-9]+)?$' | sort -t. -k1,1nr -k2,2nr -k3,3nr); do
    p="$(pyenv prefix "$v" 2>/dev/null)/bin/python3"
    if [ -x "$p" ] && ok "$p"; then echo "$p"; exit 0; fi
  done
fi
if command -v python3 >/dev/null 2>&1 && ok python3; then command -v python3; exit 0; fi
echo "kalg needs Python >= 3.12 (egglog 14 ships wheels for 3.12+ only), and none was found." >&2
echo "Install one (e.g. 'pyenv install 3.12' or your distribution's python3.12) and run this again." >&2
exit 1
