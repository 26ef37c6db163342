"""A filter as a constant-matrix multiplication over one shared, divided input.

Every output kernel with coefficients in 2^-m·Z is Σ_d c_d · S^d s, where s = input / 2^m is
computed once (m halvings, shared by every output) and c is an integer matrix (outputs × offsets).
The program has three parts:

1. **pool**: s and a few signed multiples of it (c·s, the matrix's columns scaled: the halvings'
   intermediate values and their negated copies, which `div` makes for free, and sums of two),
   each one register;
2. **outputs**, one after another, each accumulated in its own register by a walk over its
   offsets (Horner in shift space: `addx(y, y, atom, d)` adds a pool value at the current offset
   and moves on, `subx` moves and subtracts), each coefficient written as the fewest signed pool
   values (an integer knapsack);
3. **register pressure** as part of the plan: an output is one accumulator, so pressure is the
   pool; before each output the pool is cut to the registers left (the outputs already made
   keep theirs), dropping the multiples that save the remaining outputs least, and a pool value
   in the next output's register is moved out or dropped. A dropped multiple is not recomputed
   into a kept register: the outputs that would read it use smaller ones (more atoms), which is
   the cheap recomputation. s itself is never dropped while an output needs it.

`matrix_program` tries a few pools and output orders and returns the shortest program, verified
exactly; None where none fits (more outputs than registers leave room for, a non-dyadic kernel).
With six registers every filter of up to five outputs gets a program here (the last outputs may
be long sums of s), which is what makes "no program" impossible for them.
"""

from __future__ import annotations

import itertools
from bisect import bisect_right
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction

from kalg.algebra.kernel import Kernel
from kalg.targets.scamp5.machine.isa import (
    Add,
    Add2x,
    Add3,
    Addx,
    Dir,
    Div,
    Div4,
    Divq,
    Instr,
    Mov,
    Mov2x,
    Movx,
    Neg,
    Res,
    Sub,
    Sub2x,
    Subx,
)

Offset = tuple[int, int]
Key = tuple[str, Offset]
"""(input channel, offset): a column of the coefficient matrix."""
Value = tuple[str, int]
"""A pool value: (input channel, signed multiple of that channel's s)."""
Atom = tuple[str, bool]
"""(register holding a pool value, subtract it?)"""

MAX_EXACT_PATH = 12
"""Outputs with more nonzero offsets than this get a greedy walk instead of the exact one."""


def matrix_program(outputs: Mapping[str, Mapping[str, Kernel]], registers: Sequence[str],
                   inputs: Sequence[str], op_set: str, drop_copies: bool = True,
                   last: str | None = None) -> list[Instr] | None:
    """The shortest program this construction finds for `outputs` (output register → input
    register → kernel: one entry per input channel the output reads), or None. Each input has
    its own s and pool; an output's walk adds atoms of every channel at each offset. Not yet
    verified: the caller (`codegen.matrix_filter`) verifies it.

    `drop_copies`: when the halvings run out of registers, drop div's unwanted copies instead of
    giving up on that pool (`_Builder._halvings`). The drop fires only in a state where the
    build without it fails, so for every (order, pool) the program with it is the program
    without it or one that exists only with it: the shortest over both settings is always the
    one with it (the default), and turning it off (kept for comparison) is never shorter.

    `last`: the output made last (`codegen.filling`: the register that keeps a pool value as
    its "output" while the others are made)."""
    problem = _integer_matrix(outputs)
    if problem is None:
        return None
    m, rows = problem
    fused = op_set == "all"
    cache: dict = {}
    plans = [(order, wanted, plan_reuse) for order in _orders(rows, registers, last)
             for wanted in _pools(rows, m)
             for plan_reuse in (True, False)[:2 if len(rows) > 1 else 1]]
    plans += _ranked_plans(rows, registers, inputs, fused, m, drop_copies, last, cache, plans)
    best: list[Instr] | None = None
    for keep in (None, last) if last else (None,):
        for order, wanted, plan_reuse in plans:
            program = _Builder(registers, tuple(inputs), fused, m, drop_copies, plan_reuse,
                               cache, keep).run(rows, order, wanted)
            if program is not None and (best is None or len(program) < len(best)):
                best = program
    return best


PERMUTED_OUTPUTS = 5
"""Filters of at most this many outputs, with at most `TIGHT` registers beyond one per
output, have every output order ranked (`_ranked_plans`): where registers are short the order
decides which outputs get a rich pool and which are left to reuse finished ones."""
TIGHT = 2
BUILT = 16
"""How many of the ranked plans are built in full."""


