"""A filter built backwards from its outputs: a beam search over bags of goals (op set basic).

The input is divided once to u = input / 2^m (m halvings; the chain's values 2u, 4u, ... are
*bases*, free to keep where a register holds them). Every output is then an integer vector
over shifted copies of u: a *goal*, offset → coefficient. The search runs backwards from the
bag of the outputs' goals, which is exactly the set of values live at that point of the
program: one step removes a goal g from the bag and puts in its place what the instruction
that makes g reads:

* a move:  g = S^s g' (s one step): g' enters the bag;
* a sum:   g = h ± r, where h is a goal already in the bag (shifted or not: a shifted h is
  a new goal S^d h, itself made by moves from h later) — a partial sum *reused*, which is
  what makes the chains of additions that reuse each other's partial sums
  (x = y + z, then z = x + w, ...);
* a split: g = c + (g - c), where c is the common part of g and a shifted goal h of the bag
  (c is made once and serves both), one atom of g, or g's lowest bit plane;
* a negation: g = -(−g).

A child that is already in the bag is not made again: that is the sharing. The bag must fit
the registers at every step (it *is* the live set), so register pressure limits which
sharing is taken. A bag of bases only ends the search; the program is the steps reversed,
after the halvings. The beam keeps, after each step, the bags of lowest estimate (the
atoms still to add, the distinct shifted offsets still to reach); every search is bounded by
counts (steps, beam, children per bag) and deterministic. A third search (`SHARED_SEARCH`)
ranks with an estimate that also sees the goals' overlap (`_relief`): a goal that contains
another, shifted or not, or shares a common part with it, is charged only what it adds to
that one — the bags whose goals can be made from each other rank ahead of bags of as many
atoms that cannot (Cain's heuristic relieves a goal that is a sub-goal of another the same
way, seed 002, section 3.3).

**Registers.** A beam is not monotone in the registers (a register more lets other bags into
it), so `reverse_program` returns the shortest program over register *rungs* (the outputs'
and the input's registers and the first j others, `virtual.rungs`): a larger file has every rung
of a smaller one, and the searches run on a rung depend on its size only (`_searches`), so
more registers never give a longer program.

`reverse_program` does not verify: the caller (`codegen.reverse_filter`) verifies exactly.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from kalg.algebra.kernel import Kernel
from kalg.targets.scamp5.codegen.virtual import allocate, integer_matrix, rungs
from kalg.targets.scamp5.machine.isa import Dir, Instr

Goal = tuple[tuple[int, int, int], ...]
"""Sorted (dx, dy, coefficient) with nonzero coefficients: a value, exactly, in units of u."""

MAX_OUTPUTS = 3
"""Filters of more outputs get no program here (the bags of more outputs do not fit six
registers with room to share, and the work grows with the bag)."""
MAX_TAPS = 27
"""Filters with more non-zero taps in all get no program here (three 3x3 kernels, the size the
search is built for: its states are bags of partial sums, which grow with the taps)."""
SEARCHES = ((96, (2, 0), False), (96, (3, 0), False))
"""(beam width, crowding estimate `_crowding`, shared estimate `_relief`) of each search tried on
every rung, for two outputs (three: the first only, the bags are larger); the shortest program
wins. A beam of 96 is eight times the screening beam (`codegen.QUICK`); two crowding weights
give the search two views of register pressure at the cost of two searches."""
SHARED_SEARCH = (96, (2, 0), True)
"""The search whose estimate sees the goals' overlap (`_relief`), tried besides `SEARCHES` on the
rungs of `SHARED_RUNGS` registers: outputs that share partial sums are made shorter when the
estimate counts a shared sum once, for about three times a plain search's work, so it runs only
where the rung is small."""
SHARED_RUNGS = (6,)
"""Rung sizes that also run `SHARED_SEARCH`: the device's register file. On smaller rungs it
found the shortest program once in 9 filters (5 registers, r2_5201: 25 against 29) for as
much work again; larger files run it on their rung of six."""
SHARED_TAPS = 20
"""Filters of three outputs run `SHARED_SEARCH` only with at most this many non-zero taps in all (a
little over two 3x3 kernels): its bags grow with the taps, and for three dense 3x3 kernels it
costs tens of seconds and often finds nothing."""
MAX_CHILDREN = 400
"""Children of one bag kept for ranking (the lowest estimates): a bound on the search's memory
that, unlike a beam of a few dozen, keeps the children an estimate ranks wrongly but a later
level needs."""
MAX_STEPS = 90
"""Steps (instructions after the halvings) at most."""

_STEPS = {d.vector: d for d in (Dir.EAST, Dir.WEST, Dir.NORTH, Dir.SOUTH)}
"""One step in each direction, in the order the moves are tried (deterministic)."""


def reverse_program(outputs: Mapping[str, Kernel], registers: Sequence[str],
                    input_register: str) -> list[Instr] | None:
    """The shortest program the backward search finds for `outputs` (output register →
    kernel over the input in `input_register`) within `registers`, op set basic, or None
    (a non-dyadic kernel, an output that is a base or equal to another, no bag fits, or
    more than `MAX_OUTPUTS` outputs / `MAX_TAPS` taps). Deterministic; not verified here."""
    if (start := initial_goals(outputs)) is None:
        return None
    m, goals = start
    columns = {reg: {(x, y): c for x, y, c in g} for reg, g in goals.items()}
    best: list[Instr] | None = None
    memo = _Memo()
    taps = sum(len(g) for g in goals.values())
    for rung in rungs(registers, columns, input_register):
        for search in _searches(len(goals), len(rung), taps):
            for program in _search(goals, m, rung, input_register, search, memo):
                if best is None or len(program) < len(best):
                    best = program
    return best


def initial_goals(outputs: Mapping[str, Kernel],
                  max_taps: int = MAX_TAPS) -> tuple[int, dict[str, Goal]] | None:
    """(m, output register → goal over u = input / 2^m) of a filter the backward searches
    take, or None: more than `MAX_OUTPUTS` outputs or `max_taps` taps, a non-dyadic kernel,
    an output that is a base or equal to another."""
    if len(outputs) > MAX_OUTPUTS or sum(
            c != 0 for k in outputs.values() for c in k.taps.values()) > max_taps:
        return None
    scaled = integer_matrix(outputs)
    if scaled is None:
        return None
    m, columns = scaled
    goals = {reg: as_goal(col) for reg, col in columns.items()}
    if len(set(goals.values())) < len(goals) or any(is_base(g, m) for g in goals.values()):
        return None
    return m, goals


def _searches(outputs: int, registers: int, taps: int) -> tuple:
    """The searches run on a rung: they depend on the filter and the rung's size only, so a
    larger register file still runs every search of a smaller one (more registers never
    longer)."""
    plain = SEARCHES if outputs <= 2 else SEARCHES[:1]
    shared = registers in SHARED_RUNGS and (outputs <= 2 or taps <= SHARED_TAPS)
    return plain + ((SHARED_SEARCH,) if shared else ())


def is_base(g: Goal, m: int) -> bool:
    if len(g) != 1:
        return False
    x, y, c = g[0]
    return x == 0 and y == 0 and c > 0 and c & (c - 1) == 0 and c <= 1 << m


# ---------------------------------------------------------------------- the state

class _Memo:
    """What every search of one filter shares, by goal: each goal's estimate (`_goal_part`),
    the number each goal gets and the pairs' reliefs by those numbers (`_relief`: hashing two
    integers, not two goals), and the splits (`_splits`: keyed by (g, h) for the splits of g
    that reuse goal h of the bag, by (g,) for g's own)."""

    __slots__ = ("estimates", "ids", "pairs", "splits")

    def __init__(self) -> None:
        self.estimates: dict[Goal, tuple[int, frozenset]] = {}
        self.ids: dict[Goal, tuple[int, int, Goal]] = {}
        self.pairs: dict[tuple[int, int], int] = {}
        self.splits: dict[tuple, list[tuple]] = {}


class _State:
    """A bag (goal → virtual register of the value), the steps taken (reversed code) and
    the step count."""

    __slots__ = ("bag", "code", "fresh", "score", "steps")

    def __init__(self, bag: dict, code: tuple, steps: int, fresh: int):
        self.bag, self.code, self.steps, self.fresh = bag, code, steps, fresh
        self.score = 0


def _search(goals: dict[str, Goal], m: int, registers: Sequence[str], input_register: str,
            search: tuple, memo: _Memo):
    """The programs of the bags of bases reached by the beam search `search` (width,
    crowding, shared estimate), in order found."""
    width, crowd, shared = search
    start = _State({g: ("out", r) for r, g in goals.items()}, (), 0, 0)
    start.score = _estimate(start.bag, m, memo, shared)
    beam = [start]
    best = None
    for _ in range(MAX_STEPS):
        children: list[tuple] = []
        seen: set = set()
        for parent in beam:
            for child in _children(parent, m, len(registers), memo, crowd, shared):
                key = frozenset(child.bag)
                if key in seen:
                    continue
                seen.add(key)
                if all(is_base(g, m) for g in child.bag):
                    program = bag_program(child, goals, m, registers, input_register)
                    if program is not None and (best is None or len(program) < best):
                        best = len(program)
                        yield program
                    continue
                if best is not None and child.steps + m + _lower(child.bag) >= best:
                    continue
                children.append((child.score, len(children), child))
        if not children:
            return
        children.sort(key=lambda c: c[:2])
        beam = [c[2] for c in children[:width]]


def _crowding(size: int, registers: int, crowd: tuple[int, int]) -> int:
    """`crowd`: the estimate added for a bag that fills the registers (it leaves no room for
    a split into two new parts, a dead end the beam should not fill up with), and for one a
    register short of that."""
    if size >= registers:
        return crowd[0]
    return crowd[1] if size == registers - 1 else 0


def _lower(bag: dict) -> int:
    """Steps any completion of `bag` still needs: one per goal that is not a base."""
    return sum(1 for g in bag if len(g) > 1 or g[0][:2] != (0, 0))


def _estimate(bag: dict, m: int, memo: _Memo, shared: bool) -> int:
    """Steps still needed, estimated: the atoms of each goal to add together (binary digits
    of the coefficients) and one move per shifted offset still present; with `shared`, less
    the additions that the goals' overlap saves (`_relief`)."""
    adds, offsets = 0, set()
    for g in bag:
        part = _goal_part(g, m, memo)
        adds += part[0]
        offsets |= part[1]
    if shared:
        adds -= _relief(bag, m, memo)
    return adds + len(offsets)


def _goal_part(g: Goal, m: int, memo: _Memo) -> tuple[int, frozenset]:
    """`_goal_estimate` of `g`, memoised by goal."""
    if (part := memo.estimates.get(g)) is None:
        part = memo.estimates[g] = _goal_estimate(g, m)
    return part


def _adds(g: Goal, m: int, memo: _Memo) -> int:
    return _goal_part(g, m, memo)[0]


def _relief(bag: dict, m: int, memo: _Memo) -> int:
    """Additions saved by sharing, estimated: each goal's best saving (`_pair_relief`) from
    one goal of the bag before it (fewer offsets, then first seen: deterministic, the searches
    run in a fixed order). A goal gets its number once (`_Memo.ids`), so that the pairs' memo
    hashes two integers, not two goals."""
    ids, pairs = memo.ids, memo.pairs
    order = []
    for g in bag:
        if (i := ids.get(g)) is None:
            i = ids[g] = (len(g), len(ids), g)
        if len(g) > 1 or not is_base(g, m):
            order.append(i)
    order.sort()
    total = 0
    for k in range(1, len(order)):
        gi = order[k]
        best = 0
        for hi in order[:k]:
            key = (gi[1], hi[1])
            if (r := pairs.get(key)) is None:
                r = pairs[key] = _pair_relief(gi[2], hi[2], m, memo)
            if r > best:
                best = r
        total += best
    return total


def _pair_relief(g: Goal, h: Goal, m: int, memo: _Memo) -> int:
    """Additions saved by making g from h (S^d h inside g) or g and h from their common
    part, at the best shift d."""
    weight: dict = {}
    for x, y, c in g:
        for a, b, e in h:
            if (c > 0) == (e > 0):
                d = (x - a, y - b)
                weight[d] = weight.get(d, 0) + bin(min(abs(c), abs(e))).count("1")
    shifts = sorted(((w - (d != (0, 0)), d) for d, w in weight.items()), reverse=True)
    if not shifts or shifts[0][0] <= 1:
        return 0
    gd = {(x, y): c for x, y, c in g}
    ag, ah = _adds(g, m, memo), _adds(h, m, memo)
    best = 0
    for bound, d in shifts:
        if bound <= best:
            break
        hs = {(x + d[0], y + d[1]): c for x, y, c in h}
        move = d != (0, 0)
        rest = minus(gd, hs, 1)
        if rest is not None:
            best = max(best, ag - (_adds(rest, m, memo) if rest else -1) - 1 - move)
            continue
        common = _common(gd, hs)
        if common is not None:
            c = as_goal(common)
            rg = as_goal({p: gd[p] - common.get(p, 0) for p in gd})
            rh = as_goal({p: hs[p] - common.get(p, 0) for p in hs})
            best = max(best, ag + ah - _adds(c, m, memo) - _adds(rg, m, memo)
                       - _adds(rh, m, memo) - 2 - move)
    return best


def _goal_estimate(g: Goal, m: int) -> tuple[int, frozenset]:
    """(additions, shifted offsets) of one goal for `_estimate`."""
    if is_base(g, m):
        return 0, frozenset()
    adds = sum(bin(abs(c)).count("1") for _, _, c in g) - 1 + all(c < 0 for _, _, c in g)
    return adds, frozenset((x, y) for x, y, _ in g if (x, y) != (0, 0))


# ---------------------------------------------------------------------- the children

def _children(state: _State, m: int, registers: int, memo: _Memo,
              crowd: tuple[int, int], shared: bool) -> list[_State]:
    """The bags one step back from `state` within `registers`, lowest estimate first (at
    most `MAX_CHILDREN`), deterministic. `memo`: splits and estimates by goal(s)."""
    out: list[_State] = []
    for g in sorted(state.bag):
        if is_base(g, m):
            continue
        for op, parts, extra in _splits(g, state.bag, m, memo):
            child = step(state, g, op, parts, extra, registers)
            if child is not None:
                child.score = (_estimate(child.bag, m, memo, shared)
                               + _crowding(len(child.bag), registers, crowd))
                out.append(child)
    order = sorted(range(len(out)), key=lambda i: (out[i].score, i))
    return [out[i] for i in order[:MAX_CHILDREN]]


def _splits(g: Goal, bag: dict, m: int, memo: _Memo) -> list[tuple]:
    """(op, operand goals, move direction) for each way to make g from one step back."""
    if len(g) == 1 and g[0][:2] == (0, 0):
        return [_at_origin(g[0][2], m)]
    found = []
    if all(c < 0 for _, _, c in g):
        found.append(("neg", (scale(g, -1),), None))
    # moves: g = S^s g', toward the origin or onto a goal of the bag
    for s, direction in _STEPS.items():
        moved = shift(g, (-s[0], -s[1]))
        if moved in bag or distance(moved) < distance(g):
            found.append(("movx", (moved,), direction))
    seen: set = set()
    for key in [(g, h) for h in sorted(bag)] + [(g,)]:
        if (some := memo.splits.get(key)) is None:
            gd = {(x, y): c for x, y, c in g}
            some = memo.splits[key] = list(_with_goal(g, gd, key[1]) if len(key) == 2
                                    else _parts(g, gd))
        for split in some:
            if split not in seen:
                seen.add(split)
                found.append(split)
    return found


def _at_origin(c: int, m: int) -> tuple:
    """c·u at the origin, not a base: -(−c·u), or its top bit (a base) plus the rest."""
    if c < 0:
        return "neg", (((0, 0, -c),),), None
    top = min(1 << (c.bit_length() - 1), 1 << m)
    return "add", (((0, 0, top),), ((0, 0, c - top),)), None


def _with_goal(g: Goal, gd: dict, h: Goal):
    """g = r ± S^d h (a goal of the bag reused, shifted or not), and g = c + (g - c) where
    c is the common part of g and S^d h (with h = g: of g and its own shift), every d that
    lines up an offset of h with one of g."""
    hd = {(x, y): c for x, y, c in h}
    for d in sorted({(a[0] - b[0], a[1] - b[1]) for a in gd for b in hd}):
        hs = {(p[0] + d[0], p[1] + d[1]): c for p, c in hd.items()}
        if h != g:
            for sign in (1, -1):
                rest = minus(gd, hs, sign)
                if rest is not None:
                    yield from _pair("add" if sign > 0 else "sub", as_goal(hs), rest)
        common = _common(gd, hs)
        if common is not None and (h != g or d != (0, 0)):
            rest = as_goal({p: gd[p] - common.get(p, 0) for p in gd})
            yield from _pair("add", as_goal(common), rest)


def _parts(g: Goal, gd: dict):
    """g as one atom (the top bit of one coefficient) and the rest, and as its lowest bit
    plane and the rest."""
    for p, c in sorted(gd.items()):
        top = (1 << (abs(c).bit_length() - 1)) * (1 if c > 0 else -1)
        rest = dict(gd)
        rest[p] = c - top
        yield from _pair("add" if top > 0 else "sub", ((p[0], p[1], abs(top)),), as_goal(rest))
    low = {p: (1 if c > 0 else -1) for p, c in gd.items() if c % 2}
    if low and as_goal(low) != g:
        rest = as_goal({p: c - low.get(p, 0) for p, c in gd.items()})
        yield from _pair("add", as_goal(low), rest)


def _pair(op: str, a: Goal, rest: Goal):
    """The split g = rest ± a (sub: rest - a), once, where both parts are non-empty and
    different (add needs two different registers)."""
    if not a or not rest or a == rest:
        return
    if op == "sub":
        yield "sub", (rest, a), None
    else:
        yield "add", (a, rest), None


def minus(gd: dict, hs: dict, sign: int) -> Goal | None:
    """g - sign·hs where sign·hs lies inside g (same signs, no larger), else None."""
    rest = dict(gd)
    for p, c in hs.items():
        c = c * sign
        have = gd.get(p, 0)
        if have == 0 or (have > 0) != (c > 0) or abs(c) > abs(have):
            return None
        rest[p] = have - c
    return as_goal(rest)


def _common(gd: dict, hs: dict) -> dict | None:
    """The common part of g and hs (per offset, the smaller magnitude of equal signs), where
    it has at least two atoms and is not all of g."""
    common = {}
    for p, c in hs.items():
        have = gd.get(p, 0)
        if have and (have > 0) == (c > 0):
            common[p] = min(abs(have), abs(c)) * (1 if c > 0 else -1)
    if sum(abs(c) for c in common.values()) < 2 or common == gd:
        return None
    return common


def as_goal(d: Mapping) -> Goal:
    return tuple(sorted((p[0], p[1], c) for p, c in d.items() if c))


def shift(g: Goal, d: tuple[int, int]) -> Goal:
    return tuple(sorted((x + d[0], y + d[1], c) for x, y, c in g))


def scale(g: Goal, k: int) -> Goal:
    return tuple((x, y, c * k) for x, y, c in g)


def distance(g: Goal) -> int:
    return sum(abs(x) + abs(y) for x, y, _ in g)


NOT_HOST = {"sub": (1,), "subx": (1,), "sub2x": (1,), "neg": (0,)}
"""Operands whose register the result may not take (the ISA's y != x rules)."""


def step(state, g: Goal, op: str, parts: tuple, extra, registers: int):
    """The state one step back (of `state`'s own class: this module's or `goalbag`'s): g's
    instruction recorded, its operands in the bag; None where the registers do not hold the
    instruction: the bag before it, and the bag after it with the result besides, unless the
    result can take the register of an operand read for the last time (`NOT_HOST`). Without
    that register the search kept bags that fit but do not allocate (a full bag whose step
    reuses its operands), and on few registers found no program at all."""
    bag = dict(state.bag)
    dest = bag.pop(g)
    fresh = state.fresh
    names = []
    host = False
    for k, part in enumerate(parts):
        if part not in bag:
            bag[part] = ("val", fresh)
            fresh += 1
            host = host or k not in NOT_HOST.get(op, ())
        names.append(bag[part])
    if len(bag) + (not host) > registers:
        return None
    return type(state)(bag, ((op, dest, tuple(names), extra), state.code), state.steps + 1,
                       fresh)


# ---------------------------------------------------------------------- the program

def bag_program(state, goals: dict[str, Goal], m: int, registers: Sequence[str],
             input_register: str) -> list[Instr] | None:
    """The halvings that make the bases of the final bag of `state` (its `bag` and `code`,
    the steps reversed as a linked list), then the steps in forward order, allocated to
    `registers` (the outputs pinned; else the last output moved at the end); op set basic's
    `divq` halves (`codegen.goalbag` makes them op set all's `div`)."""
    code = []
    node = state.code
    while node:
        code.append(node[0])
        node = node[1]
    bases = {g[0][2].bit_length() - 1: name for g, name in state.bag.items()}
    chain: list[tuple] = []
    src = ("in",)
    for j in range(m - 1, min(bases) - 1, -1):
        dest = bases.get(j, ("chain", j))
        chain.append(("divq", dest, (src,), None))
        src = dest
    renames = {}
    if m in bases:
        renames[bases[m]] = ("in",)
    code = chain + [(op, renames.get(d, d), tuple(renames.get(s, s) for s in srcs), extra)
                    for op, d, srcs, extra in code]
    written = {d: i for i, (_, d, _, _) in enumerate(code)}
    order = sorted(goals, key=lambda r: written[("out", r)])
    return (allocate(code, order, registers, input_register, False)
            or allocate(code, order, registers, input_register, True))
