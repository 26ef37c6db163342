"""A proven lower bound on the length of any program for a kernel or filter (issue 26, item 4).

`lower_bound(outputs, ...)` is the largest number of instructions kalg can prove every program
needs, on the given registers and op set, input in one register:

* **per output**: a filter's program leaves each output kernel in its register, so it is also a
  program for that one kernel, and no shorter than the shortest of those. The exact search
  (`exact.exhaustive`, iterative deepening over every program, pruned only by admissible
  bounds) is run for each output within a node budget; every length it exhausted is a length no
  program has. With a budget of 1 node this is the search's admissible estimate at the start
  (halvings, reach, taps and norms to gather); each exhausted depth adds one.
* **final writes**: an output register that does not hold its kernel at the start must be
  written last by some instruction, and one instruction leaves at most the values {v, -v, 2v}
  in the registers it writes (a division and its scratch copies; every other macro writes one
  register). Outputs no instruction can leave together need different instructions.

With more than six registers only the final-write count is computed (`WIDEST`).

A caller that has already run the exact search for the whole program on the same registers
passes what it proved (`proven`). The bound is a count-bounded computation: deterministic.
"""

from __future__ import annotations

from collections.abc import Sequence
from fractions import Fraction

from kalg.algebra.kernel import Kernel
from kalg.settings import BOUND_NODES
from kalg.targets.scamp5.exact import exhaustive

WIDEST = 6
"""Registers beyond this make the exact search's instruction tables large: on a wider budget
only the final-write count is used (a search on six registers bounds nothing about more)."""


def lower_bound(outputs: dict[str, Kernel], registers: Sequence[str], input_register: str,
                op_set: str, length: int, nodes: int = BOUND_NODES, proven: int = 0) -> int:
    """No program on `registers` (macros of `op_set`, input in `input_register`) leaves every
    output kernel in its register with fewer instructions than this. `length` is the length of
    a program known to exist (the searches stop there); `proven` a bound proven already."""
    live = {reg: k.trimmed() for reg, k in outputs.items()
            if not (reg == input_register and _key(k) == _key(Kernel.unit()))}
    if not live:
        return max(proven, 0)
    best = max(proven, _final_writes(list(live.values()), op_set))
    if len(registers) > WIDEST or nodes <= 0:
        return best
    share = max(1, nodes // len(live))
    for reg, kernel in sorted(live.items(), key=lambda item: -len(item[1])):
        if best >= length:
            break
        outcome = exhaustive.shortest_program(
            kernel, registers=tuple(registers), input_register=input_register, output=reg,
            op_set=op_set, max_length=length - 1, nodes=share)
        best = max(best, outcome.lower)
    return min(best, length)


def _final_writes(kernels: list[Kernel], op_set: str) -> int:
    """How many different instructions must write the outputs last. In op set basic every
    macro writes one register; in op set all a division writes at most three, and the values it
    leaves are pairwise related by a factor of 1, 2 or 1/2 up to sign: outputs in different
    groups of that relation come from different instructions, at most three from each."""
    if op_set == "basic":
        return len(kernels)
    groups: list[list[Kernel]] = []
    for k in kernels:
        joined = [g for g in groups if any(_related(k, m) for m in g)]
        for g in joined:
            groups.remove(g)
        groups.append([k, *(m for g in joined for m in g)])
    return sum(-(-len(g) // 3) for g in groups)


def _key(k: Kernel) -> tuple:
    return tuple(sorted((o, Fraction(v)) for o, v in k.taps.items() if v))


def _related(a: Kernel, b: Kernel) -> bool:
    return any(_key(a) == _key(b.scale(Fraction(f))) for f in (1, -1, 2, -2, Fraction(1, 2),
                                                                Fraction(-1, 2)))


def describe_bound(bound: int, length: int) -> str:
    """The bound in words for a program header: 'proven shortest' when it meets `length`."""
    if bound >= length:
        return f"{bound} instructions: proven shortest"
    return (f"{bound} instructions (no program is shorter; this one is at most "
            f"{length - bound} longer than the shortest)")