def _ranked_plans(rows, registers, inputs, fused, m, drop_copies, last, cache, known):
    """The `BUILT` plans (order, pool, plan_reuse) of lowest estimated length over every
    output order (`_Builder.run(dry=True)`), those in `known` left out; none for filters with
    many outputs or registers to spare. Deterministic (ties broken by the plan's order)."""
    if not 1 < len(rows) <= PERMUTED_OUTPUTS or len(registers) - len(rows) > TIGHT:
        return []
    pools = _pools(rows, m)
    scored = []
    for order in itertools.permutations(sorted(rows, key=registers.index)):
        if last is not None and order[-1] != last:
            continue
        for p, wanted in enumerate(pools):
            for plan_reuse in (True, False):
                plan = (list(order), wanted, plan_reuse)
                if plan in known:
                    continue
                length = _Builder(registers, tuple(inputs), fused, m, drop_copies, plan_reuse,
                                  cache).run(rows, plan[0], wanted, dry=True)
                if length is not None:
                    scored.append((length, order, p, not plan_reuse, plan))
    scored.sort(key=lambda x: x[:4])
    return [plan for *_, plan in scored[:BUILT]]


def _integer_matrix(outputs: Mapping[str, Mapping[str, Kernel]]):
    """(m, {register: {(channel, offset): integer c}}) with each channel's kernel
    Σ c·S^d / 2^m, or None."""
    m = 0
    for parts in outputs.values():
        for k in parts.values():
            if not k.is_dyadic() or k.semiring.name != "real":
                return None
            for c in k.taps.values():
                m = max(m, Fraction(c).denominator.bit_length() - 1)
    rows = {reg: {(ch, d): int(Fraction(c) * 2 ** m)
                  for ch, k in parts.items() for d, c in k.taps.items() if c != 0}
            for reg, parts in outputs.items()}
    if m > 12 or any(abs(c) > 4096 for r in rows.values() for c in r.values()):
        return None
    return m, rows


def _orders(rows: dict[str, dict[Key, int]], registers: Sequence[str], last: str | None = None):
    """Output orders to try: the heaviest (most coefficient mass) first, so that the lightest are
    made last, when the pool is smallest; and the register order; `last` (if given) always
    last. Deterministic."""
    mass = {r: sum(abs(c) for c in row.values()) for r, row in rows.items()}
    heavy = sorted(rows, key=lambda r: (r == last, -mass[r], registers.index(r)))
    plain = sorted(rows, key=lambda r: (r == last, registers.index(r)))
    seen = []
    for order in (heavy, plain):
        if order not in seen:
            seen.append(order)
    return seen


def _pools(rows: dict[str, dict[Key, int]], m: int) -> list[frozenset[int]]:
    """Signed multiples of s to make before the outputs (s itself always): nothing more; the
    halvings' chain (both signs: div makes -x/2 for free); every coefficient magnitude used,
    positive, negated (for walks that subtract: `subx` carries a move and a term) or both; and
    the most frequent few (for small register files). Deterministic."""
    used = sorted({abs(c) for row in rows.values() for c in row.values()} - {0})
    chain = {2 ** j for j in range(0, m)} | {-(2 ** j) for j in range(0, m)}
    by_count: dict[int, int] = {}
    for row in rows.values():
        for c in row.values():
            by_count[abs(c)] = by_count.get(abs(c), 0) + 1
    common = sorted(used, key=lambda c: (-by_count[c], c))
    pos, neg = frozenset(used), frozenset(-c for c in used)
    up = frozenset(c for c in chain if c > 0)
    pools = [frozenset(), up, frozenset(chain), pos | up, pos | chain, neg | chain, pos | neg]
    for n in (3, 5):
        top = frozenset(common[:n])
        pools += [top | up, top | chain, frozenset(-c for c in top) | chain]
    out: list[frozenset[int]] = []
    for p in pools:
        if p not in out:
            out.append(p)
    return out


class _Failed(Exception):
    pass


