"""A filter as sums of shifted copies of one unit, with shifted partial sums shared across outputs.

Every output kernel with coefficients in 2^-m·Z is an integer multiset of *terms* ±S^d b: a base
b = 2^j·u of the input's halving chain (u = input / 2^m, made once by m halvings; the chain's
values 2u, 4u, ... up to the input itself are kept as bases up to a chosen top) read at offset
d. Each coefficient is written in binary or in signed digits (7 = 8 - 1) over the bases (a
digit above the top repeats the top base: doubling by repeated atoms).

**Sharing.** Two kinds of extraction make a new value out of terms that several places use:

* a *pair pattern* P = a ± S^δ b occurring (without overlap) most often over all sums, at any
  anchor offset (Hartley's method for constant multiplication, over 2-D shifts): made once by
  |δ| moves and one addition (a value with itself at δ = 0 is a doubling: a copy and an add,
  since `add` needs two different registers); every occurrence becomes one term S^d P;
* the *common part* C = X ∩ S^δ Y of two sums X, Y (outputs or values already made), for
  every shift δ: made once as a sum V; X gets the term S^a V and Y the term S^(a-δ) V.

A beam search (`BEAM` plans, `MAX_ROUNDS` rounds) takes, each round, the extractions of lowest
estimated length, builds their programs, and keeps the plans whose programs are shortest: a
plan whose values do not fit the registers has no program, so register pressure decides which
sharing is taken.

**Code.** Each sum (an output in its own register, or a shared value) is accumulated by a walk
over its terms' offsets (Horner in shift space: add the terms at an offset, move the
accumulator one step at a time to the next, end at the origin; the shortest walk, exact over
subsets). Values are made just before the first output that reads them and freed after their
last read; registers are assigned by a linear scan within the given registers, the input in
its register until its last read, each output's accumulator in its register (the last output
may instead be built anywhere and moved, where that fits and pinned does not).

`cse_program` returns the shortest program over the tops, digit forms, rounds and two output
orders, all bounded by counts; it does not verify: the caller (`codegen.cse_filter`) verifies
it exactly.
"""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Mapping, Sequence

from kalg.algebra.kernel import Kernel
from kalg.targets.scamp5.codegen.virtual import allocate, integer_matrix, rungs
from kalg.targets.scamp5.machine.isa import Dir, Instr

Offset = tuple[int, int]
Term = tuple[int, Offset, int]
"""(value id, offset, sign ±1): S^offset value, added or subtracted."""

MAX_OUTPUTS = 3
"""Filters of more outputs get no program here: measured, none was shorter than the shared
matrix's (5 outputs on 6 registers: 170 against 90), and the work grows with the pairs of
sums (10 outputs on 18 registers: 21 s of CPU)."""
MAX_TAPS = 27
"""Filters whose outputs have more non-zero taps in all get no program here (as many as three
3x3 kernels, what the construction was measured on): the work grows with the pairs of shifted
sums, and on gauss5_gauss3 (25 + 9 taps, op set basic) it took 6.3 s of CPU for 41
instructions against the shared matrix's 24, doubling that compile's time."""
MAX_ROUNDS = 24
"""Rounds of pattern extraction at most (each round one new value)."""
CANDIDATES = 12
"""Most frequent patterns whose effect on the estimated length is computed each round."""
FIT_TRIES = 12
"""Candidates of a round whose program is built to see whether it fits, at most."""
BEAM = 3
"""Plans kept from one round to the next."""
EXACT_WALK = 10
"""Outputs with more distinct offsets than this get a nearest-first walk, not the exact one."""


def cse_program(outputs: Mapping[str, Kernel], registers: Sequence[str], input_register: str,
                op_set: str) -> list[Instr] | None:
    """The shortest program this construction finds for the filter `outputs` (output register
    → kernel over the input in `input_register`) within `registers`, or None (a non-dyadic or
    zero kernel, or no plan fits). Instructions: movx, add, sub, neg, mov and the halvings
    (divq in op set basic, div in op set all). Deterministic; not verified here. At most
    `MAX_OUTPUTS` outputs and `MAX_TAPS` taps."""
    small = (len(outputs) <= MAX_OUTPUTS
             and sum(c != 0 for k in outputs.values() for c in k.taps.values()) <= MAX_TAPS)
    scaled = integer_matrix(outputs) if small else None
    if scaled is None:
        return None
    m, columns = scaled
    best: list[Instr] | None = None
    for rung in rungs(registers, columns, input_register):
        program = _search(columns, m, rung, input_register, op_set)
        if program is not None and (best is None or len(program) < len(best)):
            best = program
    return best


