"""Optimize a kernel under the cpu cost model: operations per output pixel on a CPU.

`optimize_cpu(kernel)` seeds the kernel into an e-graph, saturates the rule families of its
semiring (bounded), extracts the cheapest term under `cost.cpu()` and returns it as a `CpuResult`:
the term, its passes over the image, its operations per pixel, and the proof that it is right.

* real kernels: the SCAMP-5 analyses seed factorisations and digit planes (`analyses.seed`);
  `ring`, `distributivity` and `window` saturate, so runs of taps become sliding windows
  (1 - x^n)·P_x and boxes become integral images (rules/window.egg). A CPU multiplies, so a
  kernel with fractional coefficients (a 1/9 box, a binomial over 256) is written s·K' with K'
  integer and s an exact rational: K' is optimized, and one `scale` pass by s follows;
* min-plus, max-plus and Boolean kernels: `seed_semiring` seeds the entries, separable splits
  K = R ⊗ C and 1-D splits R = A ⊗ B (exact residuation); each semiring's own family saturates,
  with its commutativity/associativity set run for one capped iteration.

Every result is verified before it is returned (`verify`): the passes are run, in exact
arithmetic, on a small random integer image (a random binary image for Boolean kernels) extended
by a border (replicate, and wrap for real kernels), each value computed only over the region its
readers need (`Passes.regions`, bounded by the kernel's reach, not by the sum of all moves), and
compared exactly with the kernel applied to the same bordered image. A mismatch raises
VerificationError (a kalg bug).

Operations per pixel count each pass once (equal passes on equal values are shared); moves are free
addressing. The extraction itself is by tree cost (`extract.greedy`), so the count can be lower
than the extracted cost when sub-terms repeat.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field
from fractions import Fraction

import numpy as np

from kalg.algebra.decomp import reachable
from kalg.algebra.kernel import BOOLEAN, MINPLUS, REAL, Kernel, Semiring, np_add
from kalg.diagnostics import KalgSemanticError, VerificationError
from kalg.eqsat import analyses, engine, extract
from kalg.eqsat.terms import balanced_sum
from kalg.targets.cpu import cost
from kalg.targets.cpu.borders import DEFAULT as DEFAULT_BORDER
from kalg.targets.cpu.borders import Border

Term = list  # a parsed term: [op, arg, ...]

FAMILIES: dict[str, tuple[str, ...]] = {
    "real": ("ring", "distributivity", "window"),
    "minplus": ("minplus",),
    "maxplus": ("maxplus",),
    "boolean": ("boolean",),
}
"""Rule families (rules/NAME.egg) loaded for each semiring. A semiring's rules match only its own
sort, so the families are never mixed."""


def schedule(semiring: Semiring) -> tuple[engine.Phase, ...]:
    """The stages run for a kernel of `semiring`: normalising laws, then (semirings) one capped
    iteration of the commutativity/associativity set, then the normalising laws again."""
    if semiring is REAL:
        return (engine.Phase(FAMILIES["real"], 10),)
    name = semiring.name
    return (engine.Phase((name,), 6), engine.Phase((f"{name}-ac", name), 1),
            engine.Phase((name,), 4))


DEFAULT_LIMITS = engine.SaturationLimits(iterations=12, nodes=20_000, memory_mib=3072)

# constructor names of each semiring's sort: (literal, entry, sum, composition)
_SORT = {"minplus": ("MinLit", "MinTap", "MinMin", "MinCompose"),
         "maxplus": ("MaxLit", "MaxTap", "MaxMax", "MaxCompose"),
         "boolean": ("BoolLit", "BoolTap", "BoolOr", "BoolCompose")}


@dataclass
class CpuResult:
    """The cheapest decomposition found for one kernel under `cost.cpu()`.

    `term` is the extracted term (egglog text); `passes` lists its operations in order (value v0
    is the input; `vN@(dx,dy)` reads vN moved by (dx, dy), free addressing); `ops` is operations
    per output pixel, each pass counted once; `direct_ops` is the tap-by-tap cost for comparison.
    `program` and `out` are the passes themselves (what the Halide lowering consumes).
    """

    kernel: Kernel
    term: str
    passes: list[str]
    ops: int
    direct_ops: int
    saturation: engine.SaturationReport
    verified: str
    forms: list[str] = field(default_factory=list)
    """The kinds of form the term uses (running sums, composition of factors), or 'direct'."""
    program: Passes | None = None
    out: int = 0


def optimize_cpu(kernel: Kernel, limits: engine.SaturationLimits = DEFAULT_LIMITS,
                 max_literals: int = 30, written: tuple | None = None) -> CpuResult:
    """Find the decomposition of `kernel` with the fewest operations per output pixel on a CPU.

    Contract: the returned passes compute exactly `kernel.apply(image)` (checked on a random
    bordered image before returning); raises KalgSemanticError for kernels the cpu target cannot
    take (zero kernel, an absorbing min/max-plus weight: -inf in min-plus). Real coefficients
    and min/max-plus weights may be any rationals. `written`: the kernel as the user wrote it
    (`kalg.frontend.structure`); a min/max-plus or Boolean kernel is applied so (`_as_written`)
    where that takes fewer operations.
    """
    semiring = kernel.semiring
    k = kernel.trimmed()
    if not k.entries:
        raise KalgSemanticError("the kernel is zero (no entries): there is nothing to compute")
    scale = Fraction(1)
    if semiring is REAL:
        scale, k = _integer_part(k)
        facts = _real_facts(k, max_literals)
    else:
        unit, integral = _weight_unit(k)
        facts = "\n".join(seed_semiring(integral, max_literals))
    direct = Passes(semiring)
    direct_out = direct.direct(k)
    program, out, forms, term = direct, direct_out, ["direct"], ["direct"]
    report = engine.SaturationReport("not run: a non-separable kernel over "
                                     f"{SEARCH_MAX_TAPS} taps is applied tap by tap", 0, 0, 0.0)
    if facts is not None:
        data, report = engine.saturate(FAMILIES[semiring.name], facts, schedule(semiring),
                                       limits)
        graph = extract.Graph(data)
        root = graph.lets["k_out"]
        term = _term(graph, extract.greedy(graph, root, cost.cpu()), root)
        if semiring is not REAL and unit != 1:
            term = _weights_over(term, unit)
        found = Passes(semiring)
        found_out = found.apply(term, 0)
        # The e-graph has no multiply-by-constant pass, so a kernel with few, large taps can be
        # cheaper tap by tap: the result is never worse than the direct form.
        if found.ops(found_out) <= direct.ops(direct_out):
            program, out, forms = found, found_out, _forms(term)
    mine = (_as_written(written, semiring, limits)
            if written is not None and semiring is not REAL else None)
    if mine is not None and mine[0].ops(mine[1]) < program.ops(out):
        program, out, forms, term = mine[0], mine[1], ["as written"], ["as written"]
    if scale != 1:
        out = program.scaled(out, scale)
        direct_out = direct.scaled(direct_out, scale)
        forms = [*forms, f"an exact scale by {scale}"]
    verified = verify(program, out, kernel)
    return CpuResult(kernel=kernel, term=_text(term), passes=program.listing(out),
                     ops=program.ops(out), direct_ops=direct.ops(direct_out), saturation=report,
                     verified=verified, forms=forms, program=program, out=out)


def _as_written(tree: tuple, semiring: Semiring,
                limits: engine.SaturationLimits) -> tuple[Passes, int] | None:
    """A min/max-plus or Boolean kernel's passes as the user wrote it: each matrix (leaf) by
    its own cheapest passes (`optimize_cpu`, once per distinct matrix), a ⊕ of two terms one
    pass, a composition its factors applied in turn. `a * a * a` of a 3x3 min-plus `a` is 48
    operations so, where the 7x7 literal tap by tap is 96 (its e-graph seeds factor only
    separable kernels and one-dimensional ones). None where the tree holds anything else."""
    program = Passes(semiring)
    leaves: dict[Kernel, CpuResult] = {}

    def build(t: tuple, v: int) -> int:
        match t:
            case ("leaf", k):
                if k not in leaves:
                    leaves[k] = optimize_cpu(k, limits)
                return program.copy(leaves[k].program, leaves[k].out, onto=v)
            case ("add", a, b):
                return program.node("plus", (build(a, v), build(b, v)))
            case ("mul", a, b):
                return build(a, build(b, v))
        raise ValueError(t[0])

    try:
        return program, build(tree, 0)
    except (ValueError, KalgSemanticError):  # another node, or a leaf the cpu cannot take
        return None


SEPARATE_OVER_TAPS = 25
"""Real kernels with more taps than this that are separable are seeded through their factors: the
analyses of a whole literal grow with its taps faster than those of its row and column, and a
large literal's seeds fill the e-graph to its node cap before the window rules can form runs.
The bound is a 5x5 kernel."""

SEARCH_MAX_TAPS = 121
"""Non-separable real kernels with more taps than this (11x11) skip the search and are applied tap
by tap: the analyses' time grows faster than the taps, and past this size the search costs tens
of seconds for a small saving. The direct form is always correct, so the bound changes only
speed."""


def _real_facts(k: Kernel, max_literals: int) -> str | None:
    """egglog facts for an integer real kernel: the analyses' seeds (of k, or of its separable
    factors when it is large), and every literal that is a run of ones as a `KRun` (a window in
    one step, whatever its length); None when the kernel is too large to search."""
    sep = analyses.separation(k) if len(k) > SEPARATE_OVER_TAPS else None
    if sep is not None:
        # a literal budget per factor, growing with its taps: the factors of (1 + x)^14 shared
        # 30 literals and the row got a poor form (a 15x15 binomial 96 ops, not 29)
        budget = 2 * max(max_literals, 2 * max(len(sep[0]), len(sep[1])))
        seeds = analyses.seed({"r": sep[0], "c": sep[1]}, budget)
        root = f"(KCompose {seeds.roots['r']} {seeds.roots['c']})"
    elif len(k) > SEARCH_MAX_TAPS:
        return None
    else:
        seeds = analyses.seed({"out": k}, max_literals)
        root = seeds.roots["out"]
    runs = [f'(union (Lit "{key}") {run})' for key, lit in seeds.literals.items()
            if (run := _run(lit)) is not None]
    return "\n".join([f"(let $k_out {root})", *runs]
                     + [f"(union {lit} {term})" for lit, term, _ in seeds.unions])


def _run(k: Kernel) -> str | None:
    """`(KRun ax ay dx dy n)` when k is n >= 3 ones at a, a + d, ..., a + (n-1)d, else None."""
    offsets = [o for o, _ in k.entries]
    if len(offsets) < 3 or any(c != 1 for _, c in k.entries):
        return None
    (ax, ay), (bx, by) = offsets[0], offsets[1]
    d = (bx - ax, by - ay)
    if any(offsets[i] != (ax + i * d[0], ay + i * d[1]) for i in range(len(offsets))):
        return None
    return f"(KRun {ax} {ay} {d[0]} {d[1]} {len(offsets)})"


def _integer_part(k: Kernel) -> tuple[Fraction, Kernel]:
    """(s, K') with k = s·K', K' integer with coprime coefficients and s > 0 an exact rational
    (1 for an integer kernel). Dyadic kernels too: on a CPU one multiplication by 1/256 costs
    less than the eight halvings SCAMP-5 would interleave."""
    if all(isinstance(c, int) for _, c in k.entries):
        return Fraction(1), k
    values = [Fraction(c) for _, c in k.entries]
    numerators = math.gcd(*(v.numerator for v in values))
    denominators = math.lcm(*(v.denominator for v in values))
    s = Fraction(numerators, denominators)
    return s, Kernel.of({o: Fraction(c) / s for o, c in k.entries})


def direct_ops(k: Kernel) -> int:
    """Operations per pixel of the tap-by-tap form (`Passes.direct`): one ⊕ or subtraction per
    tap after the first, one ⊗ (multiply, or add a weight) per tap that needs one."""
    program = Passes(k.semiring)
    return program.ops(program.direct(k.trimmed()))


# ------------------------------------------------------------------ semiring seeds
def _weight_unit(k: Kernel) -> tuple[int, Kernel]:
    """(u, K') with K' the min/max-plus kernel k with every weight times u, the least common
    denominator of its weights: K' has integer weights (what the e-graph's taps hold). Adding
    a constant is linear, so a decomposition of K' with every weight over u is one of k (a
    chamfer step of 1 and 7/5: weights 5 and 7, then over 5)."""
    if k.semiring is BOOLEAN:
        return 1, k
    weights = [Fraction(c) for _, c in k.entries if math.isfinite(c)]
    unit = math.lcm(*(w.denominator for w in weights)) if weights else 1
    if unit == 1:
        return 1, k
    return unit, Kernel.of({o: c * unit if math.isfinite(c) else c for o, c in k.entries},
                           k.semiring)


def _weights_over(term: Term, unit: int) -> Term:
    """`term` with the weight of every min/max-plus tap divided by `unit` (`_weight_unit`)."""
    if not isinstance(term, list):
        return term
    if term[0] in ("MinTap", "MaxTap"):
        x, y, w = term[1:]
        return [term[0], x, y, Fraction(w, unit)]
    return [term[0], *(_weights_over(t, unit) for t in term[1:])]


def seed_semiring(k: Kernel, max_literals: int = 30) -> list[str]:
    """egglog facts for a min-plus, max-plus or Boolean kernel: `$k_out` is its literal, and every
    literal met is unioned with its entries, its separable split and its 1-D splits (exact)."""
    lit_op = _SORT[k.semiring.name][0]
    for _, c in k.entries:
        if k.semiring is not BOOLEAN and not (
                isinstance(c, int) or (isinstance(c, Fraction) and c.denominator == 1)):
            raise KalgSemanticError(f"the cpu optimizer takes finite {k.semiring.name} weights; "
                                    f"this kernel has {c}, which makes every output {c} (leave "
                                    "an entry out with '.')")
    keys: dict[str, Kernel] = {}

    def lit(j: Kernel) -> str:
        key = " ".join(f"{x},{y}:{c}" for (x, y), c in j.entries)
        keys.setdefault(key, j)
        return f'({lit_op} "{key}")'

    lines = [f"(let $k_out {lit(k)})"]
    done: set[str] = set()
    while pending := [key for key in keys if key not in done]:
        if len(done) >= max_literals:
            break
        key = pending[0]
        done.add(key)
        j = keys[key]
        this = f'({lit_op} "{key}")'
        lines.append(f"(union {this} {_entries(j)})")
        for a, b in [*_separable(j), *_line_splits(j)]:
            lines.append(f"(union {this} ({_SORT[j.semiring.name][3]} {lit(a)} {lit(b)}))")
    return lines


def _entries(j: Kernel) -> str:
    _, tap, plus, _ = _SORT[j.semiring.name]
    if j.semiring is BOOLEAN:
        taps = [f"({tap} {x} {y})" for (x, y), _ in j.entries]
    else:
        taps = [f"({tap} {x} {y} {int(c)})" for (x, y), c in j.entries]
    return balanced_sum(taps, op=plus)


def _separable(j: Kernel) -> list[tuple[Kernel, Kernel]]:
    """K = R ⊗ C when K's domain is a full rectangle (at least 2x2) and K(x, y) = R(x) ⊗ C(y)."""
    xs = sorted({x for (x, _), _ in j.entries})
    ys = sorted({y for (_, y), _ in j.entries})
    if len(xs) < 2 or len(ys) < 2 or len(j) != len(xs) * len(ys):
        return []
    taps, s, x0, y0 = j.taps, j.semiring, xs[0], ys[0]
    if s is BOOLEAN:
        r = Kernel.of({(x, 0): True for x in xs}, s)
        c = Kernel.of({(0, y): True for y in ys}, s)
    else:
        r = Kernel.of({(x, 0): taps[(x, y0)] for x in xs}, s)
        c = Kernel.of({(0, y): taps[(x0, y)] - taps[(x0, y0)] for y in ys}, s)
    return [_balance(r, c)] if r.compose(c).same_values(j) else []


