"""The per-output baseline of the filter contract, for the scaling study's random filters.

    PYTHONPATH=src python scripts/sequence_baseline.py [--registers 6] [--counts 2 3 4]
                                                       [--filters 10] [--seed 0]

For each filter of `scripts/scaling.py` (sample j: the first k kernels of
`random_kernels(10, seed + j)`, outputs in A, B, C, ...), each output's own compile
(`filters._stage`: its own e-graph and candidates, default limits) into its register with the
registers actually free: the input and the outputs already made kept, the output in the input's
register last (it may overwrite the input), in register order. Prints, per k, how many filters
have such a sequence (every stage fits) and its length per filter as JSON lines, so that the
study can put "together" beside it. A filter is never longer than this sequence where it exists
(`filters._one_at_a_time`).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from fractions import Fraction
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from scaling import REGISTERS, random_kernels

from kalg.filters import _stage
from kalg.kernel import Kernel
from kalg.pipeline import Settings
from kalg.settings import Deadline


def sequence(kernels, registers: tuple[str, ...]) -> tuple[int | None, str]:
    outputs = {registers[i]: Kernel.from_rows(k.tolist()).scale(Fraction(1, 8))
               for i, k in enumerate(kernels)}
    done: list[str] = []
    total = 0
    for reg in sorted(outputs, key=lambda r: (r == "A", registers.index(r))):
        free = tuple(r for r in registers if r not in done)
        part = _stage(reg, outputs[reg], free, "A", "all", Settings(), Deadline(None))
        if part is None:
            return None, f"{reg} does not fit in {' '.join(free)}"
        total += len(part)
        done.append(reg)
    return total, "every stage fits"


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--registers", type=int, default=6)
    p.add_argument("--counts", type=int, nargs="+", default=[2, 3, 4, 5])
    p.add_argument("--filters", type=int, default=10)
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args()
    registers = REGISTERS[:args.registers]
    for k in args.counts:
        for j in range(args.filters):
            start = time.process_time()
            length, why = sequence(random_kernels(10, args.seed + j)[:k], registers)
            print(json.dumps({"k": k, "sample": j, "sequence": length, "why": why,
                              "cpu": round(time.process_time() - start, 1)}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