@dataclass
class _Builder:
    registers: Sequence[str]
    inputs: tuple[str, ...]
    fused: bool
    m: int
    drop_copies: bool = True
    plan_reuse: bool = True
    """Whether pool cuts count the outputs' reuse of finished ones (`_reuse`); both settings
    are built and the shorter program kept: each is shorter on some filters."""

    cache: dict | None = None
    """`_reuse`'s answers, shared by the builds of one `matrix_program` call (same rows)."""

    keep: str | None = None
    """The output made last whose register keeps a pool value (`matrix_program`'s `last`),
    if its division is to leave that value there (`_slots`) and the pool cuts are to count it
    as made (`_benefit`): built besides the plain build, which may put the value elsewhere
    and move it (the shorter wins)."""

    def run(self, rows, order, wanted, dry: bool = False) -> list[Instr] | int | None:
        """The program for `order` and pool `wanted`, or None; `dry`: its length estimated
        (the pool's instructions plus each output's `_estimate`), the walks not built."""
        self.program: list[Instr] = []
        estimated = 0
        self.held: dict[str, Value] = {ch: (ch, 2 ** self.m) for ch in self.inputs}
        self.done: list[str] = []
        self.order = order
        self.rows = rows
        try:
            self._make_pool(wanted)
            for i, reg in enumerate(order):
                self._prepare(i, reg)
                row, atoms, estimate = self._reuse(reg, self.done, self.held, signs=not dry)
                if dry:
                    estimated += estimate
                else:
                    self.program += _emit_output(reg, row, {**self.held, **atoms}, self.fused)
                self.held.pop(reg, None)
                self.done.append(reg)
        except _Failed:
            return None
        return len(self.program) + estimated if dry else self.program

    def _reuse(self, reg: str, done: Sequence[str], held: Mapping[str, Value],
               signs: bool = False):
        """`_reuse` for output `reg` with the outputs `done` finished, and the `_estimate` of
        its walk, memoised. `signs`: `_reuse`'s search of every sign choice too (for the walks
        built, not for the plans' estimates: those ask thousands of times per filter)."""
        key = (reg, tuple(sorted(done)), tuple(sorted(held.items())), signs)
        if self.cache is None:
            self.cache = {}
        if key not in self.cache:
            row, atoms = _reuse(self.rows[reg], {r: self.rows[r] for r in done}, held, signs)
            self.cache[key] = row, atoms, _estimate(row, _by_channel({**held, **atoms}))
        return self.cache[key]

    # --- the pool ---------------------------------------------------------------------------

    def _free(self, exclude: Sequence[str] = ()) -> list[str]:
        """Registers holding nothing, those no output needs first, then the outputs made
        latest (they stay free longest)."""
        late = {r: i for i, r in enumerate(self.order)}
        free = [r for r in self.registers
                if r not in self.held and r not in self.done and r not in exclude]
        return sorted(free, key=lambda r: (r in late, -late.get(r, 0), self.registers.index(r)))

    def _make_pool(self, wanted: frozenset[int]) -> None:
        for i, ch in enumerate(self.inputs):
            self._halvings(ch, wanted)
            if i + 1 < len(self.inputs):  # room for the next input's divisions
                for r, (c, v) in sorted(self.held.items()):
                    if c == ch and v != 1 and v not in wanted:
                        del self.held[r]
        self.wanted = wanted | {1}
        self._cut(0)
        for ch in self.inputs:
            have = {v for c, v in self.held.values() if c == ch}
            for w in sorted(wanted - have, key=lambda w: (abs(w), w < 0)):
                self._make_sum(ch, w)

    def _halvings(self, ch: str, wanted: frozenset[int]) -> None:
        """s of channel `ch` by m halvings of its input, keeping the wanted intermediate
        values (and the negated copies div makes)."""
        value = 2 ** self.m
        src = ch
        while value > 1:
            keep = value in wanted
            half = value // 2
            free = self._free()
            if len(free) < (1 if not self.fused else 2) and self.drop_copies:
                # Out of room (the division below would fail): drop this input's unwanted
                # intermediate values (div's copies) rather than give up on this pool. Only
                # here, where the build would otherwise fail, so it never lengthens a program.
                for r, (c, v) in sorted(self.held.items()):
                    if c == ch and r != src and v not in wanted:
                        del self.held[r]
                free = self._free()
            if not self.fused:
                if not free:
                    raise _Failed
                self.program.append(Divq(free[0], src))
                if not keep:
                    del self.held[src]
                self.held[free[0]] = (ch, half)
                src = free[0]
            elif keep and len(free) >= 3:
                y0, y1, y2 = self._slots(free, ch, (half, -half, value))[:3]
                self.program.append(Div4(y0, y1, y2, src))
                self.held[y0], self.held[y1], self.held[y2] = (ch, half), (ch, -half), (ch, value)
                del self.held[src]
                src = y0
            else:
                if len(free) < 2:
                    raise _Failed
                y0, y1 = self._slots(free, ch, (half, -half))[:2]
                self.program.append(Div(y0, y1, src))
                del self.held[src]
                self.held[y0], self.held[y1] = (ch, half), (ch, -half)
                src = y0
            value = half

    def _slots(self, free: list[str], ch: str, values: tuple[int, ...]) -> list[str]:
        """`free` reordered so that the register `keep`, if its output is exactly values[i]·s
        of `ch`, unshifted, is the i-th: a division then leaves that output in its register
        (kept, `_kept`), whichever of div's results it is. Without it -s always went to the second
        free register, so a filter that fills the register file could not keep -s in the
        register it writes last (`codegen.filling`; seed 1 of six outputs: that choice's
        weights are the cheapest of all)."""
        chosen: list[str | None] = []
        for v in values:
            chosen.append(next((r for r in free if r == self.keep and r not in chosen
                                and self.rows.get(r) == {(ch, (0, 0)): v}), None))
        if not any(chosen):
            return free
        rest = iter([r for r in free if r not in chosen])
        return [c if c is not None else next(rest, None) for c in chosen] + list(rest)

    def _make_sum(self, ch: str, w: int) -> None:
        """w·s as the sum or difference of two pool values (one instruction), if any pair fits
        and a register is free."""
        free = self._free()
        if not free:
            return
        mine = sorted((r, v) for r, (c, v) in self.held.items() if c == ch)
        for (ra, a), (rb, b) in itertools.permutations(mine, 2):
            if a + b == w and ra != rb:
                self.program.append(Add(free[0], ra, rb))
            elif a - b == w:
                self.program.append(Sub(free[0], ra, rb))
            else:
                continue
            self.held[free[0]] = (ch, w)
            return

    def _benefit(self, start: int, held: dict[str, Value]) -> int:
        """Estimated instructions of the outputs from `start` on with the pool `held` (lower
        is better; `_estimate`)."""
        total = 0
        done = list(self.done) if self.plan_reuse else []
        for reg in self.order[start:]:
            if reg != self.keep or not self._kept(reg, held):  # kept: it costs nothing
                total += self._reuse(reg, done, held)[2]
            if self.plan_reuse:
                done.append(reg)
        return total

    def _cut(self, start: int) -> None:
        """Drop pool values the outputs from `start` on do not use (not wanted ones)."""
        for r in sorted(self.held):
            if start == 0 and self.held[r][1] in self.wanted:
                continue
            trial = {k: v for k, v in self.held.items() if k != r}
            if self._benefit(start, trial) <= self._benefit(start, self.held):
                del self.held[r]

    def _prepare(self, i: int, reg: str) -> None:
        """Make room for output i: its register emptied, the pool within the registers left."""
        self._cut(i)
        room = len(self.registers) - len(self.done) - 1
        kept = self._kept(reg)
        while len(self.held) > room + kept:
            self._drop_least(i)
        if reg in self.held and not kept:
            free = self._free(exclude=(reg,))
            if free:
                self.program.append(Mov(free[0], reg))
                self.held[free[0]] = self.held.pop(reg)
            else:
                self._drop_least(i, only=reg)

    def _kept(self, reg: str, held: Mapping[str, Value] | None = None) -> bool:
        """Whether `reg` already holds its output in `held` (default: the pool now): a pool
        value, unshifted (the value a filter that fills the register file keeps in its last
        register)."""
        held = self.held if held is None else held
        row = self.rows[reg]
        return reg in held and len(row) == 1 and next(iter(row)) == (
            held[reg][0], (0, 0)) and next(iter(row.values())) == held[reg][1]

    def _drop_least(self, i: int, only: str | None = None) -> None:
        choices = [only] if only else sorted(self.held)
        costs = []
        for r in choices:
            trial = {k: v for k, v in self.held.items() if k != r}
            costs.append((self._benefit(i, trial), r))
        cost, r = min(costs)
        if cost >= 10 ** 6:
            raise _Failed
        del self.held[r]