def _line_splits(j: Kernel, max_splits: int = 2) -> list[tuple[Kernel, Kernel]]:
    """R = A ⊗ B for a 1-D kernel R on a full run of offsets along x or y (length >= 3): A is R
    restricted to a window, B the residual (the largest kernel with A ⊗ B below R in the
    semiring's order) less the entries it does not need; kept when A ⊗ B equals R exactly. Most
    balanced windows first."""
    xs = sorted({x for (x, _), _ in j.entries})
    ys = sorted({y for (_, y), _ in j.entries})
    if len(ys) == 1:
        axis, line = (1, 0), xs
    elif len(xs) == 1:
        axis, line = (0, 1), ys
    else:
        return []
    lo, hi = line[0], line[-1]
    n = hi - lo + 1
    if n < 3 or len(line) != n:
        return []
    fixed = (0, ys[0]) if axis == (1, 0) else (xs[0], 0)

    def at(i: int) -> tuple[int, int]:
        return (i, fixed[1]) if axis == (1, 0) else (fixed[0], i)

    taps, s = j.taps, j.semiring
    found = []
    for a in sorted(range(2, n), key=lambda a: (abs(2 * a - n - 1), a)):
        for start in range(lo, hi - a + 2):
            window = range(start, start + a)
            fa = Kernel.of({at(i): taps[at(i)] for i in window}, s)
            fb = Kernel.of({_along(axis, t): _residual(s, [taps[at(t + i)] for i in window],
                                                       [taps[at(i)] for i in window])
                            for t in range(lo - start, hi - (start + a - 1) + 1)}, s)
            if fa.compose(fb).same_values(j):
                found.append(_balance(fa, _prune(fa, fb, j)))
                break
        if len(found) >= max_splits:
            break
    return found


