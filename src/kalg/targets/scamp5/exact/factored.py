"""Shortest programs of a kernel's factors, run one after another (`shortest_chain`).

A one-output kernel K = F1 · F2 · ... (integer polynomial factors, times a shift and a power of
two) can be computed by a program for F1 on the input, then a program for F2 on that result,
and so on: each stage needs only the previous stage's value, so the stages compose into a
program for K whose length is the sum of theirs. The exact search (`codegen.exhaustive`) finds
the shortest program of each small factor cheaply, where the heuristic code generator, which
sees the factors only through the e-graph's decompositions, can miss the factor's best
program (Robinson's north-east compass is (x·y - 1) times a 2x2 kernel of 4 instructions,
5 in all; kalg's heuristic took 6). Factors are grouped in every way (up to `MAX_FACTORS`
factors), and the scale and shift ride on one group. The result is only an upper bound on the
shortest length (not a proof); it is verified exactly and numerically like every program.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from fractions import Fraction

from kalg.algebra.kernel import Kernel
from kalg.eqsat.analyses import factors
from kalg.targets.scamp5.exact import exhaustive
from kalg.targets.scamp5.machine.isa import Instr

MAX_FACTORS = 4
"""Kernels with more factors than this group them only as single factors (every grouping of
four factors is 15 partitions; 3x3 kernels have at most four non-trivial factors)."""


def shortest_chain(kernel: Kernel, *, registers: Sequence[str], input_register: str,
                   output: str, op_set: str, shorter_than: int,
                   nodes: int) -> list[Instr] | None:
    """A verified program for `kernel` shorter than `shorter_than` instructions made of the
    shortest programs of groups of its factors (each found by the exact search), or None when
    the kernel has fewer than two non-trivial factors or no grouping is shorter within the
    search budget (`nodes`, over all the searches together: deterministic)."""
    parts = _factors(kernel)
    if parts is None:
        return None
    fs, rest = parts
    budget = [nodes]
    memo: dict[tuple, exhaustive.Outcome | None] = {}

    def stage(group: Kernel, source: str, last: bool, cap: int) -> exhaustive.Outcome | None:
        key = (repr(group), source, last, cap)
        if key not in memo:
            memo[key] = _search(group, registers, source, output if last else None, op_set,
                                cap, budget)
        return memo[key]

    best: list[Instr] | None = None
    for groups in _groupings(fs, rest):
        limit = (shorter_than if best is None else len(best)) - 1
        program: list[Instr] = []
        source = input_register
        for i, g in enumerate(groups):
            last = i == len(groups) - 1
            found = stage(g, source, last, limit - len(program) - (len(groups) - 1 - i))
            if found is None:
                break
            program += found.program
            source = found.register
        else:
            best = program
    if best is not None:
        exhaustive.verify(best, kernel, output, input_register, op_set, registers)
    return best


def _factors(kernel: Kernel) -> tuple[list[Kernel], Kernel] | None:
    """(integer factors, rest) with kernel = product of the factors * rest, rest one tap (a
    shift times a dyadic coefficient); None with fewer than two non-trivial factors or a
    kernel that is not dyadic."""
    k = kernel.trimmed()
    if len(k) < 2:
        return None
    scale = 1
    while any((Fraction(c) * scale).denominator != 1 for _, c in k.entries):
        scale *= 2
        if scale > 1 << 20:
            return None
    x0, _, y0, _ = k.bounds()
    fs = [f for f in factors(k.scale(scale).shift(-x0, -y0)) if len(f.trimmed()) > 1]
    if len(fs) < 2:
        return None
    product = _product(fs).trimmed()
    (px, py), pc = product.entries[0]
    (kx, ky), kc = k.entries[0]
    rest = Kernel.unit(kx - px, ky - py, value=Fraction(kc) / Fraction(pc))
    if product.compose(rest).trimmed() != k:
        return None
    return fs, rest


def _groupings(fs: list[Kernel], rest: Kernel) -> Iterator[list[Kernel]]:
    """Every partition of the factors into two or more groups (singletons only beyond
    `MAX_FACTORS`), as the groups' kernels, with `rest` multiplied into each group in turn;
    in a fixed order, fewest groups first."""
    partitions = (_partitions(list(range(len(fs)))) if len(fs) <= MAX_FACTORS
                  else iter([[[i] for i in range(len(fs))]]))
    seen = set()
    for partition in sorted((p for p in partitions if len(p) >= 2), key=len):
        kernels = [_product(fs[i] for i in block) for block in partition]
        for j in range(len(kernels)):
            groups = [g.compose(rest) if i == j else g for i, g in enumerate(kernels)]
            key = tuple(sorted(map(repr, groups)))
            if key not in seen:
                seen.add(key)
                yield groups


def _partitions(items: list[int]) -> Iterator[list[list[int]]]:
    if not items:
        yield []
        return
    first, others = items[0], items[1:]
    for partition in _partitions(others):
        yield [[first], *partition]
        for i in range(len(partition)):
            yield [*partition[:i], [first, *partition[i]], *partition[i + 1:]]


def _product(fs) -> Kernel:
    out = Kernel.unit()
    for f in fs:
        out = out.compose(f)
    return out


def _search(kernel: Kernel, registers: Sequence[str], inp: str, out: str | None, op_set: str,
            cap: int, budget: list[int]) -> exhaustive.Outcome | None:
    """The exact search's shortest program of at most `cap` instructions (result in `out`, or
    anywhere), within what is left of the shared node budget (spent as it is used); None if
    it found none."""
    if cap < 1 or budget[0] <= 0:
        return None
    outcome = exhaustive.shortest_program(kernel, registers=registers, input_register=inp,
                                          output=out, op_set=op_set, max_length=cap,
                                          nodes=budget[0])
    budget[0] -= outcome.nodes
    return outcome if outcome.program is not None else None