MAX_REUSE = 3
"""The largest |weight| of a finished output in a later output's decomposition (`_reuse`)."""


def _reuse(row: dict[Key, int], done: dict[str, dict[Key, int]], held: Mapping[str, Value],
           signs: bool = False) -> tuple[dict[Key, int], dict[str, Value]]:
    """The output `row` as Σ q_j·K_j + R: finished outputs K_j (registers `done`, read as
    atoms like pool values, each unit of q_j one addition or subtraction) plus a residual R
    over the pool `held`, with integer weights q chosen (coordinate descent from q = 0, each
    step the single ±1 change that lowers `_estimate` most) to make the walk cheapest. With
    few registers left the pool is s and little else, so a coefficient costs its size in
    atoms, and an output close to an integer combination of finished ones costs the
    combination plus a small remainder. Returns (the row with the outputs' keys, the atoms to
    add to the pool: register → (its channel name, 1)); q = 0 returns `row` unchanged.
    `signs`: the descent also starts from the best q in {-1, 0, 1}^done (`REUSE_ALL_SIGNS`),
    and the lower estimate is kept (a tie keeps the descent from 0)."""
    if not done:
        return row, {}
    names = {r: f"={r}" for r in done}
    values = _by_channel(held)
    values.update({names[r]: frozenset({1}) for r in done})
    best, q = _descent(row, done, names, values, {r: 0 for r in done})
    if signs and len(done) <= REUSE_ALL_SIGNS:
        start = min(_sign_choices(row, done, names, values), key=lambda c: c[:2])
        if start[0] < best:
            found, q_found = _descent(row, done, names, values, start[2])
            if found < best:
                best, q = found, q_found
    if not any(q.values()):
        return row, {}
    return _combined(row, done, names, q), {r: (names[r], 1) for r in done if q[r]}