def _prune(a: Kernel, b: Kernel, target: Kernel) -> Kernel:
    """b without the entries a ⊗ b does not need: ⊕ is idempotent in every semiring here, so
    overlapping windows may cover an offset twice (a run of 7 = a run of 4 ⊗ (1 ⊕ x^3))."""
    taps = dict(b.entries)
    for o in sorted(taps, key=lambda o: (abs(o[0]) + abs(o[1]), o)):
        if len(taps) <= 2:
            break
        rest = Kernel.of({p: c for p, c in taps.items() if p != o}, b.semiring)
        if a.compose(rest).same_values(target):
            del taps[o]
    return Kernel.of(taps, b.semiring)


def _balance(a: Kernel, b: Kernel) -> tuple[Kernel, Kernel]:
    """(a ⊗ -c, b ⊗ c) for the constant c that gives the most entries equal to the one (0), which
    cost nothing to apply; a ⊗ b is unchanged. Boolean factors have no weights."""
    if a.semiring is BOOLEAN:
        return a, b
    candidates = sorted({c for _, c in a.entries} | {-c for _, c in b.entries},
                        key=lambda c: (abs(c), c))

    def ones(c) -> int:
        return (sum(1 for _, w in a.entries if w == c) + sum(1 for _, w in b.entries if w == -c))

    best = max(candidates, key=ones)  # max keeps the first best: the smallest |c|
    return a.scale(-best), b.scale(best)


