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
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction

from kalg.algebra.kernel import REAL, Kernel, Semiring
from kalg.diagnostics import KalgSemanticError
from kalg.eqsat import engine
from kalg.targets.cpu.optimize import (
    DEFAULT_LIMITS,
    CpuResult,
    Passes,
    optimize_cpu,
    verify,
    verify_channels,
)

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
    inputs: tuple[str, ...] = ()
    """For a filter over several inputs: the input channels in order (`input` pass c reads
    channel c); empty for one input."""
    channels: dict[str, dict[str, Kernel]] = field(default_factory=dict)
    """For a filter over several inputs: output → input → kernel (`kernels` is then empty)."""
    note: str = ""
    """For a filter over several inputs: how the program was chosen (`plan_channels`)."""

    def ops(self) -> int:
        """Operations per pixel for all outputs together, shared passes counted once."""
        live = self.program.live_all(list(self.outputs.values()))
        return sum(1 for i in live if self.program.values[i].op not in ("input", "shift"))

    def describe(self) -> str:
        """A canonical, deterministic text of the plan (one value a line, then the outputs)."""
        lines = [f"semiring {self.semiring.name}"]
        for i in self.program.live_all(list(self.outputs.values())):
            p = self.program.values[i]
            words = [p.op, *(f"v{a}" for a in p.args), *(str(x) for x in p.param)]
            lines.append(f"v{i} = {' '.join(words)}")
        lines += [f"out {name} = v{v}" for name, v in self.outputs.items()]
        return "\n".join(lines)


def plan_outputs(outputs: Mapping[str, Kernel], limits: engine.SaturationLimits = DEFAULT_LIMITS,
                 written: Mapping[str, tuple] | None = None) -> CpuPlan:
    """Optimize every output (`written`: the trees of those written as algebra, the
    definition's `structure`) and merge their passes; raises VerificationError if the merged
    program is wrong for any output (a kalg bug)."""
    written = written or {}
    results = {name: optimize_cpu(k, limits, written=written.get(name))
               for name, k in sorted(outputs.items())}
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
    return ops + MATERIALISED_COST * len(stored - set(program.inputs()))


def plan_channels(channels: Mapping[str, Mapping[str, Kernel]], inputs: Sequence[str],
                  limits: engine.SaturationLimits = DEFAULT_LIMITS) -> CpuPlan:
    """A filter over several input channels (output → input → real kernel; `inputs` in the
    order of the image's channels) as one program: out = Σ_c K_out,c ⋆ in_c.

    Each distinct kernel is optimized once (`optimize_cpu`). Three programs are built and the
    one of least `lowered_cost` kept: (1) every kernel's own decomposition on its input, the
    outputs summing their inputs; (2) the kernels on one input planned as a bank, as
    `plan_outputs` plans one (the common-sum form where it costs less); (3) as (2), but the
    inputs on which an output's kernels are equal up to a factor mixed first and the kernel
    applied once: K ⋆ (a·A + b·B) (sharing across channels). Passes are hash-consed, so a value
    several outputs need is made once. Every output is verified exactly against the sum of its
    kernels (`verify_channels`)."""
    parts = {out: {ch: k.trimmed() for ch, k in sorted(ins.items()) if k.trimmed().entries}
             for out, ins in sorted(channels.items())}
    for out, ins in parts.items():
        if not ins:
            raise KalgSemanticError(f"output {out} is zero on every input: there is nothing "
                                    "to compute")
    optimized: dict[Kernel, CpuResult] = {}

    def result(k: Kernel) -> CpuResult:
        if k not in optimized:
            optimized[k] = optimize_cpu(k, limits)
        return optimized[k]

    results = {f"{out} on {ch}": result(k) for out, ins in parts.items() for ch, k in ins.items()}
    candidates = [_channel_program(parts, inputs, result, banks, mix)
                  for banks, mix in ((False, False), (True, False), (True, True))]
    program, outs = min(candidates, key=lambda c: lowered_cost(*c))
    checks = [verify_channels(program, v, [parts[out].get(ch) for ch in inputs])
              for out, v in outs.items()]
    note = (f"chosen by the Halide schedule's cost (ops + {MATERIALISED_COST} per value stored "
            f"per strip): {lowered_cost(program, outs)}, each kernel's own form "
            f"{lowered_cost(*candidates[0])}")
    verified = checks[0] if checks else "nothing to verify: no kernel"  # a pipeline of no conv
    return CpuPlan(REAL, program, outs, {}, results, verified, tuple(inputs),
                   {out: dict(ins) for out, ins in parts.items()}, note)