REUSE_ALL_SIGNS = 4
"""With at most this many outputs finished, every choice of weights in {-1, 0, 1} (3^4 = 81) is
estimated too for the walks built, and the descent also starts from the best of them: one step
at a time from q = 0 misses combinations whose single steps do not pay. The count bounds the
enumeration at 81 estimates per output, the same order as the descent's own steps."""


def _descent(row, done, names, values, q: dict[str, int]) -> tuple[int, dict[str, int]]:
    """(estimate, q) after coordinate descent from `q` (`_best_step` while it lowers)."""
    best = _estimate(_combined(row, done, names, q), values)
    while (step := _best_step(row, done, names, values, q)) is not None and step[0] < best:
        best, q = step
    return best, q


def _sign_choices(row, done, names, values):
    """(estimate, weight, q) for every q in {-1, 0, 1}^done (weight: Σ|q|; deterministic)."""
    order = sorted(done)
    for signs in itertools.product((0, 1, -1), repeat=len(order)):
        q = dict(zip(order, signs, strict=True))
        yield (_estimate(_combined(row, done, names, q), values), sum(map(abs, signs)), q)


def _combined(row, done, names, q: dict[str, int]) -> dict[Key, int]:
    """row − Σ q_r·K_r, with the atoms q_r of each finished output r (channel names[r])."""
    out = dict(row)
    for r, w in q.items():
        if w:
            for k, c in done[r].items():
                out[k] = out.get(k, 0) - w * c
            out[(names[r], (0, 0))] = w
    return {k: c for k, c in out.items() if c}


def _best_step(row, done, names, values, q: dict[str, int]):
    """(estimate, q') for the ±1 change of one weight that `_estimate`s lowest, or None."""
    trials = []
    for r in sorted(done):
        for step in (1, -1):
            if abs(q[r] + step) <= MAX_REUSE:
                trial = {**q, r: q[r] + step}
                trials.append((_estimate(_combined(row, done, names, trial), values), r,
                               -step, trial))
    if not trials:
        return None
    cost, *_, trial = min(trials)
    return cost, trial


def _by_channel(held: Mapping[str, Value]) -> dict[str, frozenset[int]]:
    out: dict[str, set[int]] = {}
    for ch, v in held.values():
        out.setdefault(ch, set()).add(v)
    return {ch: frozenset(vs) for ch, vs in out.items()}


def _estimate(row: dict[Key, int], values: dict[str, frozenset[int]]) -> int:
    """Instructions one output's walk takes with pool `values`, estimated: the better of an
    adding walk (one per atom, the first move extra) and a subtracting walk (`subx` carries each
    move in, so one per atom less one, plus a neg when no coefficient is a positive pool value,
    a move home unless the origin is the last offset, a move for each offset whose coefficient
    has no negated pool value)."""
    keys = {ch: tuple(sorted(vs)) for ch, vs in values.items()}
    atoms = 0
    for (ch, _), c in row.items():
        rep = _representation(c, keys.get(ch, ()))
        if rep is None:
            return 10 ** 6
        atoms += len(rep)
    adding = atoms
    empty: frozenset[int] = frozenset()
    starts = any(c in values.get(ch, empty) for (ch, _), c in row.items())
    unsigned = sum(1 for (ch, _), c in row.items() if -c not in values.get(ch, empty))
    home = 0 if any(d == (0, 0) and -c in values.get(ch, empty)
                    for (ch, d), c in row.items()) else 1
    subtracting = atoms - 1 + (not starts) + home + max(unsigned - 1, 0)
    return min(adding, subtracting)


_REPRESENTATIONS: dict[tuple[int, tuple[int, ...]], tuple[int, ...] | None] = {}