def _search(columns: dict, m: int, registers: Sequence[str], input_register: str,
            op_set: str) -> list[Instr] | None:
    """The shortest program over the tops, digit forms and rounds of extraction."""
    tops = range(m + 1) if op_set == "basic" else (0,)
    best: list[Instr] | None = None
    for top, signed in itertools.product(tops, (False, True)):
        if signed and all(_digits(c, top, True) == _digits(c, top, False)
                          for col in columns.values() for c in col.values()):
            continue
        for program in _plans(columns, m, top, signed, registers, input_register, op_set):
            if best is None or len(program) < len(best):
                best = program
    return best


# ---------------------------------------------------------------------- the plan (values, terms)

class _Plan:
    """Values (the chain's bases and the patterns) and each output's terms."""

    def __init__(self, columns: dict[str, dict], m: int, top: int, signed_digits: bool):
        self.m, self.top = m, top
        self.values: dict[int, tuple] = {j: ("base", j) for j in range(top + 1)}
        self.terms: dict = {}
        for reg, col in columns.items():
            terms: Counter = Counter()
            for d, c in col.items():
                for j, sign in _digits(c, top, signed_digits):
                    terms[(j, d, sign)] += 1
            self.terms[reg] = terms

    def copy(self) -> _Plan:
        other = object.__new__(_Plan)
        other.m, other.top, other.values = self.m, self.top, dict(self.values)
        other.terms = {r: Counter(t) for r, t in self.terms.items()}
        return other

    def signature(self) -> tuple:
        """The plan up to value numbering order (for removing duplicates in the beam)."""
        terms = sorted((str(r), tuple(sorted(t.items()))) for r, t in self.terms.items())
        return tuple(terms), tuple(sorted(self.values.items()))

    def cost(self) -> int:
        """Estimated instructions: halvings, patterns, and each output's walk."""
        total = self.m
        for v in self.values.values():
            if v[0] == "pair":
                total += _pattern_cost(v)
        for terms in self.terms.values():
            total += _output_cost(terms)
        return total


def _digits(c: int, top: int, signed_digits: bool) -> list[tuple[int, int]]:
    """c as a sum of ±2^j (j <= top; a power above top repeats 2^top): the binary digits, or
    the non-adjacent form (fewest nonzero signed digits: 7 = 8 - 1)."""
    sign, c = (1 if c > 0 else -1), abs(c)
    digits, j = [], 0
    while c:
        if c & 1:
            z = (2 - c % 4) if signed_digits else 1
            digits.append((j, z * sign))
            c -= z
        c >>= 1
        j += 1
    return [(min(j, top), s) for j, s in digits for _ in range(1 << max(j - top, 0))]


def _pattern_cost(value: tuple) -> int:
    _, a, b, delta, _ = value
    return abs(delta[0]) + abs(delta[1]) + 1 + (a == b and delta == (0, 0))


def _output_cost(terms: Counter) -> int:
    n = sum(terms.values())
    offsets = {d for (_, d, _), k in terms.items() if k}
    first_negative = all(s < 0 for (_, _, s), k in terms.items() if k)
    return n - 1 + _walk_length(offsets) + first_negative + (n == 1 and offsets == {(0, 0)})


def _walk(offsets: set[Offset]) -> list[Offset]:
    """The offsets in the order of the shortest walk that ends at the origin (Manhattan)."""
    points = sorted(offsets)
    if len(points) <= 1:
        return points
    if len(points) > EXACT_WALK:
        return _nearest_walk(points)
    return _exact_walk(tuple(points))


_WALKS: dict[tuple, list] = {}


