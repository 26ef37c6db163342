"""The goal-bag search (`codegen.goalbag`) alone on family draws: length found and CPU seconds
per budget, for a paired before/after of a change to that search without whole compiles.

    .venv/bin/python scripts/goalbag_probe.py --families isotropic dense57 --per-family 3 \
        --seed 764622522 --bags 60000 240000 [--src OTHER_CHECKOUT/src]

`--src` imports kalg from another checkout's `src` (a baseline worktree), so the same script
measures both. Each kernel is searched on registers A..F, input and output in A, as
`pipeline._prove` runs it (op set all); every program found is verified exactly
(`codegen.goalbag_filter`). A whole compile's program is the shorter of this search's and the
other searches' best (`--json` stats, "goal-bag search"), which this script does not run.
Prints one Markdown row per kernel and budget, then totals per family; `--seed` defaults to a
fresh one, printed.
"""

from __future__ import annotations

import argparse
import importlib
import resource
import secrets
import sys
from fractions import Fraction
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--families", nargs="+", required=True)
    parser.add_argument("--per-family", type=int, default=3)
    parser.add_argument("--seed", type=int)
    parser.add_argument("--bags", type=int, nargs="+", default=[60_000])
    parser.add_argument("--src", type=Path, default=ROOT / "src")
    parser.add_argument("--names", help="comma-separated kernel names to keep")
    args = parser.parse_args(argv)
    sys.path.insert(0, str(args.src.resolve()))
    families = importlib.import_module("kalg.families")
    kernel_mod = importlib.import_module("kalg.algebra.kernel")
    codegen = importlib.import_module("kalg.targets.scamp5.codegen")
    seed = args.seed if args.seed is not None else secrets.randbelow(2**31)
    print(f"seed {seed}, src {args.src}", flush=True)
    keep = set(args.names.split(",")) if args.names else None
    print("| kernel | taps | bags | length | CPU s |\n|---|---:|---:|---:|---:|")
    totals: dict[tuple[str, int], list] = {}
    for family in args.families:
        for d in families.draw(family, args.per_family, seed):
            if keep is not None and d.name not in keep:
                continue
            outputs = {}
            for reg, (a, shift) in d.outputs.items():
                h = a.shape[0] // 2
                outputs[reg] = kernel_mod.Kernel.of(
                    {(x - h, h - y): Fraction(int(a[y, x]), 2 ** shift)
                     for y in range(a.shape[0]) for x in range(a.shape[1]) if a[y, x]})
            taps = sum(int((a != 0).sum()) for a, _ in d.outputs.values())
            for bags in args.bags:
                start = _cpu()
                program = codegen.goalbag_filter(outputs, tuple("ABCDEF"), "A", bags)
                cpu = _cpu() - start
                length = None if program is None else len(program)
                print(f"| {d.name} | {taps} | {bags} | {length if length else '-'} | "
                      f"{cpu:.2f} |", flush=True)
                total = totals.setdefault((family, bags), [0, 0, 0, 0.0])
                total[0] += 1
                total[1] += length is not None
                total[2] += length or 0
                total[3] += cpu
    print("\n| family | bags | kernels | found | total length of those found | CPU s |\n"
          "|---|---:|---:|---:|---:|---:|")
    for (family, bags), (n, found, length, cpu) in totals.items():
        print(f"| {family} | {bags} | {n} | {found} | {length} | {cpu:.1f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