def _representation(c: int, values: tuple[int, ...]) -> tuple[int, ...] | None:
    """The fewest signed pool values (as ±value) summing to c (breadth first; memoised)."""
    key = (c, values)
    if key in _REPRESENTATIONS:
        return _REPRESENTATIONS[key]
    steps = sorted({v for v in values} | {-v for v in values}, key=lambda v: (abs(v), v < 0))
    bound = abs(c) + max((abs(v) for v in values), default=0)
    parent: dict[int, tuple[int, int] | None] = {0: None}
    frontier = [0]
    found = c == 0
    while frontier and not found:
        nxt = []
        for x in frontier:
            for v in steps:
                y = x + v
                if abs(y) <= bound and y not in parent:
                    parent[y] = (x, v)
                    nxt.append(y)
                    if y == c:
                        found = True
        frontier = nxt
    rep: tuple[int, ...] | None = None
    if found:
        out = []
        x = c
        while parent[x] is not None:
            x, v = parent[x]
            out.append(v)
        rep = tuple(sorted(out, key=lambda v: (v < 0, -abs(v))))
    _REPRESENTATIONS[key] = rep
    return rep


# --- one output: a walk over its offsets -----------------------------------------------------

def _emit_output(y: str, row: dict[Key, int], held: dict[str, Value], fused: bool,
                 start: Offset | None = None) -> list[Instr]:
    """Instructions leaving Σ row[d]·S^d s in register y, reading the pool `held`: the shorter
    of a walk that adds where it can and one that subtracts negated pool values where it can.
    `start`: y itself holds a pool value (`held[y]`) that the row takes once, at offset
    `start`; the walk begins there with it, so y is only ever updated in place
    (`codegen.filling`)."""
    best: list[Instr] | None = None
    for prefer_sub in (False, True):
        program = _walk_program(y, row, held, fused, prefer_sub, start)
        if best is None or len(program) < len(best):
            best = program
    assert best is not None
    return best


def _plan(row, held, prefer_sub: bool) -> dict[Offset, list[Atom]]:
    values = {ch: tuple(sorted(vs)) for ch, vs in _by_channel(held).items()}
    by_value: dict[Value, str] = {}
    for r in sorted(held):
        by_value.setdefault(held[r], r)
    plan: dict[Offset, list[Atom]] = {}
    for (ch, d), c in row.items():
        rep = _representation(c, values.get(ch, ()))
        if rep is None:
            raise _Failed
        atoms = []
        for v in rep:
            as_sub = (ch, -v) in by_value and (prefer_sub or (ch, v) not in by_value)
            atoms.append((by_value[(ch, -v)], True) if as_sub else (by_value[(ch, v)], False))
        # Subtractions first (one may ride on the move in), additions last (one carries the
        # move out).
        plan[d] = sorted([*plan.get(d, []), *atoms], key=lambda a: not a[1])
    return plan


def _walk_program(y, row, held, fused, prefer_sub, start=None) -> list[Instr]:
    rest = _plan(row, held, prefer_sub)
    first = _plan(row, held, False)
    for d, atoms in first.items():  # the walk starts from a pool register: an addition
        mine = [i for i, a in enumerate(atoms) if a == (y, False)] if start == d else []
        k = next(iter(mine), next((i for i, a in enumerate(atoms) if not a[1]), 0))
        first[d] = [atoms[k], *atoms[:k], *atoms[k + 1:]]
    path = _walk(first, rest, fused, start)
    if not path:
        return _Emitter(y, fused).run([])
    events = [(path[0], a) for a in first[path[0]]]
    events += [(d, a) for d in path[1:] for a in rest[d]]
    return _Emitter(y, fused).run(events)


def _walk(first: dict[Offset, list[Atom]], rest: dict[Offset, list[Atom]], fused: bool,
          start: Offset | None = None) -> list[Offset]:
    """An order of the offsets that needs the fewest extra moves (exact for small rows). The
    walk's first offset uses the atoms `first`, the others `rest`; it is `start` if given."""
    offsets = sorted(rest)
    adds = {d: any(not s for _, s in rest[d]) for d in offsets}
    subs = {d: bool(rest[d]) and rest[d][0][1] for d in offsets}
    start_ok = {d: bool(first[d]) and not first[d][0][1] for d in offsets}
    start_adds = {d: any(not s for _, s in first[d][1:]) for d in offsets}
    key = (tuple(offsets), fused, start, *(tuple(f[d] for d in offsets)
                                           for f in (adds, subs, start_ok, start_adds)))
    if key in _WALKS:  # the order depends only on these flags
        return _WALKS[key]

    def moves(dist: int, carried: bool) -> int:
        """Extra move instructions for a jump of `dist` unit steps: an addx/subx carries up to
        two steps; the rest are movx/mov2x (unit movx only in the basic op set)."""
        if not fused:
            return dist
        return (max(dist - 2, 0) + 1) // 2 if carried else (dist + 1) // 2

    def cost(p: Offset | None, q: Offset, p_first: bool = False) -> int:
        if p is None:  # the start: a subtraction first costs a neg (not from `start`)
            return 0 if start is not None or start_ok[q] else 1
        out = start_adds[p] if p_first else adds[p]
        return moves(abs(p[0] - q[0]) + abs(p[1] - q[1]), out or subs[q])

    def home(p: Offset, p_first: bool) -> int:
        return moves(abs(p[0]) + abs(p[1]), start_adds[p] if p_first else adds[p])

    if not offsets:
        return []
    starts = [start] if start in offsets else offsets  # where the walk may begin
    if len(offsets) > MAX_EXACT_PATH:
        path = _greedy_walk(offsets, starts, cost, home)
    else:
        path = _exact_walk(offsets, starts, cost, home)
    if len(_WALKS) > 100_000:
        _WALKS.clear()
    _WALKS[key] = path
    return path