def _along(axis: tuple[int, int], t: int) -> tuple[int, int]:
    return (t * axis[0], t * axis[1])


def _residual(s: Semiring, targets: list, factors: list):
    """The largest b with factor ⊗ b ≤ target for every pair (in the semiring's order)."""
    if s is BOOLEAN:
        return all(targets)
    if s is MINPLUS:
        return max(t - f for t, f in zip(targets, factors, strict=True))
    return min(t - f for t, f in zip(targets, factors, strict=True))


# ------------------------------------------------------------------ extraction to a term
def _term(graph: extract.Graph, choice: extract.Choice, cid: str) -> Term:
    node = graph.nodes[choice[cid]]
    return [node.op, *node.args, *(_term(graph, choice, c) for c in node.children)]


def _text(term: Term) -> str:
    if not isinstance(term, list):
        return str(term)
    return "(" + " ".join(_text(t) for t in term) + ")"


def _forms(term: Term) -> list[str]:
    ops: set[str] = set()

    def walk(t: Term) -> None:
        if isinstance(t, list):
            ops.add(t[0])
            for a in t[1:]:
                walk(a)

    walk(term)
    found = []
    if "KPrefix" in ops:
        found.append("sliding window / integral image (running sums)")
    if ops & {"KCompose", "MinCompose", "MaxCompose", "BoolCompose"}:
        found.append("composition of factors")
    return found or ["direct"]