def _channel_program(parts: dict[str, dict[str, Kernel]], inputs: Sequence[str], result,
                     banks: bool, mix: bool) -> tuple[Passes, dict[str, int]]:
    """One program for `plan_channels` (see there for `banks` and `mix`)."""
    index = {name: c for c, name in enumerate(inputs)}
    shared = Passes(REAL)
    terms: dict[str, list[int]] = {out: [] for out in parts}
    single = {out: dict(ins) for out, ins in parts.items()}
    if mix:
        for out, ins in parts.items():
            for group in _proportional(ins):
                first = ins[group[0]]
                mixed = shared.input(index[group[0]])
                for ch in group[1:]:
                    ratio = _ratio(ins[ch], first)
                    term = shared.input(index[ch])
                    if ratio == -1:
                        mixed = shared.node("sub", (mixed, term))
                        continue
                    if ratio != 1:
                        term = shared.scaled(term, ratio)
                    mixed = shared.node("plus", (mixed, term))
                r = result(first)
                terms[out].append(shared.copy(r.program, r.out, onto=mixed))
                for ch in group:
                    del single[out][ch]
    for ch in inputs:
        bank = {out: ins[ch] for out, ins in single.items() if ch in ins}
        if not bank:
            continue
        program = Passes(REAL)
        outs = {out: program.copy(result(k).program, result(k).out) for out, k in bank.items()}
        if banks and len(outs) > 1:
            program, outs = min([(program, outs), _common_bank(bank)],
                                key=lambda c: lowered_cost(*c))
        for out, v in outs.items():
            terms[out].append(shared.copy(program, v, index[ch]))
    return shared, {out: _sum_scaled(shared, values) for out, values in terms.items()}


def _proportional(ins: Mapping[str, Kernel]) -> list[list[str]]:
    """The groups of at least two inputs whose kernels are equal up to a rational factor."""
    groups: list[list[str]] = []
    for ch in ins:
        for g in groups:
            if _ratio(ins[ch], ins[g[0]]) is not None:
                g.append(ch)
                break
        else:
            groups.append([ch])
    return [g for g in groups if len(g) > 1]


def _ratio(k: Kernel, base: Kernel) -> Fraction | None:
    """r with k = r·base (both trimmed, non-zero), or None."""
    (o, c), taps = base.entries[0], dict(k.entries)
    if set(taps) != {p for p, _ in base.entries} or o not in taps:
        return None
    r = Fraction(taps[o]) / Fraction(c)
    return r if all(Fraction(taps[p]) == r * Fraction(v) for p, v in base.entries) else None


def format_channels(name: str, plan: CpuPlan) -> str:
    """What `kalg optimize --target cpu` prints for a filter over several inputs: each
    (output, input) kernel's own decomposition and cost, then the shared program of all
    outputs with its operations per pixel (shared passes counted once)."""
    lines = [f"# {name}: cpu target, operations per output pixel (moves are free addressing)",
             f"# inputs: {' '.join(plan.inputs)} (an image each; out = sum over the inputs of "
             "each input's kernel correlated with it)"]
    for key, r in plan.results.items():
        lines += [f"# output {key}: kernel with {len(r.kernel.trimmed())} taps, {r.ops} "
                  f"ops/pixel alone (direct, tap by tap: {r.direct_ops}); form: "
                  f"{', '.join(r.forms)}"]
    separate = sum(r.ops for r in plan.results.values()) + sum(
        len(ins) - 1 for ins in plan.channels.values())
    lines += [f"# cost: {plan.ops()} ops/pixel for all outputs (each kernel alone, summed: "
              f"{separate}); {plan.note}",
              f"# verified: {plan.verified}",
              *plan.program.listing_all(plan.outputs, list(plan.inputs))]
    return "\n".join(lines) + "\n"