_WALKS: dict[tuple, list[Offset]] = {}


def _exact_walk(offsets, starts, cost, home) -> list[Offset]:
    """The cheapest order of all `offsets` that begins at one of `starts` (dynamic
    programming over subsets)."""
    n = len(offsets)
    full = (1 << n) - 1
    inf = 10 ** 9
    best = [[inf] * n for _ in range(1 << n)]
    back = [[-1] * n for _ in range(1 << n)]
    for i in range(n):
        if offsets[i] in starts:
            best[1 << i][i] = cost(None, offsets[i])
    for mask in range(1, 1 << n):
        row = best[mask]
        for i in range(n):
            ci = row[i]
            if ci >= inf:
                continue
            alone = mask == 1 << i
            for j in range(n):
                if mask >> j & 1:
                    continue
                c = ci + cost(offsets[i], offsets[j], alone)
                nm = mask | 1 << j
                if c < best[nm][j]:
                    best[nm][j] = c
                    back[nm][j] = i
    end = min(range(n), key=lambda i: (best[full][i] + home(offsets[i], n == 1), i))
    path = []
    mask = full
    while end != -1:
        path.append(offsets[end])
        prev = back[mask][end]
        mask &= ~(1 << end)
        end = prev
    return path[::-1]


def _greedy_walk(offsets, starts, cost, home):
    left = list(offsets)
    first = min(starts, key=lambda d: (cost(None, d), abs(d[0]) + abs(d[1]), d))
    path = [first]
    left.remove(first)
    while left:
        nxt = min(left, key=lambda d: (cost(path[-1], d, len(path) == 1), d))
        path.append(nxt)
        left.remove(nxt)
    return path


def _split(v: Offset, fused: bool) -> tuple[Dir, ...]:
    """The directions of one move towards v: two where the op set allows, else one."""
    dirs: list[Dir] = []
    x, y = v
    for _ in range(2 if fused else 1):
        if x == 0 and y == 0:
            break
        step = (1 if x > 0 else -1, 0) if abs(x) >= abs(y) else (0, 1 if y > 0 else -1)
        dirs.append(Dir.of_vector(*step))
        x, y = x - step[0], y - step[1]
    return tuple(dirs)


def _vector(dirs: tuple[Dir, ...]) -> Offset:
    return (sum(d.vector[0] for d in dirs), sum(d.vector[1] for d in dirs))


