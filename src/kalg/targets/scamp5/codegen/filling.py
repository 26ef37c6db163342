"""Filters that fill the register file: the output written last, made in place from the others.

**One output per register.** When a filter has as many outputs as registers, the program's
last phase starts when every output but one, in register L, holds its final value: from then
on only L may be written. The macros that write only L (and read it) are `add(L, L, R)`,
`add(L, L, R, R')`, `sub(L, L, R)`, `movx(L, L, d)`, `mov2x`, `addx(L, L, R, d)`,
`add2x`, `subx(L, L, d, R)` and `sub2x`; `neg(L, L)`, `sub(L, R, L)`, `divq(L, L)` and
`add(L, L, L)` are illegal, `div`/`diva` write three registers, and `mov`, `neg`, `res` into L
forget what L held. So what L held at that moment, v, is only shifted, never negated, halved or
doubled, and the others are added with integer weights: the output L must be

    K_L = S^d·v + Σ_i q_i·K_i,   q_i integer Laurent polynomials in the shifts,

and since the input is gone from every other register, v is a function of the input that L
kept while the others were made. `last_written` searches v = ±input/2^j (the input and div's
halvings and their negated copies), every shift d and constant integers q_i (a linear system
with more equations, the taps, than unknowns): for random kernels there is usually no such
output. v = 0 is searched too: `mov`, `neg` or `add` into L from the others, when K_L is an
integer combination of them. Then `_combination`: q_i polynomials over the 3x3 shifts
(45 integer unknowns, a lattice problem), v = 0 or ±s, ±2s kept in L while the others are
made, every register as L and every shift d scanned by LLL and the cheapest built. Then
`_shortest_reduced`: the outputs first reduced backwards by in-place steps K_i -= ±S^e·K_j
(`codegen.reduction`), the reduced filter made the same way and the steps undone last, in
place (on random 3x3 filters about 10% shorter). Whether shorter forms exist (wider shifts, v
not a pool value, two registers finished together) kalg does not decide; docs/scaling.md,
'One output per register', has the argument.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from fractions import Fraction

from kalg.algebra.kernel import Kernel
from kalg.targets.scamp5.codegen.matrix import (
    Offset,
    _integer_matrix,
    _split,
    _vector,
    matrix_program,
)
from kalg.targets.scamp5.codegen.reduction import reductions, replay
from kalg.targets.scamp5.machine.isa import Add, Add3, Instr, Mov, Mov2x, Movx, Neg, Sub


def last_written(outputs: Mapping[str, Kernel], registers: Sequence[str], input_register: str,
                 op_set: str) -> tuple[list[Instr] | None, str]:
    """A program for a filter with one output per register (module docstring), not yet
    verified, and a line saying which output was written last and how; or (None, why not)."""
    parts = {reg: {input_register: k} for reg, k in outputs.items()}
    problem = _integer_matrix(parts)
    if problem is None:
        return None, "a kernel is not dyadic (or its coefficients are too large)"
    m, rows = problem
    plans = sorted(_plans(rows, registers, input_register, m))
    for _, last, units, d, q in plans:
        program = _program(rows, registers, input_register, op_set, m, last, units, d,
                           q)
        if program is not None:
            terms = " ".join(f"{'+' if c > 0 else '-'} {abs(c)}·{r}" for r, c in q.items() if c)
            v = f"input/{2 ** m}·{units} shifted by {d} " if units else "from the others: "
            return program, f"{last} written last: {v}{terms}".rstrip()
    if (wide := _window(rows)) == SHIFTS:
        found = _shortest_reduced(rows, registers, input_register, op_set, m)
    else:
        found = _combination(rows, registers, input_register, op_set, m)
        if (other := _combination(rows, registers, input_register, op_set, m, shifts=wide)
                ) is not None and (found is None or len(other[0]) < len(found[0])):
            found = other
    if found is not None:
        return found
    if plans:
        return None, "no register left for the shared input while the other outputs are made"
    return None, ("no output is the input scaled by ±2^-j and shifted, plus an integer "
                  "combination of the other outputs, which is what the output written last "
                  "must be (only add, sub and shifts write one register: no negation, halving "
                  "or doubling in place)")


REDUCED = (4, 5)
"""Numbers of backward reduction steps (`reduction.reductions`) whose states are compiled
(`_shortest_reduced`). The filter itself is compiled only where none of them gives a program:
on the 40 random six-output filters measured (seeds 0-9 and 100-109, both op sets) a reduced
state was shorter every time, by 1 to 41 instructions, and each compile costs about 6 s of
CPU (a third of the whole)."""

BUILT_STATES = 2
"""How many of the reduced states are built in full, those of lowest estimate (`_scan`'s
walk of the output written last plus the replay): a state's scan costs about 3 s of CPU, its
build about 3 s more."""


def _shortest_reduced(rows, registers, ch, op_set, m) -> tuple[list[Instr], str] | None:
    """The shortest program (`_combination`) of the filter's outputs reduced backwards by
    in-place steps (`reduction.reductions`, `REDUCED` of them) with the steps replayed
    forwards (`reduction.replay`), built for the `BUILT_STATES` states of lowest estimate
    (equal lengths: the fewer steps); where none gives one, the filter's own. For kernels
    within 3x3 only (the reduction keeps them within their box; a wider window's scan costs
    too much to repeat)."""
    fused = op_set == "all"
    ranked = []
    for k, (state, steps) in enumerate(reductions(rows, registers, REDUCED)):
        if not all(state.values()):  # an output reduced to 0: a copy, not this form's case
            continue
        tail = replay(steps, fused)
        if choices := _scan(state, registers, ch, m, fused, ()):
            ranked.append((min(choices)[0] + len(tail), k, state, steps, tail, choices))
    ranked.sort(key=lambda t: t[:2])
    found, built = None, 0
    while ranked and built < BUILT_STATES:
        picked = sorted(ranked[:BUILT_STATES - built], key=lambda t: t[1])  # ties: fewer steps
        del ranked[:BUILT_STATES - built]
        for _, _, state, steps, tail, choices in picked:
            if (made := _combination(state, registers, ch, op_set, m, choices=choices)
                    ) is None:
                continue
            built += 1
            if found is None or len(made[0]) + len(tail) < len(found[0]):
                how = f"{made[1]}; the outputs reduced by {len(steps)} in-place steps"
                found = [*made[0], *tail], how
    return found or _combination(rows, registers, ch, op_set, m)


def _plans(rows, registers, input_register, m):
    """(cost, last register, v in units of s, shift d, {register: q}) for every way found."""
    ch = input_register
    offsets = sorted({d for row in rows.values() for _, d in row} | {(0, 0)})
    for last in sorted(rows, key=lambda r: (r != input_register, registers.index(r))):
        others = [r for r in sorted(rows, key=registers.index) if r != last]
        if (q := _solve(rows[last], [rows[r] for r in others])) is not None and any(q):
            yield sum(abs(c) for c in q), last, 0, (0, 0), dict(zip(others, q, strict=True))
        for j in range(m + 1):
            for sign in (1, -1):
                units = sign * 2 ** (m - j)
                for d in offsets:
                    target = dict(rows[last])
                    target[(ch, d)] = target.get((ch, d), 0) - units
                    q = _solve(target, [rows[r] for r in others])
                    if q is not None:
                        weights = dict(zip(others, q, strict=True))
                        cost = sum(abs(c) for c in q) + abs(d[0]) + abs(d[1])
                        yield cost, last, units, d, weights


SHIFTS = tuple((x, y) for x in (-1, 0, 1) for y in (-1, 0, 1))
"""Offsets at which the output written last reads the others in `_combination`; also
`_window`'s, where the kernels are wider."""