def _sum_scaled(program: Passes, values: list[int]) -> int:
    """Σ values, each `scale f·u` written once outside the sum where its factor is the most
    frequent: g·(Σ u_i + Σ (f_j/g)·u_j) (one multiplication for the channels sharing g)."""
    if len(values) == 1:
        return values[0]
    parts = []
    for v in values:
        p = program.values[v]
        parts.append((p.args[0], p.param[0]) if p.op == "scale" else (v, Fraction(1)))
    counts = Counter(f for _, f in parts)
    g = max(counts, key=lambda f: (counts[f], f == 1, str(f)))
    if counts[g] < 2 or g == 1:
        terms = values
    else:
        terms = [u if f == g else program.node("scale", (u,), (f / g,)) for u, f in parts]
    acc = terms[0]
    for v in terms[1:]:
        acc = program.node("plus", (acc, v))
    return acc if terms is values else program.node("scale", (acc,), (g,))


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


FORMS = ("plan", "direct", "separable")
"""How the lowering computes a plan's outputs (`plan_data`'s `form`): `plan`, its passes (the
direct correlation where `direct_taps` says so); `direct`, every output tap by tap from one
input loaded once (a bank's outputs in one loop); `separable`, every output (each of rank one)
as a pass of taps along the row, then one of taps along the column (`separable_taps`)."""

def reads_input_in_place(schedule: tuple | None) -> bool:
    """Whether a cpu schedule (`halide.Lowering.schedule_cpu`'s tuple; None the fixed rule)
    has the `direct` and `separable` forms read the bordered input where it is (its optional
    fifth field) rather than copy it per strip; the `plan` form is the same either way."""
    return schedule is not None and len(schedule) > 4 and bool(schedule[4])


DIRECT_FORM_TAPS = 81
"""The `direct` form is a candidate only for kernels of at most this many taps (a 9x9 kernel):
a bound on compile time and on the search's work, not a tuned speed."""


def forms(plan: CpuPlan) -> list[str]:
    """The forms (`FORMS`) the plan can be lowered in besides its own: `direct` for a plan of
    one input whose kernels have at most DIRECT_FORM_TAPS taps each (and that is not already
    lowered directly), `separable` where every kernel is real and of rank one along both axes."""
    out = ["plan"]
    if plan.inputs or not plan.kernels:
        return out
    if direct_taps(plan) is None and all(len(k.trimmed()) <= DIRECT_FORM_TAPS
                                         for k in plan.kernels.values()):
        out.append("direct")
    if separable_taps(plan) is not None:
        out.append("separable")
    return out


def separable_taps(plan: CpuPlan) -> dict[str, dict] | None:
    """Each output's kernel as scale · col ⊗ row (integers): {"scale": s, "rows": [[dx, w]...],
    "cols": [[dy, w]...]} with K(dx, dy) = s · cols(dy) · rows(dx); None unless every output
    is real, of one input, and of rank one with at least two taps along each axis."""
    if plan.inputs or not plan.kernels or plan.semiring is not REAL:
        return None
    out = {}
    for name in plan.outputs:
        scale, taps = _direct_form(plan.kernels[name])
        factors = _rank_one(taps)
        if factors is None:
            return None
        rows, cols = factors
        out[name] = {"scale": scale if isinstance(scale, int) else float(scale),
                     "rows": rows, "cols": cols}
    return out