def _exact_walk(points: tuple[Offset, ...]) -> list[Offset]:
    if (hit := _WALKS.get(points)) is not None:
        return hit
    n = len(points)
    dist = [[_manhattan(p, q) for q in points] for p in points]
    # best[mask][i]: shortest walk over `mask` starting at i, ending at the origin.
    best = [[0] * n for _ in range(1 << n)]
    nxt = [[-1] * n for _ in range(1 << n)]
    for i in range(n):
        best[1 << i][i] = _manhattan(points[i], (0, 0))
    for mask in range(1, 1 << n):
        for i in range(n):
            if not mask >> i & 1 or mask == 1 << i:
                continue
            rest = mask & ~(1 << i)
            choice = min((dist[i][j] + best[rest][j], j) for j in range(n) if rest >> j & 1)
            best[mask][i], nxt[mask][i] = choice
    full = (1 << n) - 1
    _, i = min((best[full][i], i) for i in range(n))
    order, mask = [], full
    while i != -1:
        order.append(points[i])
        mask, i = mask & ~(1 << i), nxt[mask][i]
    _WALKS[points] = order
    return order


def _nearest_walk(points: list[Offset]) -> list[Offset]:
    """Backwards from the origin, the nearest point next (ties: the smaller offset)."""
    left, here, back = list(points), (0, 0), []
    while left:
        here = min(left, key=lambda p: (_manhattan(p, here), p))
        left.remove(here)
        back.append(here)
    return back[::-1]


def _walk_length(offsets: set[Offset]) -> int:
    order = _walk(offsets)
    if not order:
        return 0
    steps = sum(_manhattan(p, q) for p, q in itertools.pairwise(order))
    return steps + _manhattan(order[-1], (0, 0))


def _manhattan(p: Offset, q: Offset) -> int:
    return abs(p[0] - q[0]) + abs(p[1] - q[1])


# ---------------------------------------------------------------------- pattern extraction

def _pattern_key(t1: Term, t2: Term) -> tuple[tuple, Offset, int] | None:
    """(pattern (a, b, δ, relative sign), anchor offset, sign of the occurrence): the pair as
    sign·S^anchor (a ± S^δ b), with a canonical order of the two terms."""
    (a, d1, s1), (b, d2, s2) = sorted((t1, t2))
    delta = (d2[0] - d1[0], d2[1] - d1[1])
    return ("pair", a, b, delta, s1 * s2), d1, s1


def _count(terms: Counter, pattern: tuple) -> int:
    return _replace(Counter(terms), pattern, None)


def _replace(terms: Counter, pattern: tuple, new: int | None) -> int:
    """Occurrences of `pattern` in `terms`, taken greedily in offset order without overlap;
    with `new`, each is replaced (in place) by the term S^anchor new."""
    _, a, b, delta, rel = pattern
    count = 0
    for (v, d, s) in sorted(terms):
        if v != a:
            continue
        other = (b, (d[0] + delta[0], d[1] + delta[1]), s * rel)
        while terms[(v, d, s)] > 0 and terms[other] > (1 if other == (v, d, s) else 0):
            terms[(v, d, s)] -= 1
            terms[other] -= 1
            count += 1
            if new is not None:
                terms[(new, d, s)] += 1
    for key in [k for k, n in terms.items() if n <= 0]:
        del terms[key]
    return count


def _frequent(plan: _Plan) -> list[tuple[int, tuple]]:
    """Patterns occurring at least twice over all outputs, most frequent first (deterministic)."""
    seen: set = set()
    for terms in plan.terms.values():
        items = sorted(terms)
        for i, t1 in enumerate(items):
            for t2 in items[i:]:
                if t1 == t2 and terms[t1] < 2:
                    continue
                seen.add(_pattern_key(t1, t2)[0])
    counted = []
    for pattern in seen:
        n = sum(_count(t, pattern) for t in plan.terms.values())
        if n >= 2:
            counted.append((-n, pattern))
    counted.sort()
    return [(-n, p) for n, p in counted]


def _extract(plan: _Plan, pattern: tuple) -> _Plan:
    other = plan.copy()
    new = max(other.values) + 1
    other.values[new] = pattern
    for terms in other.terms.values():
        _replace(terms, pattern, new)
    return other


