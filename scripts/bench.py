"""Run the benchmark: a thin wrapper around `kalg bench` (see `kalg bench --help`).

    PYTHONPATH=src python scripts/bench.py [--ops all|basic|both] [--out DIR] [KERNEL ...]
"""

from __future__ import annotations

import sys

from kalg.cli import main

if __name__ == "__main__":
    sys.exit(main(["bench", *sys.argv[1:]]))