def _rank_one(taps: list[tuple[int, int, int]]) -> tuple[list, list] | None:
    """Integer taps [(dx, dy, w)] as rows [[dx, a]] and cols [[dy, b]] with w = a·b, or None
    (not of rank one, or a single row or column)."""
    by_row: dict[int, dict[int, int]] = {}
    for dx, dy, w in taps:
        by_row.setdefault(dy, {})[dx] = w
    first = next(iter(by_row.values()))
    g = math.gcd(*first.values())
    base = {dx: w // g for dx, w in first.items()}
    cols = []
    for dy, row in sorted(by_row.items()):
        if set(row) != set(base):
            return None
        dx0 = next(iter(base))
        c, rem = divmod(row[dx0], base[dx0])
        if rem or any(row[dx] != c * base[dx] for dx in base):
            return None
        cols.append([dy, c])
    if len(cols) < 2 or len(base) < 2:
        return None
    return [[dx, base[dx]] for dx in sorted(base)], cols


def plan_data(plan: CpuPlan, form: str = "plan") -> dict:
    """The plan as plain data (what `Lowering` reads, and what a standalone module embeds):
    semiring name, live values as [op, args, params] (numbers as ints or floats), outputs, and
    each value's region (`Passes.regions`); for a filter over several inputs, their names.
    `form` (`FORMS`, one of `forms(plan)`) adds the taps the lowering computes the outputs
    from instead of the passes."""
    outs = list(plan.outputs.values())
    live = plan.program.live_all(outs)

    def number(x: object) -> object:
        return x if isinstance(x, int) else float(x)

    data = {"semiring": plan.semiring.name,
            "values": {i: [p.op, list(p.args), [number(x) for x in p.param]]
                       for i in live for p in [plan.program.values[i]]},
            "live": live, "outputs": dict(plan.outputs),
            "regions": {i: list(m) for i, m in plan.program.regions(outs).items() if i in live}}
    if plan.inputs:  # `input` pass c reads the c-th of these images
        data["inputs"] = list(plan.inputs)
    if form == "separable":
        data["separable"] = separable_taps(plan)
    elif direct := direct_taps(plan, force=form == "direct"):
        data["direct"] = direct
    return data


DIRECT_OVER = 96
"""A plan of more operations per pixel than this is lowered as the direct correlation of its
kernels (`direct_taps`) where that costs no more operations: the lowering makes a Halide Func
per pass, and Halide's compile time grows faster than the number of passes, while the direct sum
is one Func per row of taps. The bound is twice the 48 operations of a 7x7 kernel applied tap by
tap, so a plan is lowered directly only when it is long in its own right."""


def direct_cost(kernel: Kernel) -> int:
    """Operations per pixel of the kernel applied tap by tap (`_direct_form`): one ⊕ between
    taps, a ⊗ per tap that is not the semiring's one (for real kernels, ±1 of the integer
    kernel: a negated term is a subtraction), and for real kernels one exact scale."""
    scale, taps = _direct_form(kernel)
    one = kernel.semiring.one
    weighted = sum(1 for _, _, c in taps if (abs(c) if kernel.semiring is REAL else c) != one)
    return max(len(taps) - 1, 0) + weighted + (scale != 1)


def _direct_form(kernel: Kernel) -> tuple[Fraction, list[tuple[int, int, object]]]:
    """The kernel as scale · (taps): for a real kernel, integer taps over its common
    denominator with their common divisor taken out (as `optimize` does); else scale 1."""
    entries = kernel.trimmed().entries
    if kernel.semiring is not REAL or not entries:
        return Fraction(1), [(dx, dy, c) for (dx, dy), c in entries]
    values = [Fraction(c) for _, c in entries]
    scale = Fraction(math.gcd(*(v.numerator for v in values)),
                     math.lcm(*(v.denominator for v in values)))
    return scale, [(dx, dy, int(Fraction(c) / scale)) for (dx, dy), c in entries]


def direct_taps(plan: CpuPlan, force: bool = False) -> dict[str, dict] | None:
    """Where the plan is to be lowered as direct correlations (`DIRECT_OVER`: over that many
    operations per pixel, one input, and the direct sums together cost no more than the
    plan), each output's {"scale": s, "taps": [[dx, dy, weight], ...]} (numbers as ints or
    floats); else None. The passes are still the plan (verified exactly); the lowered pipeline
    is checked against the reference correlation like any other (`CpuFilter`). `force`: the
    direct correlations whatever their cost (the `direct` form)."""
    if plan.inputs or not plan.kernels:
        return None
    if not force and (plan.ops() <= DIRECT_OVER or
                      sum(direct_cost(k) for k in plan.kernels.values()) > plan.ops()):
        return None

    def number(c: object) -> object:
        return c if isinstance(c, int) else float(c)
    forms = {name: _direct_form(plan.kernels[name]) for name in plan.outputs}
    return {name: {"scale": number(scale), "taps": [[dx, dy, number(c)] for dx, dy, c in taps]}
            for name, (scale, taps) in forms.items()}


__all__ = ["FORMS", "CpuPlan", "direct_taps", "format_channels", "forms", "plan_channels",
           "plan_data", "plan_outputs", "separable_taps"]
