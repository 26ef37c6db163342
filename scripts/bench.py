"""Print the benchmark table: kalg's verified instruction counts beside Cain's and AUKE's.

    PYTHONPATH=src python scripts/bench.py [--ops all|basic|both] [KERNEL ...]

Kernels are examples/NAME.kalg; the anchors come from tests/data/cain/kernels.json (a copy of
../shared/bench/kernels.json). Compile time is wall time of one compile_file call.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from kalg.pipeline import Settings, compile_file

ROOT = Path(__file__).resolve().parents[1]
ANCHORS = ROOT / "tests" / "data" / "cain" / "kernels.json"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("kernels", nargs="*")
    parser.add_argument("--ops", choices=["all", "basic", "both"], default="both")
    args = parser.parse_args()
    bench = json.loads(ANCHORS.read_text())["kernels"]
    names = args.kernels or [k["name"] for k in bench]
    anchors = {k["name"]: k["anchors"] for k in bench}
    op_sets = ["all", "basic"] if args.ops == "both" else [args.ops]
    print("| kernel | ops | kalg | bus steps | registers | compile s | Cain all | Cain basic "
          "| AUKE basic |")
    print("|---|---|---|---|---|---|---|---|---|")
    for name in names:
        for ops in op_sets:
            start = time.perf_counter()
            result = compile_file(ROOT / "examples" / f"{name}.kalg", Settings(ops=ops))
            seconds = time.perf_counter() - start
            a = anchors.get(name, {})
            s = result.stats
            print(f"| {name} | {ops} | {s['instructions']} | {s['bus steps']} "
                  f"| {s['registers'].split()[0]} | {seconds:.1f} | {a.get('cain_all', '')} "
                  f"| {a.get('cain_basic', '')} | {a.get('auke_basic', '')} |", flush=True)


if __name__ == "__main__":
    main()