# ------------------------------------------------------------------ passes: count and run
@dataclass(frozen=True, slots=True)
class Pass:
    """One value: `op` on earlier values; shifts are (value, dx, dy) operands, free addressing."""

    op: str
    args: tuple
    param: tuple = ()


class Passes:
    """The passes that apply a term to the input (value 0), built with hash-consing so that a
    pass on the same operands is made once; `run` evaluates them on an image."""

    def __init__(self, semiring: Semiring) -> None:
        self.semiring = semiring
        self.values: list[Pass] = [Pass("input", ())]
        self._index: dict[Pass, int] = {self.values[0]: 0}

    def _make(self, p: Pass) -> int:
        if p not in self._index:
            self._index[p] = len(self.values)
            self.values.append(p)
        return self._index[p]

    def node(self, op: str, args: tuple[int, ...], param: tuple = ()) -> int:
        """The value of pass `op` on `args` (hash-consed)."""
        return self._make(Pass(op, tuple(args), tuple(param)))

    def shift(self, v: int, dx: int, dy: int) -> int:
        if (dx, dy) == (0, 0):
            return v
        inner = self.values[v]
        if inner.op == "shift":
            return self.shift(inner.args[0], dx + inner.param[0], dy + inner.param[1])
        return self._make(Pass("shift", (v,), (dx, dy)))

    def apply(self, term: Term, v: int) -> int:
        """The value of `term` applied to value v (correlation: out(p) = ⊕_o K(o) ⊗ v(p + o))."""
        op, *args = term
        match op:
            case "Sh" | "BoolTap":
                return self.shift(v, args[0], args[1])
            case "MinTap" | "MaxTap":
                moved = self.shift(v, args[0], args[1])
                return moved if args[2] == 0 else self._make(Pass("weight", (moved,), (args[2],)))
            case "KAdd" | "MinMin" | "MaxMax" | "BoolOr":
                return self._make(Pass("plus", (self.apply(args[0], v), self.apply(args[1], v))))
            case "KSub":
                return self._make(Pass("sub", (self.apply(args[0], v), self.apply(args[1], v))))
            case "KNeg":
                return self._make(Pass("neg", (self.apply(args[0], v),)))
            case "KHalf":
                return self._make(Pass("half", (self.apply(args[0], v),)))
            case "KCompose" | "MinCompose" | "MaxCompose" | "BoolCompose":
                return self.apply(args[0], self.apply(args[1], v))
            case "KPrefix":
                return self._make(Pass("prefix", (v,), (args[0], args[1])))
        raise ValueError(f"cannot apply e-node {op} (not an extractable term)")

    def direct(self, k: Kernel) -> int:
        """The tap-by-tap form of k applied to the input: each tap's shifted input, weighted,
        ⊕-summed in offset order; real taps of -1 are subtracted (one taken first is negated)."""
        s, acc = self.semiring, None
        minus_one = s is REAL
        for (dx, dy), c in sorted(k.entries, key=lambda e: (minus_one and e[1] == -1, e[0])):
            v = self.shift(0, dx, dy)
            if s is REAL and c == -1 and acc is not None:
                acc = self._make(Pass("sub", (acc, v)))
                continue
            if s is REAL and c != 1:
                v = self._make(Pass("scale", (v,), (c,)))
            elif s is not REAL and s is not BOOLEAN and c != 0:
                v = self._make(Pass("weight", (v,), (c,)))
            acc = v if acc is None else self._make(Pass("plus", (acc, v)))
        return acc

    def live(self, out: int) -> list[int]:
        """The values `out` depends on, in order."""
        return reachable(self.values, [out])

    def ops(self, out: int) -> int:
        """Operations per pixel: every live value that is not the input or a move."""
        return sum(1 for i in self.live(out) if self.values[i].op not in ("input", "shift"))

    def listing(self, out: int) -> list[str]:
        """One line per operation, in order; moves appear as `vN@(dx,dy)` operands."""
        names = {"plus": {"real": "add", "minplus": "min", "maxplus": "max",
                          "boolean": "or"}[self.semiring.name],
                 "sub": "sub", "neg": "neg", "half": "half", "weight": "add_const", "scale": "mul",
                 "prefix": "running_sum"}

        def operand(i: int) -> str:
            p = self.values[i]
            if p.op == "shift":
                return f"v{p.args[0]}@({p.param[0]},{p.param[1]})"
            return f"v{i}"

        lines = []
        for i in self.live(out):
            p = self.values[i]
            if p.op in ("input", "shift"):
                continue
            params = ""
            if p.op in ("weight", "scale"):
                params = f", {p.param[0]}"
            elif p.op == "prefix":
                params = f", along ({p.param[0]},{p.param[1]})"
            lines.append(f"v{i} = {names[p.op]}({', '.join(operand(a) for a in p.args)}{params})")
        lines.append(f"out <- {operand(out)}")
        return lines

    def input(self, channel: int = 0) -> int:
        """The value of input channel `channel` (0, the first, is value 0; a filter over
        several inputs has one `input` pass per channel, its index as parameter)."""
        return 0 if channel == 0 else self._make(Pass("input", (), (channel,)))

    def inputs(self) -> list[int]:
        """The input values (one per channel used), value 0 first."""
        return [i for i, p in enumerate(self.values) if p.op == "input"]

    def listing_all(self, outs: dict[str, int], inputs: list[str]) -> list[str]:
        """`listing` of several outputs sharing passes, over named input channels: a line per
        input (`vN = input A`), per operation, and per output (`C <- vN`)."""
        live = self.live_all(list(outs.values()))
        names = {i: inputs[(self.values[i].param or (0,))[0]] for i in self.inputs()}
        head = [f"v{i} = input {names[i]}" for i in live if i in names]
        body = []
        for i in live:
            if i not in names and self.values[i].op != "shift":
                body.append(self.listing(i)[-2])  # the pass's own line
        tail = []
        for name, v in outs.items():
            tail.append(f"{name} <- {self.listing(v)[-1].removeprefix('out <- ')}")
        return head + body + tail

    def copy(self, other: Passes, v: int, channel: int | None = None,
             onto: int | None = None) -> int:
        """Value v of `other`, rebuilt here (hash-consed: passes already here are reused).
        other's input (a one-input program) becomes this program's value `onto`, else its
        input `channel`; with neither, other's channels are kept. Each value of `other` is
        rebuilt once (a value read twice, as a binomial's doublings are, is not rebuilt twice:
        that was exponential in the depth, minutes for a 15x15 binomial)."""
        done: dict[int, int] = {}
        # in topological order (every pass reads earlier ones), not by recursion: a direct
        # form is a chain of one pass per tap, deeper than Python's stack for a 23x23 kernel
        for i in reachable(other.values, [v]):
            p = other.values[i]
            if p.op == "input":
                done[i] = onto if onto is not None else self.input(
                    channel if channel is not None else (p.param or (0,))[0])
                continue
            args = tuple(done[a] for a in p.args)
            done[i] = (self.shift(args[0], *p.param) if p.op == "shift"
                       else self._make(Pass(p.op, args, p.param)))
        return done[v]

    def live_all(self, outs: list[int]) -> list[int]:
        """The values any of `outs` depends on, in order."""
        return reachable(self.values, outs)

    def scaled(self, v: int, factor: Fraction) -> int:
        """Value v multiplied by an exact rational (one `scale` pass)."""
        return self._make(Pass("scale", (v,), (factor,)))

    def regions(self, outs: list[int]) -> dict[int, Margins]:
        """How far beyond the image each live value is needed, as (top, bottom, left, right)
        rows and columns, when the values `outs` are computed over the image: a move reads its
        value further out, a running sum reads its value over its own region (it is truncated at
        that region's far edge, which every finite combination of running sums cancels). Bounded
        by the kernel's reach along any path, not by the sum of all moves."""
        need: dict[int, Margins] = {o: (0, 0, 0, 0) for o in outs}
        for i in reversed(reachable(self.values, outs)):
            p, (t, b, le, r) = self.values[i], need.get(i, (0, 0, 0, 0))
            dx, dy = p.param if p.op == "shift" else (0, 0)
            # a read at offset (dx, dy) is column + dx and row - dy (y is north)
            m = (max(0, t + dy), max(0, b - dy), max(0, le - dx), max(0, r + dx))
            for j in p.args:
                need[j] = tuple(max(u, w) for u, w in zip(need.get(j, m), m, strict=True))
        return need

    def run(self, image: np.ndarray | list[np.ndarray], outs: list[int],
            border: Border = DEFAULT_BORDER) -> list[np.ndarray]:
        """Evaluate the values `outs` over `image` (or a list of images, one per input channel,
        all of one shape) extended by `border`, in exact arithmetic
        for real kernels (Python ints and Fractions), floats for min/max-plus, bools for
        Boolean; each value is computed over its region (`regions`) only."""
        images = image if isinstance(image, list | tuple) else [image]
        s, (h, w) = self.semiring, images[0].shape
        need = self.regions(outs)
        vals: dict[int, np.ndarray] = {}
        for i in reachable(self.values, outs):
            p, m = self.values[i], need[i]
            a = [_crop(vals[j], need[j], m, h, w) for j in p.args]
            match p.op:
                case "input":
                    vals[i] = border.pad(_exact(images[(p.param or (0,))[0]], s), *m)
                case "shift":
                    vals[i] = _crop(vals[p.args[0]], need[p.args[0]], m, h, w, *p.param)
                case "plus":
                    vals[i] = {"real": np.add, "minplus": np.minimum, "maxplus": np.maximum,
                               "boolean": np.logical_or}[s.name](a[0], a[1])
                case "sub":
                    vals[i] = a[0] - a[1]
                case "neg":
                    vals[i] = -a[0]
                case "half":
                    vals[i] = a[0] * Fraction(1, 2)
                case "weight":
                    vals[i] = a[0] + p.param[0]
                case "scale":
                    vals[i] = a[0] * Fraction(p.param[0])
                case "prefix":
                    vals[i] = _running_sum(a[0], p.param[0], p.param[1])
        return [_crop(vals[o], need[o], (0, 0, 0, 0), h, w) for o in outs]


