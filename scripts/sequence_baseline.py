"""The per-output baseline of the filter contract, for the scaling study's random filters.

    PYTHONPATH=src python scripts/sequence_baseline.py [--registers 6] [--counts 2 3 4 6]
                                                       [--filters 10] [--seed 0]

For each filter of `scripts/scaling.py` (sample j: the first k kernels of
`random_kernels(10, seed + j)`, outputs in A, B, C, ...), each output's own compile
(`filters.output_stage`: its own e-graph and candidates, default limits) into its register with
the registers actually free: the input and the outputs already made kept, the output in the
input's register last (it may overwrite the input), in register order. The last stage may also be
the constant-matrix program of that one kernel (`codegen.matrix_filter`: three divisions, then a
walk), where it is shorter or the own compile finds none: with the input free to overwrite it
needs three registers, and the own compile of a random kernel in three does not fit. Prints,
per k, how many filters have such a sequence (every stage fits) and its length per filter as
JSON lines, so that the study can put "together" beside it. A filter is never longer than
this sequence where it exists (`filters.one_at_a_time` tries the same stages and, after each,
the constant-matrix program of the outputs left).

With one output per register (k = number of registers) the last stage has the input's register
alone: a compile of one kernel there can only shift the input (`add(A, A, A)`, `neg(A, A)` and
`divq(A, A)` break the operand rules, `div` writes three registers), so that sequence exists
only for a kernel that is the input shifted. In op set all a halving needs `div` or `diva`,
which write three registers, so already a stage with two writable registers besides the kept
input (the fourth of five outputs, the fifth of six) cannot make a kernel whose coefficients
are not all integers: with 6 registers and op set all no sequence exists for k >= 5. For a
filter with one output per register the script also prints `in_place` {j: length}: the first
j stages of the sequence (each output's own compile, the input kept in A), then the outputs
left made as the filter's own "last output in place" candidate makes them (`codegen.filling`:
the constant-matrix program for all but one, L, in the registers left, then L in place from
the other five at integer weights over the 3x3 shifts; j = 0 is that candidate's construction
alone). Every such program is verified exactly (`codegen._verify_program`).
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

from kalg.algebra.kernel import Kernel
from kalg.settings import Deadline
from kalg.targets.scamp5 import codegen
from kalg.targets.scamp5.codegen import filling
from kalg.targets.scamp5.codegen.matrix import _integer_matrix
from kalg.targets.scamp5.filters import output_stage
from kalg.targets.scamp5.pipeline import Settings


def sequence(kernels, registers: tuple[str, ...]) -> dict:
    """{"sequence": length or None, "why": ...}; with one output per register also
    {"in_place": {j: length}}: the first j stages, then the outputs left by the filter's
    "last output in place" construction in the registers left (`in_place`)."""
    outputs = {registers[i]: Kernel.from_rows(k.tolist()).scale(Fraction(1, 8))
               for i, k in enumerate(kernels)}
    done: list[str] = []
    program: list = []
    result: dict = {"sequence": None}
    full = len(outputs) == len(registers)
    if full:
        result["in_place"] = {}
    for reg in sorted(outputs, key=lambda r: (r == "A", registers.index(r))):
        if full and reg != "A":
            result["in_place"][len(done)] = in_place(program, outputs, registers, done)
        free = tuple(r for r in registers if r not in done)
        part = output_stage(reg, outputs[reg], free, "A", "all", Settings(), Deadline(None))
        if reg == "A" and (alone := codegen.matrix_filter({reg: outputs[reg]}, free, "A",
                                                           "all")) is not None:
            part = alone if part is None or len(alone) < len(part) else part
        if part is None:
            return {**result, "why": f"{reg} does not fit in {' '.join(free)}"}
        program += part
        done.append(reg)
    return {**result, "sequence": len(program), "why": "every stage fits"}


def in_place(first: list, outputs: dict, registers: tuple[str, ...],
             done: list[str]) -> int | None:
    """`first` (the outputs `done`, by their own compiles; the input kept in A) followed by
    the other outputs as the filter's "last output in place" candidate makes them
    (`filling._combination` with `done`), verified exactly; None where it finds none."""
    m, rows = _integer_matrix({r: {"A": k} for r, k in outputs.items()})
    found = filling._combination(rows, registers, "A", "all", m, tuple(done))
    if found is None:
        return None
    program = first + found[0]
    codegen._verify_program(program, outputs, "A", "all", registers)
    return len(program)


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
            found = sequence(random_kernels(10, args.seed + j)[:k], registers)
            print(json.dumps({"k": k, "sample": j, **found,
                              "cpu": round(time.process_time() - start, 1)}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