def _window(rows) -> tuple[Offset, ...]:
    """The shifts of the weights' second window: the box that holds every kernel's taps and
    `SHIFTS` (so `SHIFTS` itself for kernels within 3x3). With 3x3 shifts, five n x n kernels
    (n > 3) give 5·9 unknowns for the (n + 2)^2 taps of their shifted copies, fewer than the
    equations from n = 5 on: weights exist only by luck and are huge (a random filter with
    one 5x5 and two 5x3 kernels: 2440 instructions). Over the kernels' own box, n^2 shifts,
    the unknowns 5·n^2 outnumber the (2n - 1)^2 taps, as 45 do 25 for 3x3 kernels."""
    xs = [d[0] for row in rows.values() for _, d in row] + [-1, 1]
    ys = [d[1] for row in rows.values() for _, d in row] + [-1, 1]
    return tuple((x, y) for x in range(min(xs), max(xs) + 1)
                 for y in range(min(ys), max(ys) + 1))

KEPT_UNITS = (1, -1)
"""What the register written last may keep while the others are made, in units of s (the
input over 2^m): s and the negated copy that div makes of it (`_combination`; +-2s and +-4s
were never chosen on the study's filters)."""

KEPT_SHIFTS = tuple((x, y) for x in range(-2, 3) for y in range(-2, 3))
"""Shifts d of the kept value v in the output written last (S^d·v): a wider window than the
weights' (`SHIFTS`), each d another coset of their lattice."""