Margins = tuple[int, int, int, int]


def _exact(image: np.ndarray, s: Semiring) -> np.ndarray:
    """An integer image as Python ints (sums, rational weights and scales stay exact), or as
    booleans for a Boolean kernel."""
    if s is BOOLEAN:
        return np.asarray(image) != 0
    return np.asarray(image).astype(int).astype(object)


def _crop(a: np.ndarray, have: Margins, want: Margins, h: int, w: int, dx: int = 0, dy: int = 0,
          ) -> np.ndarray:
    """The part of `a` (a value over the image plus margins `have`) that a read at offset
    (dx, dy) sees over the image plus margins `want`."""
    rows = have[0] - want[0] - dy
    cols = have[2] - want[2] + dx
    return a[rows: rows + h + want[0] + want[1], cols: cols + w + want[2] + want[3]]


def _running_sum(a: np.ndarray, dx: int, dy: int) -> np.ndarray:
    """out(p) = Σ_{k >= 0} a(p + k·d) over the array, reads past its far edge being 0: the
    running sum truncated at the region's edge. Row step -dy (y is north), column step dx."""
    out = a.copy()
    h, w = a.shape
    rstep, cstep = -dy, dx
    rows = range(h - 1, -1, -1) if rstep > 0 else range(h)
    if rstep == 0:  # along a row: sweep columns from the far end
        for c in (range(w - 1, -1, -1) if cstep > 0 else range(w)):
            if 0 <= c + cstep < w:
                out[:, c] = out[:, c] + out[:, c + cstep]
        return out
    for r in rows:
        if 0 <= r + rstep < h:
            src = out[r + rstep]
            lo, hi = max(0, -cstep), min(w, w - cstep)
            if lo < hi:
                out[r, lo:hi] = out[r, lo:hi] + src[lo + cstep: hi + cstep]
    return out