class _Emitter:
    """Accumulates atoms into y. Invariant: the register `src` holds S^-T of the partial sum,
    so an atom at offset T is added unshifted; moving the sum by v (movx) makes T := T - v."""

    def __init__(self, y: str, fused: bool):
        self.y = y
        self.fused = fused
        self.src: str | None = None
        self.t: Offset = (0, 0)
        self.out: list[Instr] = []
        self._at: dict[Offset, list[int]] = {}
        """The events' indices at each offset, in order (`_index`)."""
        self._other: list[int] = []
        """Per event, the index of the first later event at another offset (`_index`)."""

    def _index(self, events: list[tuple[Offset, Atom]]) -> None:
        """What `_partner` asks of the events, found once: each event's later events at its
        offset and the next offset, without a scan of all the later events per event."""
        for k, (d, _) in enumerate(events):
            self._at.setdefault(d, []).append(k)
        self._other = [len(events)] * len(events)
        for k in range(len(events) - 2, -1, -1):
            same = events[k + 1][0] == events[k][0]
            self._other[k] = self._other[k + 1] if same else k + 1

    def run(self, events: list[tuple[Offset, Atom]]) -> list[Instr]:
        paired: set[int] = set()
        self._index(events)
        for i, (d, (reg, sub)) in enumerate(events):
            if i in paired:
                continue
            nxt = events[i + 1][0] if i + 1 < len(events) else (0, 0)
            if self.src is not None and not sub and self.fused and (
                    (j := self._partner(events, i, paired)) is not None):
                self._add_pair(d, reg, events[j][1][0])
                paired.add(j)
                continue
            if self.src is None:
                self.t = d
                if sub:
                    self.out.append(Neg(self.y, reg))
                    self.src = self.y
                else:
                    self.src = reg
                continue
            if sub:
                self._subtract(d, reg)
            else:
                self._add(d, reg, nxt)
        if self.src is None:  # an all-zero output
            return [Res(self.y)]
        self._move_to((0, 0))
        if self.src != self.y:
            self.out.append(Mov(self.y, self.src))
            self.src = self.y
        return self.out

    def _partner(self, events, i: int, paired: set[int]) -> int | None:
        """The index of an addition to make together with event i by one 3-operand add (op
        set all): a later addition at the same offset, of another register, that is not the
        last addition there when a move follows (that one carries the move: `addx`), so a
        pair never costs a move instruction. None if there is none."""
        d, (reg, _) = events[i]
        here = self._at[d]
        run = [k for k in here[bisect_right(here, i):] if k not in paired]
        other = self._other[i]
        nxt = events[other][0] if other < len(events) else (0, 0)
        adds = [k for k in run if not events[k][1][1]]
        if nxt != d and adds:
            adds = adds[:-1]  # the last addition here carries the move out
        src = None if self.src == self.y else self.src
        if reg == src:
            return None
        fits = [k for k in adds if events[k][1][0] not in (reg, src, self.y)]
        count: dict[str, int] = {}
        for k in adds:
            count[events[k][1][0]] = count.get(events[k][1][0], 0) + 1
        # the register with most additions left first: pairs of distinct registers run out
        # last that way
        return min(fits, key=lambda k: (-count[events[k][1][0]], k), default=None)

    def _add_pair(self, d: Offset, a: str, b: str) -> None:
        self._move_to(d)
        self.out.append(Add3(self.y, self.src, a, b))
        self.src = self.y

    def _owned(self, reg: str) -> None:
        """Make src the accumulator y when it is still the pool register `reg` (x0 != x1)."""
        if self.src == reg:
            self.out.append(Mov(self.y, self.src))
            self.src = self.y

    def _move_to(self, d: Offset) -> None:
        while self.t != d:
            dirs = _split((self.t[0] - d[0], self.t[1] - d[1]), self.fused)
            v = _vector(dirs)
            if len(dirs) == 2:
                self.out.append(Mov2x(self.y, self.src, *dirs))
            else:
                self.out.append(Movx(self.y, self.src, dirs[0]))
            self.src = self.y
            self.t = (self.t[0] - v[0], self.t[1] - v[1])

    def _subtract(self, d: Offset, reg: str) -> None:
        if self.t != d and self.fused:
            dirs = _split((self.t[0] - d[0], self.t[1] - d[1]), True)
            v = _vector(dirs)
            if (self.t[0] - v[0], self.t[1] - v[1]) == d:
                src = self.src
                if len(dirs) == 2:
                    self.out.append(Sub2x(self.y, src, *dirs, reg))
                else:
                    self.out.append(Subx(self.y, src, dirs[0], reg))
                self.src, self.t = self.y, d
                return
        self._move_to(d)
        self.out.append(Sub(self.y, self.src, reg))
        self.src = self.y

    def _add(self, d: Offset, reg: str, nxt: Offset) -> None:
        self._move_to(d)
        self._owned(reg)
        if self.fused and nxt != d:
            dirs = _split((self.t[0] - nxt[0], self.t[1] - nxt[1]), True)
            v = _vector(dirs)
            if len(dirs) == 2:
                self.out.append(Add2x(self.y, self.src, reg, *dirs))
            else:
                self.out.append(Addx(self.y, self.src, reg, dirs[0]))
            self.src = self.y
            self.t = (self.t[0] - v[0], self.t[1] - v[1])
            return
        self.out.append(Add(self.y, self.src, reg))
        self.src = self.y




def direct_build(outputs: Mapping[str, Mapping[str, Kernel]], registers: Sequence[str],
                 inputs: Sequence[str], op_set: str) -> list[Instr] | None:
    """One plan of `matrix_program`, no search: the outputs in register order over a pool of s
    alone. Work linear in the taps (`kalg.targets.scamp5.fallback`, --timeout's fallback);
    None where `matrix_program` would find none, or this plan does not fit. Not verified."""
    problem = _integer_matrix(outputs)
    if problem is None:
        return None
    m, rows = problem
    order = sorted(rows, key=list(registers).index)
    return _Builder(registers, tuple(inputs), op_set == "all", m, True, False, {}).run(
        rows, order, frozenset())