BUILT = 4
"""How many (register, kept value, shift) choices of lowest estimated walk are built in full
(`_combination`; a kept value the constant-matrix program cannot keep does not count)."""


def _combination(rows, registers, ch, op_set, m, done: Sequence[str] = (),
                 shifts: Sequence[Offset] = SHIFTS, choices: list[tuple] | None = None,
                 ) -> tuple[list[Instr], str] | None:
    """The output written last, L, as S^d·v + Σ_{j,e} q_{j,e}·S^e·K_j, integer q over the
    shifts e in `shifts` (`SHIFTS`, or `_window`'s) of the other outputs, where v is what L
    kept while they were made: 0 (L free) or u·s for u in `KEPT_UNITS` (s the input over 2^m,
    a value of the constant-matrix program's pool). The shifted outputs of random kernels
    generate every integer kernel of their span as a lattice more often than not, so such q
    exist (over a window as wide as the kernels: `_window`); their cost differs much
    from one (L, u, d) to the next (each is another coset of the same lattice), so every
    choice is scanned with LLL's weights (`_lattice_weights`, estimated by `_walk_cost`), and
    the `BUILT` cheapest that the constant-matrix program can keep are built in full, their
    weights made cheaper by an integer program (`_cheapest`): the others by the
    constant-matrix program (with u·s kept in L), then L's walk over them, starting from v
    (`matrix._emit_output`, which writes only its own register). The shortest; None if no q
    is found. Deterministic (ties broken by register, value and shift).

    `done`: outputs already in their registers (made by a program the caller puts first, the
    input kept in its register): they are read, never written, and never the last.
    `choices`: `_scan`'s, where the caller has them (over `SHIFTS`)."""
    from kalg.targets.scamp5.codegen.matrix import _emit_output

    fused = op_set == "all"
    solvers: dict[str, _Weights] | None = None if shifts == SHIFTS else {}
    if choices is None:
        choices = _scan(rows, registers, ch, m, fused, done, shifts, solvers)
    firsts: dict = {}

    def first_of(last, units):
        if (last, units) not in firsts:
            firsts[last, units] = _others_first(rows, registers, ch, op_set, m, last, units,
                                                done)
        return firsts[last, units]

    picked = []
    for choice in sorted(choices):
        if len(picked) == BUILT:
            break
        if first_of(*choice[-3:-1]) is not None:
            picked.append(choice)
    best: tuple[list[Instr], str] | None = None
    for *_, d, last, units, others in picked:
        first = first_of(last, units)
        target = _minus(rows[last], (ch, d), units)
        q = (_lattice_weights(target, [rows[r] for r in others], fused) if solvers is None
             else solvers[last].weights(target))
        assert q is not None  # found above; the integer program only replaces it if cheaper
        row = {(f"={others[i]}", e): w for (i, e), w in q.items() if w}
        held = {r: (f"={r}", 1) for r in others}
        if units:
            row[("=v", d)] = 1
            held[last] = ("=v", 1)
        walk = _emit_output(last, row, held, fused, start=d if units else None)
        if best is None or len(first) + len(walk) < len(best[0]):
            v = f"keeping input/{2 ** m}·{units} shifted by {d}" if units else ""
            best = [*first, *walk], (
                f"{last} written last from the other outputs shifted{', ' + v if v else ''}: "
                f"{sum(abs(w) for w in q.values())} additions and subtractions")
    return best