VERIFY_CASES = ((17, 13, "replicate"), (4, 3, "wrap"))
"""(rows, columns, border) of the random images every decomposition is checked on: an odd size
and one smaller than most kernels, with two different borders."""


def verify(program: Passes, out: int, kernel: Kernel) -> str:
    """Run the passes on random bordered images and compare exactly with the kernel applied to
    the same bordered image; raise VerificationError on any difference."""
    rng = np.random.default_rng(0)
    s = kernel.semiring
    for h, w, mode in VERIFY_CASES:
        border = Border(mode)
        image = rng.random((h, w)) < 0.3 if s is BOOLEAN else rng.integers(-8, 9, (h, w))
        got = program.run(image, [out], border)[0]
        want = reference(kernel, image, border)
        if got.shape != want.shape or not np.array_equal(got, want):
            bad = int(np.sum(got != want))
            raise VerificationError(f"the cpu decomposition differs from the kernel at {bad} of "
                                    f"{got.size} pixels ({h}x{w} image, border {mode})",
                                    "\n".join(program.listing(out)))
    kind = "binary" if s is BOOLEAN else "integer"
    cases = ", ".join(f"{h}x{w} {m}" for h, w, m in VERIFY_CASES)
    return f"exactly, on random {kind} images ({cases} borders) against the direct kernel"