def _rounds(plan: _Plan, program_of):
    """The programs found by a beam search over rounds of extraction: each round expands every
    kept plan by the `CANDIDATES` most frequent pair patterns and every common part of two
    sums (`_common_parts`), builds the programs of the `FIT_TRIES` of lowest estimated length
    (`program_of`: None where the plan does not fit the registers, so register pressure
    decides which sharing is taken) and keeps the `BEAM` shortest programs' plans."""
    program = program_of(plan)
    if program is None:
        return
    yield program
    beam = [plan]
    for _ in range(MAX_ROUNDS):
        built, seen = [], set()
        for parent in beam:
            for after in _options(parent)[:FIT_TRIES]:
                key = after.signature()
                if key in seen:
                    continue
                seen.add(key)
                if (p := program_of(after)) is not None:
                    built.append((len(p), after.cost(), len(built), after, p))
        if not built:
            return
        built.sort(key=lambda b: b[:3])
        beam = [b[3] for b in built[:BEAM]]
        yield built[0][4]


def _options(plan: _Plan) -> list[_Plan]:
    """The plans one extraction away, lowest estimated length first (ties: generation order)."""
    options = [_extract(plan, pattern) for _, pattern in _frequent(plan)[:CANDIDATES]]
    options += _common_parts(plan)
    order = sorted(range(len(options)), key=lambda i: (options[i].cost(), i))
    return [options[i] for i in order]


def _common_parts(plan: _Plan):
    """For two sums X, Y (outputs or made sums) and a shift δ, their common part C = X ∩ S^δ Y
    (at least two terms) as a new sum V, anchored at each offset of C in turn: X gets the term
    S^a V and Y the term S^(a-δ) V in place of C."""
    keys = sorted(plan.terms, key=str)
    for x, y in itertools.combinations(keys, 2):
        tx, ty = plan.terms[x], plan.terms[y]
        dx = {d for _, d, _ in tx}
        dy = {d for _, d, _ in ty}
        shifts = sorted({(p[0] - q[0], p[1] - q[1]) for p in dx for q in dy})
        for delta in shifts:
            shifted = Counter({(v, (e[0] + delta[0], e[1] + delta[1]), s): n
                               for (v, e, s), n in ty.items()})
            common = tx & shifted
            if sum(common.values()) < 2:
                continue
            for anchor in sorted({d for _, d, _ in common}):
                yield _with_sum(plan, x, y, common, delta, anchor)


def _with_sum(plan: _Plan, x, y, common: Counter, delta: Offset, anchor: Offset) -> _Plan:
    other = plan.copy()
    new = max(other.values) + 1
    other.values[new] = ("sum",)
    other.terms[new] = Counter({(v, (d[0] - anchor[0], d[1] - anchor[1]), s): n
                                for (v, d, s), n in common.items()})
    other.terms[x] -= common
    other.terms[x][(new, anchor, 1)] += 1
    other.terms[y] -= Counter({(v, (d[0] - delta[0], d[1] - delta[1]), s): n
                               for (v, d, s), n in common.items()})
    other.terms[y][(new, (anchor[0] - delta[0], anchor[1] - delta[1]), 1)] += 1
    return other


def _plans(columns: dict[str, dict], m: int, top: int, signed: bool, registers: Sequence[str],
           input_register: str, op_set: str):
    """The programs of each round's plan (the shortest over two output orders, the last
    output pinned, else loose; the output in the input's register last, except with two
    outputs: both orders)."""
    regs = sorted(columns, key=lambda r: (r == input_register, registers.index(r)))
    if len(regs) <= 2:  # both orders (the input's register's output first pays where the
        orders = [list(o) for o in itertools.permutations(regs)]  # input dies early)
    else:
        orders = [regs, [*regs[:-1][::-1], regs[-1]]]

    def program_of(plan: _Plan) -> list[Instr] | None:
        found = []
        for order in orders:
            # the last output loose costs a move: only where pinned does not fit
            program = (_emit(plan, order, registers, input_register, op_set, False)
                       or _emit(plan, order, registers, input_register, op_set, True))
            if program is not None:
                found.append(program)
        return min(found, key=len, default=None)

    yield from _rounds(_Plan(columns, m, top, signed), program_of)


# ---------------------------------------------------------------------- code emission