def _scan(rows, registers, ch, m, fused, done, shifts=SHIFTS, solvers=None) -> list[tuple]:
    """(estimated walk, register index, |u|, u < 0, d, L, u, the others) for every choice of
    `_combination` whose weights LLL finds: by Kannan's embedding, one reduction per choice
    (`_lattice_weights`), or, where `solvers` is a dict (the wide window), by one `_Weights`
    per register written last, left in `solvers`."""
    choices = []
    for last in sorted((r for r in rows if r not in done), key=registers.index):
        others = [r for r in sorted(rows, key=registers.index) if r != last]
        columns = [rows[r] for r in others]
        if solvers is not None:
            solvers[last] = _Weights(columns, shifts)
        for units in (0, *(u for u in KEPT_UNITS if abs(u) <= 2 ** m)):
            for d in KEPT_SHIFTS if units else ((0, 0),):
                target = _minus(rows[last], (ch, d), units)
                q = (_lattice_weights(target, columns, None) if solvers is None
                     else solvers[last].weights(target))
                if q is not None:
                    choices.append((_walk_cost(list(q.values()), _by_shift(q, shifts), fused),
                                    registers.index(last), abs(units), units < 0, d, last,
                                    units, others))
    return choices


def _minus(row: dict, key, units: int) -> dict:
    out = dict(row)
    if units:
        out[key] = out.get(key, 0) - units
    return out


def _by_shift(keys, shifts: Sequence[Offset] = SHIFTS) -> list[list[int]]:
    """Per shift of `shifts`, the positions of the unknowns (i, e) of `keys` (a weights
    dict's keys, in order) at that shift."""
    keys = list(keys)
    return [[i for i, (_, e) in enumerate(keys) if e == shift] for shift in shifts]


def _others_first(rows, registers, ch, op_set, m, last, units, done=()) -> list[Instr] | None:
    """The constant-matrix program of every output but `last` and those `done`, in the
    registers not `done`, with units·s kept in `last` (units 0: `last` free), or None where
    it has none."""
    registers = [r for r in registers if r not in done]
    kept = {r: row for r, row in rows.items() if r != last and r not in done}
    if not kept and not units:
        return []  # nothing left to make but `last`, which is free
    if units:
        kept[last] = {(ch, (0, 0)): units}
    kernels = {r: {ch: Kernel.of({off: Fraction(c, 2 ** m) for (_, off), c in row.items()})}
               for r, row in kept.items()}
    return matrix_program(kernels, registers, (ch,), op_set, last=last if units else None)