def verify_channels(program: Passes, out: int, parts: list[Kernel | None]) -> str:
    """`verify` for an output over several input channels: `parts[c]` is the kernel applied
    to channel c (None where the output does not read it). The passes run on random bordered
    images, one per channel, and must equal exactly the sum over channels of each kernel
    applied to its bordered image; VerificationError otherwise."""
    rng = np.random.default_rng(0)
    for h, w, mode in VERIFY_CASES:
        border = Border(mode)
        images = [rng.integers(-8, 9, (h, w)) for _ in parts]
        got = program.run(images, [out], border)[0]
        want = sum((reference(k, img, border) for k, img in zip(parts, images, strict=True)
                    if k is not None), np.zeros((h, w), dtype=object))
        if got.shape != want.shape or not np.array_equal(got, want):
            bad = int(np.sum(got != want))
            raise VerificationError(f"the cpu decomposition over {len(parts)} inputs differs "
                                    f"from the sum of its kernels at {bad} of {got.size} pixels "
                                    f"({h}x{w} images, border {mode})",
                                    "\n".join(program.listing(out)))
    cases = ", ".join(f"{h}x{w} {m}" for h, w, m in VERIFY_CASES)
    return (f"exactly, on random integer images per input ({cases} borders) against the sum "
            "of the direct kernels")


def reference(kernel: Kernel, image: np.ndarray, border: Border) -> np.ndarray:
    """The kernel correlated with `image` extended by `border`, exact on integer images (Python
    ints and Fractions; booleans for a Boolean kernel)."""
    s, r = kernel.semiring, kernel.radius()
    h, w = image.shape
    padded = border.pad(_exact(image, s), r, r, r, r)
    # one correlation for every semiring, on exact values (ints, Fractions, booleans)
    terms = (s.mul(padded[r - y: r - y + h, r + x: r + x + w], c) for (x, y), c in kernel.entries)
    return functools.reduce(np_add(s), terms, np.full((h, w), s.zero, dtype=padded.dtype))


def format_result(name: str, results: dict[str, CpuResult]) -> str:
    """The report `kalg optimize --target cpu` prints: per output, the passes and the cost."""
    lines = [f"# {name}: cpu target, operations per output pixel (moves are free addressing)"]
    for reg, r in sorted(results.items()):
        head = f"output {reg}" if len(results) > 1 else "output"
        lines += [f"# {head}: {r.kernel.semiring.name} kernel with {len(r.kernel.trimmed())} taps",
                  f"# cost: {r.ops} ops/pixel (direct, tap by tap: {r.direct_ops})",
                  f"# form: {', '.join(r.forms)}",
                  f"# term: {r.term}",
                  f"# verified: {r.verified}",
                  *r.passes]
    if len(results) > 1:
        lines.append(f"# total: {sum(r.ops for r in results.values())} ops/pixel")
    return "\n".join(lines) + "\n"


def optimize_outputs(outputs: dict[str, Kernel], limits: engine.SaturationLimits = DEFAULT_LIMITS,
                     ) -> dict[str, CpuResult]:
    """`optimize_cpu` for every output of a kernel or filter, in register order."""
    return {reg: optimize_cpu(k, limits) for reg, k in sorted(outputs.items())}


__all__ = ["CpuResult", "Passes", "direct_ops", "format_result", "optimize_cpu",
           "optimize_outputs", "reference", "seed_semiring", "verify", "verify_channels"]