def _emit(plan: _Plan, order: list[str], registers: Sequence[str], input_register: str,
          op_set: str, loose: bool) -> list[Instr] | None:
    """The plan as virtual-register code, then registers by a linear scan (None: no fit)."""
    code: list[tuple] = []  # (op, dest, sources, extra)
    made: set = set()
    halvings = _halvings(plan, op_set)

    def make(v: int) -> None:
        if v in made:
            return
        made.add(v)
        value = plan.values[v]
        if value[0] == "sum":
            for u in sorted({u for u, _, _ in plan.terms[v]}):
                make(u)
            code.extend(_walk_code(plan.terms[v], ("val", v), plan))
            return
        if value[0] == "base":
            if value[1] < plan.top:
                make(value[1] + 1)
            code.extend(halvings[value[1]])
            return
        _, a, b, delta, rel = value
        make(a)
        make(b)
        src = _name(plan, b)
        if delta != (0, 0):
            tmp = ("tmp", v)
            code.extend(_moves(tmp, src, delta))
            src = tmp
        elif a == b:
            code.append(("mov", ("tmp", v), (src,), None))
            src = ("tmp", v)
        code.append(("add" if rel > 0 else "sub", ("val", v), (_name(plan, a), src), None))

    for reg in order:
        terms = plan.terms[reg]
        for v in sorted({v for v, _, _ in terms}):
            make(v)
        code.extend(_walk_code(terms, ("out", reg), plan))
    return allocate(code, order, registers, input_register, loose)


def _halvings(plan: _Plan, op_set: str) -> dict[int, list[tuple]]:
    """The code that makes base 2^j·u (value j), given the bases above it: one halving each
    (the input is base m: no code)."""
    code: dict[int, list[tuple]] = {plan.m: []}
    chain = []
    for j in range(plan.m - 1, -1, -1):
        above = j + 1
        src = ("in",) if above == plan.m else ("val", above) if above <= plan.top else (
            "chain", above)
        dest = ("val", j) if j <= plan.top else ("chain", j)
        if op_set == "basic":
            chain.append(("divq", dest, (src,), None))
        else:
            chain.append(("div", dest, (src,), ("scratch", j)))
        if j <= plan.top:
            code[j] = list(chain)
            chain = []
    if plan.top == plan.m:
        code[plan.m] = []
    return code


def _moves(dest, src, delta: Offset) -> list[tuple]:
    """dest := S^delta src by unit moves (east/west first, then north/south)."""
    steps = []
    dx, dy = delta
    steps += [Dir.EAST if dx > 0 else Dir.WEST] * abs(dx)
    steps += [Dir.NORTH if dy > 0 else Dir.SOUTH] * abs(dy)
    code = []
    for i, step in enumerate(steps):
        code.append(("movx", dest, (src if i == 0 else dest,), step))
    return code


def _name(plan: _Plan, v: int) -> tuple:
    """The virtual register of value `v`: the input itself for base 2^m·u."""
    return ("in",) if plan.values[v] == ("base", plan.m) else ("val", v)


def _walk_code(terms: Counter, acc, plan: _Plan) -> list[tuple]:
    """acc := Σ sign·S^d value over `terms` by the shortest walk (adds at each offset, moves
    between offsets, the positive terms first so that the accumulator starts as a copy)."""
    order = _walk({d for (_, d, _) in terms})
    code: list[tuple] = []
    alias = None  # the value the accumulator is, before it is written
    started = False
    for i, d in enumerate(order):
        group = sorted((t for t in terms.elements() if t[1] == d), key=lambda t: (-t[2], t[0]))
        for v, _, s in group:
            src = _name(plan, v)
            if not started and alias is None:
                if s > 0:
                    alias = src
                else:
                    code.append(("neg", acc, (src,), None))
                    started = True
            elif not started:
                if alias == src:
                    code.append(("mov", acc, (alias,), None))
                    code.append(("add" if s > 0 else "sub", acc, (acc, src), None))
                else:
                    code.append(("add" if s > 0 else "sub", acc, (alias, src), None))
                started = True
            else:
                code.append(("add" if s > 0 else "sub", acc, (acc, src), None))
        nxt = order[i + 1] if i + 1 < len(order) else (0, 0)
        delta = (d[0] - nxt[0], d[1] - nxt[1])
        if delta != (0, 0):
            moves = _moves(acc, alias if not started else acc, delta)
            code.extend(moves)
            started = True
    if not started:
        code.append(("mov", acc, (alias,), None))
    return code
