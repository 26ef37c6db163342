"""A cpu plan: every output of a definition as passes of ONE hash-consed program.

`plan_outputs(outputs)` optimizes each output (`optimize.optimize_cpu`), then copies their passes
into one `Passes`, where a pass on the same operands is made once: values shared by the outputs
of a filter bank (a common factor, the same running sum) are computed once. The merged program is
verified again, every output exactly against its kernel on bordered random images.

`CpuPlan.describe()` is a canonical text of the plan (ops, operands, parameters, outputs): the
Halide lowering's input, and the key of its disk cache.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from fractions import Fraction

from kalg.eqsat import engine
from kalg.kernel import REAL, Kernel, Semiring
from kalg.targets.cpu.optimize import DEFAULT_LIMITS, CpuResult, Passes, optimize_cpu, verify

STRIP = 16
"""Schedule: rows per strip of the output (the unit of parallelism and of `compute_at`)."""

WINDOW_STRIP = 16
"""Rows after which a column window's recurrence restarts from a direct sum (its blocks are
computed per strip of the output: short blocks waste few rows around a strip)."""


@dataclass
class CpuPlan:
    """The passes of every output (`outputs`: output name → value in `program`)."""

    semiring: Semiring
    program: Passes
    outputs: dict[str, int]
    kernels: dict[str, Kernel]
    results: dict[str, CpuResult] = field(default_factory=dict)
    verified: str = ""

    def ops(self) -> int:
        """Operations per pixel for all outputs together, shared passes counted once."""
        live = self.program.live_all(list(self.outputs.values()))
        return sum(1 for i in live if self.program.values[i].op not in ("input", "shift"))

    def describe(self) -> str:
        """A canonical, deterministic text of the plan (one value a line, then the outputs)."""
        lines = [f"semiring {self.semiring.name}"]
        for i in self.program.live_all(list(self.outputs.values())):
            p = self.program.values[i]
            lines.append(f"v{i} = {p.op} {' '.join(f'v{a}' for a in p.args)} "
                         f"{' '.join(str(x) for x in p.param)}".rstrip())
        lines += [f"out {name} = v{v}" for name, v in self.outputs.items()]
        return "\n".join(lines)


def plan_outputs(outputs: Mapping[str, Kernel], limits: engine.Limits = DEFAULT_LIMITS,
                 ) -> CpuPlan:
    """Optimize every output and merge their passes; raises VerificationError if the merged
    program is wrong for any output (a kalg bug)."""
    results = {name: optimize_cpu(k, limits) for name, k in sorted(outputs.items())}
    semiring = next(iter(results.values())).kernel.semiring
    shared = Passes(semiring)
    outs = {name: shared.copy(r.program, r.out) for name, r in results.items()}
    if len(outs) > 1 and semiring is REAL:
        kernels = {name: r.kernel for name, r in results.items()}
        shared, outs = min([(shared, outs), _common_bank(kernels)],
                           key=lambda c: lowered_cost(*c))
    checks = [verify(shared, v, results[name].kernel) for name, v in outs.items()]
    return CpuPlan(semiring, shared, outs, {n: r.kernel for n, r in results.items()}, results,
                   checks[0])


MATERIALISED_COST = 4
"""Cost, in operations per pixel, of a value stored per strip and read back (`lowered_cost`)."""


def lowered_cost(program: Passes, outs: Mapping[str, int]) -> int:
    """Operations per pixel plus MATERIALISED_COST for every value the lowering stores per strip
    (one read at a move or by more than one pass: the Halide schedule's rule); inlined values
    cost only their operation."""
    live = program.live_all(list(outs.values()))
    readers: dict[int, int] = {}
    stored: set[int] = set()
    for i in live:
        for a in program.values[i].args:
            p = program.values[a]
            base = p.args[0] if p.op == "shift" else a
            readers[base] = readers.get(base, 0) + 1
            if p.op == "shift" or readers[base] > 1:
                stored.add(base)
    ops = sum(1 for i in live if program.values[i].op not in ("input", "shift"))
    return ops + MATERIALISED_COST * len(stored - {0})


def _common_bank(kernels: Mapping[str, Kernel]) -> tuple[Passes, dict[str, int]]:
    """A bank over its shifted inputs, sharing one common sum: with U the union of the kernels'
    taps and S the sum of the input over U (computed once), each output is c·S + D, c its most
    frequent coefficient over U (0 on a tie with 0, so S is used only where it saves taps) and D
    the remaining taps, applied tap by tap (`Passes.direct`). Exact: c·S + D = K."""
    program = Passes(REAL)
    union = sorted({o for k in kernels.values() for o, c in k.trimmed().entries})
    total = None
    outs = {}
    for name in sorted(kernels):
        taps = dict(kernels[name].trimmed().entries)
        counts = Counter(taps.get(o, 0) for o in union)
        c = max(counts, key=lambda v: (counts[v], v == 0, str(v)))
        rest = Kernel.of({o: taps.get(o, 0) - c for o in union if taps.get(o, 0) != c})
        if c == 0 or counts[c] < 2:
            outs[name] = program.direct(kernels[name].trimmed())
            continue
        if total is None:
            total = program.direct(Kernel.of({o: 1 for o in union}))
        common = program.node("scale", (total,), (Fraction(c),))
        outs[name] = (common if not rest.trimmed().entries else
                      program.node("plus", (common, _factored(program, rest.trimmed()))))
    return program, outs


def _factored(program: Passes, k: Kernel) -> int:
    """k tap by tap, its common factor g (k = g·K', K' with coprime integers) applied once."""
    values = [Fraction(c) for _, c in k.entries]
    g = Fraction(math.gcd(*(v.numerator for v in values)),
                 math.lcm(*(v.denominator for v in values)))
    if g == 1:
        return program.direct(k)
    return program.node("scale", (program.direct(Kernel.of({o: Fraction(c) / g
                                                             for o, c in k.entries})),), (g,))


def plan_data(plan: CpuPlan) -> dict:
    """The plan as plain data (what `Lowering` reads, and what a standalone module embeds):
    semiring name, live values as [op, args, params] (numbers as ints or floats), outputs, and
    each value's region (`Passes.regions`)."""
    outs = list(plan.outputs.values())
    live = plan.program.live_all(outs)

    def number(x: object) -> object:
        return x if isinstance(x, int) else float(x)

    return {"semiring": plan.semiring.name,
            "values": {i: [p.op, list(p.args), [number(x) for x in p.param]]
                       for i in live for p in [plan.program.values[i]]},
            "live": live, "outputs": dict(plan.outputs),
            "regions": {i: list(m) for i, m in plan.program.regions(outs).items() if i in live}}


__all__ = ["CpuPlan", "plan_data", "plan_outputs"]