def _lattice_weights(target: dict, columns: list[dict], cheapest: bool | None = True,
                     shifts: Sequence[Offset] = SHIFTS) -> dict[tuple[int, Offset], int] | None:
    """Integers q[(i, e)] with Σ q·S^e·columns[i] = target, small by LLL (Kannan's embedding:
    a reduced basis vector whose image is zero and whose target coordinate is ±1), or None.
    `cheapest` (not None): then made cheaper by the integer program `_cheapest` (a second or
    so), for op set all (True: 3-operand adds) or basic (False)."""
    unknowns = [(i, e) for i in range(len(columns)) for e in shifts]
    images = []
    for i, e in unknowns:
        images.append({(c, (d[0] + e[0], d[1] + e[1])): v for (c, d), v in columns[i].items()})
    keys = sorted(set(target) | {k for image in images for k in image})
    scale = 1 + sum(abs(v) for v in target.values()) * 64
    n = len(unknowns)
    basis = [[scale * image.get(k, 0) for k in keys] + [int(j == i) for j in range(n)] + [0]
             for i, image in enumerate(images)]
    basis.append([scale * target.get(k, 0) for k in keys] + [0] * n + [1])
    reduced = _lll(basis)
    best = None
    for row in reduced:
        if any(row[:len(keys)]) or abs(row[-1]) != 1:
            continue
        q = [-int(row[-1]) * int(a) for a in row[len(keys):-1]]
        if best is None or sum(map(abs, q)) < sum(map(abs, best)):
            best = q
    if best is None:
        return None
    kernel = [[int(a) for a in row[len(keys):-1]] for row in reduced
              if not any(row[:len(keys)]) and row[-1] == 0]
    best = _shortened(best, kernel)
    by_shift = _by_shift(unknowns, shifts)
    if cheapest is not None and (cheaper := _cheapest(best, _kernel_basis(images, keys),
                                                      by_shift, cheapest)):
        best = cheaper
    return dict(zip(unknowns, best, strict=True))


