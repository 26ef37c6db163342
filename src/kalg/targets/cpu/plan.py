"""A cpu plan: every output of a definition as passes of ONE hash-consed program.

`plan_outputs(outputs)` optimizes each output (`optimize.optimize_cpu`), then copies their passes
into one `Passes`, where a pass on the same operands is made once: values shared by the outputs
of a filter bank (a common factor, the same running sum) are computed once. The merged program is
verified again, every output exactly against its kernel on bordered random images.

`CpuPlan.describe()` is a canonical text of the plan (ops, operands, parameters, outputs): the
Halide lowering's input, and the key of its disk cache.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from kalg.eqsat import engine
from kalg.kernel import Kernel, Semiring
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
    checks = [verify(shared, v, results[name].kernel) for name, v in outs.items()]
    return CpuPlan(semiring, shared, outs, {n: r.kernel for n, r in results.items()}, results,
                   checks[0])


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