class _Weights:
    """Integer weights q[(i, e)], e in `shifts`, with Σ q·S^e·columns[i] = target, for many
    targets over the same columns (`_scan`'s 51 per register written last): one LLL of the
    shifted columns gives a basis of their lattice and a reduced basis of the weights that
    sum to zero; each target's weights are then an exact solve over the first, rounded to a
    short vector by Babai's nearest plane over the second, then `_shortened`. For the wide
    window (`_window`: 125 unknowns for 5x5 kernels) Kannan's embedding, a reduction per
    target (`_lattice_weights`), would cost the scan a reduction per choice."""

    def __init__(self, columns: list[dict], shifts: Sequence[Offset]):
        from flint import fmpq_mat

        self.unknowns = [(i, e) for i in range(len(columns)) for e in shifts]
        images = [{(c, (d[0] + e[0], d[1] + e[1])): v for (c, d), v in columns[i].items()}
                  for i, e in self.unknowns]
        self.keys = sorted({k for image in images for k in image})
        n, nk = len(images), len(self.keys)
        scale = 1 + 64 * sum(abs(v) for image in images for v in image.values())
        reduced = _lll([[scale * image.get(k, 0) for k in self.keys]
                        + [int(j == i) for j in range(n)] for i, image in enumerate(images)])
        self.kernel = [row[nk:] for row in reduced if not any(row[:nk])]
        spanning = [row for row in reduced if any(row[:nk])]  # independent: a basis
        self.image = [[a // scale for a in row[:nk]] for row in spanning]
        self.lift = [row[nk:] for row in spanning]
        echelon, rank = fmpq_mat(self.image).rref()
        self.pivots = [next(j for j in range(nk) if echelon[i, j] != 0) for i in range(rank)]
        self.inverse = fmpq_mat([[row[j] for j in self.pivots] for row in self.image]).inv()
        self.gram = _gram_schmidt(self.kernel)

    def weights(self, target: dict) -> dict[tuple[int, Offset], int] | None:
        """The weights for `target`, or None where it is not in the columns' lattice. Not
        made cheaper by the integer program `_cheapest`: over 125 unknowns it took 77 s of
        CPU on a filter with a 5x5 kernel (17 s at 200 nodes) and found nothing cheaper."""
        from flint import fmpq_mat

        index = {k: j for j, k in enumerate(self.keys)}
        if any(v and k not in index for k, v in target.items()):
            return None
        t = [target.get(k, 0) for k in self.keys]
        c = (fmpq_mat(1, len(self.pivots), [t[j] for j in self.pivots]) * self.inverse
             ).entries()
        if any(x.q != 1 for x in c):
            return None
        z = [int(x.p) for x in c]
        image = [sum(a * row[j] for a, row in zip(z, self.image, strict=True))
                 for j in range(len(self.keys))]
        if image != t:  # outside the columns' span
            return None
        q = [sum(a * row[j] for a, row in zip(z, self.lift, strict=True))
             for j in range(len(self.unknowns))]
        q = _shortened(self._nearest(q), self.kernel)
        return dict(zip(self.unknowns, q, strict=True))

    def _nearest(self, q: list[int]) -> list[int]:
        """q minus the zero-sum weights nearest to it (Babai's nearest plane, last basis
        vector first), in exact integers: the rounding, and so the program, does not depend
        on a floating-point library."""
        rest = list(q)
        for row, (star, norm) in zip(reversed(self.kernel), reversed(self.gram), strict=True):
            if z := round(Fraction(sum(a * b for a, b in zip(rest, star, strict=True)), norm)):
                rest = [a - z * b for a, b in zip(rest, row, strict=True)]
        return rest


def _gram_schmidt(basis: list[list[int]]) -> list[tuple[list[int], int]]:
    """Per row b_i of `basis`, (w_i, <b_i, w_i>) with w_i an integer multiple of the
    Gram-Schmidt vector b*_i (exact, fmpq), so that <x, b*_i> / <b*_i, b*_i> is
    <x, w_i> / <b_i, w_i> in integers."""
    from flint import fmpq

    stars: list[tuple[list, fmpq]] = []
    out = []
    for row in basis:
        star = [fmpq(a) for a in row]
        for prev, norm in stars:
            mu = sum((a * b for a, b in zip(row, prev, strict=True)), fmpq(0)) / norm
            if mu:
                star = [a - mu * b for a, b in zip(star, prev, strict=True)]
        stars.append((star, sum((a * a for a in star), fmpq(0))))
        den = math.lcm(*(int(a.q) for a in star))
        w = [int(a.p) * (den // int(a.q)) for a in star]
        out.append((w, sum(a * b for a, b in zip(row, w, strict=True))))
    return out


WEIGHT_NODES = 5000
"""Branch-and-bound nodes of the weights' integer program (`_cheapest`): a count, not a
time, so the weights are deterministic; about a second of CPU for five outputs' 3x3 shifts."""


def _walk_cost(q: list[int], by_shift: list[list[int]], fused: bool = True) -> int:
    """Instructions of the in-place walk for weights q, estimated: per shift, one per unit
    subtracted and, for the additions, one 3-operand add per two units of different outputs
    (`matrix._Emitter`), so the larger of half the units and the largest single weight;
    without the 3-operand add (`fused` False, op set basic) one per unit."""
    if not fused:
        return sum(map(abs, q))
    total = 0
    for idx in by_shift:
        plus = [q[i] for i in idx if q[i] > 0]
        total += sum(-q[i] for i in idx if q[i] < 0)
        total += max((sum(plus) + 1) // 2, max(plus, default=0))
    return total


def _kernel_basis(images: list[dict], keys: list) -> list[list[int]]:
    """An LLL-reduced basis of the integer weights whose shifted outputs sum to zero."""
    n = len(images)
    scale = 1 + 64 * sum(abs(v) for image in images for v in image.values())
    reduced = _lll([[scale * image.get(k, 0) for k in keys] + [int(j == i) for j in range(n)]
                    for i, image in enumerate(images)])
    return [row[len(keys):] for row in reduced if not any(row[:len(keys)])]


def _cheapest(q0: list[int], basis: list[list[int]], by_shift: list[list[int]], fused: bool,
              ) -> list[int] | None:
    """q0 + Σ z·basis, integer z, of the lowest `_walk_cost` an integer program finds
    within `WEIGHT_NODES` (HiGHS, as the e-graph's extraction; q0 is feasible, so it is
    only replaced by a cheaper point), or None."""
    import highspy
    import numpy as np

    n, r = len(q0), len(basis)
    if not r:
        return None
    # columns: z (r, integer), p (n), m (n), a (one per shift, integer); q = p - m
    cols = r + 2 * n + len(by_shift)
    rows: list[tuple[dict[int, float], float, float]] = []
    for i in range(n):
        coefs = {k: -float(basis[k][i]) for k in range(r) if basis[k][i]}
        coefs[r + i], coefs[r + n + i] = 1.0, -1.0
        rows.append((coefs, float(q0[i]), float(q0[i])))
    for s, idx in enumerate(by_shift):
        a = r + 2 * n + s
        rows.append(({a: 2.0, **{r + i: -1.0 for i in idx}}, 0.0, highspy.kHighsInf))
        rows += [({a: 1.0, r + i: -1.0}, 0.0, highspy.kHighsInf) for i in idx]
    cost = np.zeros(cols)
    cost[r + n:r + 2 * n] = 1.0
    if fused:
        cost[r + 2 * n:] = 1.0
    else:  # no 3-operand add: every unit one instruction
        cost[r:r + n] = 1.0
    bound = float(4 * max(map(abs, q0)) + 8)
    lower = np.concatenate([np.full(r, -bound), np.zeros(2 * n + len(by_shift))])
    upper = np.full(cols, highspy.kHighsInf)
    upper[:r] = bound
    h = highspy.Highs()
    h.setOptionValue("log_to_console", False)
    h.setOptionValue("mip_max_nodes", WEIGHT_NODES)
    h.setOptionValue("threads", 1)
    lp = highspy.HighsLp()
    lp.num_col_ = lp.a_matrix_.num_col_ = cols
    lp.num_row_ = lp.a_matrix_.num_row_ = len(rows)
    lp.col_cost_ = cost
    lp.col_lower_, lp.col_upper_ = lower, upper
    lp.row_lower_ = np.array([lo for _, lo, _ in rows])
    lp.row_upper_ = np.array([hi for _, _, hi in rows])
    lp.a_matrix_.format_ = highspy.MatrixFormat.kRowwise
    start, index, value = [0], [], []
    for coefs, _, _ in rows:
        for j in sorted(coefs):
            index.append(j)
            value.append(coefs[j])
        start.append(len(index))
    lp.a_matrix_.start_ = np.array(start, dtype=np.int32)
    lp.a_matrix_.index_ = np.array(index, dtype=np.int32)
    lp.a_matrix_.value_ = np.array(value, dtype=np.float64)
    kinds = highspy.HighsVarType
    lp.integrality_ = ([kinds.kInteger] * r + [kinds.kContinuous] * (2 * n)
                       + [kinds.kInteger] * len(by_shift))
    if h.passModel(lp) == highspy.HighsStatus.kError or h.run() == highspy.HighsStatus.kError:
        return None
    if h.getInfo().objective_function_value == highspy.kHighsInf:
        return None
    z = [round(v) for v in h.getSolution().col_value[:r]]
    q = [q0[i] + sum(z[k] * basis[k][i] for k in range(r)) for i in range(n)]
    return q if _walk_cost(q, by_shift, fused) < _walk_cost(q0, by_shift, fused) else None


def _lll(basis: list[list[int]]) -> list[list[int]]:
    """The rows of `basis` LLL-reduced (python-flint, exact integers; delta 3/4, the textbook
    value: a stronger reduction only costs time here, `_shortened` does the rest)."""
    from flint import fmpz_mat

    m = fmpz_mat(basis).lll(delta=0.75)
    return [[int(m[i, j]) for j in range(m.ncols())] for i in range(m.nrows())]


def _shortened(q: list[int], kernel: list[list[int]]) -> list[int]:
    """q plus or minus reduced kernel vectors (weights that sum to zero) while that lowers
    Σ|q| (each unit one instruction): LLL's vector is short in the Euclidean norm, not in
    this one."""
    improved = True
    while improved:
        improved = False
        for v in kernel:
            for sign in (1, -1):
                trial = [a + sign * b for a, b in zip(q, v, strict=True)]
                if sum(map(abs, trial)) < sum(map(abs, q)):
                    q, improved = trial, True
    return q


def _solve(target: dict, columns: list[dict]) -> list[int] | None:
    """Integers q with Σ q_i·columns[i] = target (exact elimination over the rationals; free
    unknowns set to 0), or None."""
    keys = sorted(set(target) | {k for c in columns for k in c})
    n = len(columns)
    rows = [[Fraction(c.get(k, 0)) for c in columns] + [Fraction(target.get(k, 0))]
            for k in keys]
    pivots: list[int] = []
    r = 0
    for col in range(n):
        p = next((i for i in range(r, len(rows)) if rows[i][col] != 0), None)
        if p is None:
            continue
        rows[r], rows[p] = rows[p], rows[r]
        rows[r] = [v / rows[r][col] for v in rows[r]]
        for i in range(len(rows)):
            if i != r and rows[i][col] != 0:
                f = rows[i][col]
                rows[i] = [a - f * b for a, b in zip(rows[i], rows[r], strict=True)]
        pivots.append(col)
        r += 1
    if any(row[n] != 0 for row in rows[r:]):
        return None
    q = [Fraction(0)] * n
    for i, col in enumerate(pivots):
        q[col] = rows[i][n]
    if any(v.denominator != 1 for v in q):
        return None
    return [int(v) for v in q]


def _program(rows, registers, ch, op_set, m, last, units, d, q) -> list[Instr] | None:
    """The other outputs by the constant-matrix program, with v = units·s kept in `last` as
    one more "output" made last; then `last` shifted by d and the q-weighted outputs added in
    place. units = 0: `last` is free while the others are made, then set from one of them."""
    kept = {r: row for r, row in rows.items() if r != last}
    if units:
        kept[last] = {(ch, (0, 0)): units}
    kernels = {r: {ch: Kernel.of({off: Fraction(c, 2 ** m) for (_, off), c in row.items()})}
               for r, row in kept.items()}
    first = matrix_program(kernels, registers, (ch,), op_set, last=last if units else None)
    if first is None:
        return None
    if units:
        return first + _finish(last, d, q, op_set)
    r = next(r for r, c in sorted(q.items()) if c)  # the first term replaces what L held
    start: Instr = Mov(last, r) if q[r] > 0 else Neg(last, r)
    rest = {**q, r: q[r] - (1 if q[r] > 0 else -1)}
    return [*first, start, *_finish(last, (0, 0), rest, op_set)]


def _finish(last: str, d: Offset, q: dict[str, int], op_set: str) -> list[Instr]:
    out: list[Instr] = []
    fused = op_set == "all"
    todo = d
    while todo != (0, 0):
        dirs = _split(todo, fused)
        out.append(Mov2x(last, last, *dirs) if len(dirs) == 2 else Movx(last, last, dirs[0]))
        v = _vector(dirs)
        todo = (todo[0] - v[0], todo[1] - v[1])
    plus = [r for r, c in sorted(q.items()) for _ in range(max(c, 0))]
    minus = [r for r, c in sorted(q.items()) for _ in range(max(-c, 0))]
    while plus:
        a = plus.pop(0)
        b = next((r for r in plus if r != a), None) if fused else None
        if b is not None:
            plus.remove(b)
            out.append(Add3(last, last, a, b))
        else:
            out.append(Add(last, last, a))
    out += [Sub(last, last, r) for r in minus]
    return out
