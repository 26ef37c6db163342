"""A filter built backwards from its outputs in op set all: an anytime beam search over bags of
goals whose budget is a count of bags made.

The search is `reverse`'s (op set basic) carried over to Cain's full macro set, in the way Cain
searches (seed 002, sections 3.1-3.3: goals are multisets of atoms, the search runs backwards
from the final goals, one instruction per step, a child is kept only where its bag fits the
registers, and children are ranked by a cost of atoms, distance and repeated goals). This is
kalg's own formulation, written from the paper, not from Cain's code.

The input is divided once to u = input / 2^m (the chain's values u, 2u, ..., input are the
*bases*); every output is an integer vector over shifted copies of u, a *goal*. One step back
removes a goal g from the bag and puts in its place the operands of the instruction that makes g:

* ``movx`` / ``mov2x``: g = S^v g' (one or two steps; g' nearer the origin or already in the bag);
* ``neg``: g = -(-g);
* ``add`` of two or three operands, ``sub``: g split into parts - a goal of the bag reused
  (shifted or not), one whole tap (a shifted *multiple* c·u; in the lean pass of a kernel larger
  than 3x3 only the farthest of each value, `_single`), all taps of one value (v times a
  0/1 pattern: the *shared shifted term* of Cain's dense-kernel programs), the positive and the
  negative part, one edge row or column, one atom;
* ``addx`` / ``add2x``: g = S^v (a + b), the addition and the move in one instruction;
  ``subx`` / ``sub2x``: g = S^v a - b;
* a multiple c·u at the origin from two others: c = a + b, c = a - b (a a base or a multiple in
  the bag), so that -u, 2u, 3u, 5u, ... are built once and shared, as Cain's programs do.

A child already in the bag is not made again: that is the sharing. The bag must fit the registers
(it is the live set). The beam keeps, after each step, the bags of lowest estimate (`_estimate`:
three-operand additions per goal, one instruction per distinct multiple and, weighted, per
distinct shifted offset; a goal that is a shift of another costs one move); a bag of bases ends a
path, and the program is the steps reversed after the halvings.

**Budgets are counts.** `goalbag_program(..., nodes=N)` makes at most about N bags per pass (it
stops expanding once N are made), over the searches of `SEARCHES` in turn; a kernel larger than
3x3 gets a second pass with the lean moves, whose program replaces the first's only where
shorter. Bags made, not bags
expanded, because a goal of many taps has many more splits: the count follows the work. The
bags are the same on any machine, so the program is too, and a larger N sees every program a
smaller one saw (the searches run in the same order): more nodes never give a longer program.
Not verified here: the caller verifies exactly.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from kalg.algebra.kernel import Kernel
from kalg.targets.scamp5.codegen.opset import as_op_set_all
from kalg.targets.scamp5.codegen.reverse import MAX_TAPS as BASE_TAPS
from kalg.targets.scamp5.codegen.reverse import (
    Goal,
    as_goal,
    bag_program,
    distance,
    initial_goals,
    is_base,
    minus,
    scale,
    shift,
    step,
)
from kalg.targets.scamp5.codegen.virtual import TwoSteps
from kalg.targets.scamp5.machine.isa import Dir, Instr

SEARCHES = ((2, 24, False), (1, 24, False), (2, 24, True), (2, 96, False), (1, 96, False),
            (2, 384, False), (1, 384, False))
"""(weight of a shifted offset in half-instructions, beam width, self-overlap splits) of the
searches, run in this order until the node budget is spent: a narrow beam first (a program
early, which prunes the wider ones), then wider; offsets weighed as a whole move each and as
half of one (`mov2x`, `add2x` and `addx` fold moves into other work). A search of width w
expands about w bags per instruction of its program, each making some 30-40 children for a
3x3 kernel. The third search also splits a goal by a part it holds beside its own shift
(`_self_overlaps`, full moves only); it is a search of its own, after the two that main ran
first, because a beam is not monotone in its moves: with those splits in every search one 3x3
kernel's program got longer (13 -> 14, `test_lean_moves_do_not_lengthen_a_3x3_kernel`). (Widths
doubling, 24 then 48, were shorter on dense 3x3 kernels at the default budget but lost a
two-output bank that only the width-24 search weighing offsets 1 finds: docs/cain-families.md,
session 19.)"""
MAX_CHILDREN = 300
"""Children of one bag kept for ranking (the lowest estimates): bounds the memory per level."""
MAX_STEPS = 60
"""Steps (instructions after the halvings) at most."""
MAX_TAPS = 49
"""Filters with more non-zero taps in all get no program here, whatever the budget: a 7x7
kernel."""
BAGS_PER_TAP = 2000
"""Bags the budget must give per non-zero tap of a filter for the search to take it
(`max_taps`): about what the narrowest search (beam 24) makes per tap before it ends, measured
on 3x3 kernels (2,000-21,000 bags for 8-9 taps) and on 5x5 and 7x7 isotropic ones (23,000-46,000
for 21-29 taps; docs/cain-families.md, session 17). A filter the budget cannot take to the end of
that first search would get no program for its cost."""
LEAN_ABOVE = 9
"""Filters with an output of more non-zero taps than this (a 3x3 window) also get the pass with
the lean moves (`goalbag_program`). Those moves exist so that the search ends on kernels whose
every-tap splits grow as n^2; a 3x3 window's full splits are few and the full pass ends within
the budget (2,000-21,000 bags), where on 36 fresh 3x3 kernels the lean moves alone were never
shorter and twice longer (docs/cain-families.md, session 17): there a second pass is only cost."""

_ONE = {d.vector: d for d in (Dir.EAST, Dir.WEST, Dir.NORTH, Dir.SOUTH)}


def _two_steps() -> dict[tuple[int, int], TwoSteps]:
    """Each vector two steps make (never opposite steps: they cancel), first pair found."""
    found: dict[tuple[int, int], TwoSteps] = {}
    for a, da in _ONE.items():
        for b, db in _ONE.items():
            v = (a[0] + b[0], a[1] + b[1])
            if v != (0, 0) and v not in found:
                found[v] = TwoSteps(da, db)
    return found


_STEPS = ([(v, d, 1) for v, d in _ONE.items()]
          + [(v, d, 2) for v, d in _two_steps().items()])
"""(vector, direction(s), length) of every move, one step then two, in a fixed order."""


def goalbag_program(outputs: Mapping[str, Kernel], registers: Sequence[str],
                    input_register: str, nodes: int) -> list[Instr] | None:
    """The shortest op set all program the backward search finds for `outputs` (output
    register → kernel over the input in `input_register`) on `registers`, or None (a filter
    `reverse.initial_goals` does not take: more than three outputs or too many taps,
    non-dyadic, an output that is a base or equal to another; or nothing found).

    Two passes, each making at most about `nodes` bags: the *full* moves (every tap split off
    singly) on filters of at most `reverse.MAX_TAPS` taps, then, where some output has more
    taps than a 3x3 window (`LEAN_ABOVE`), the *lean* moves (`_single`: of each value only the
    farthest tap) on filters of at most `max_taps(nodes)` taps. The lean pass replaces the full
    pass's program only where strictly shorter, so it never lengthens a program, and each pass
    is monotone in `nodes`, so neither is the whole. Deterministic; not verified."""
    best: list[Instr] | None = None
    for lean, cap in _passes(outputs, nodes):
        if (start := initial_goals(outputs, cap)) is None:
            continue
        m, goals = start
        search = _Search(goals, m, registers, input_register, nodes, lean)
        for weight, width, overlaps in SEARCHES:
            if overlaps and lean:  # the lean moves take no self-overlap splits: the search
                continue           # would be the first one again, spending its bags twice
            search.run(weight, width, overlaps)
            if search.left <= 0:
                break
        if search.best is not None and (best is None or len(search.best) < len(best)):
            best = search.best
    return best


def _passes(outputs: Mapping[str, Kernel], nodes: int) -> list[tuple[bool, int]]:
    """(lean moves, tap cap) of each pass `goalbag_program` runs on `outputs`, in order."""
    passes = [(False, BASE_TAPS)]
    if any(sum(c != 0 for c in k.taps.values()) > LEAN_ABOVE for k in outputs.values()):
        passes.append((True, max_taps(nodes)))
    return passes


def max_taps(nodes: int) -> int:
    """The most non-zero taps of a filter the search takes with a budget of `nodes` bags: the
    27 of three 3x3 kernels that it was built for (`reverse.MAX_TAPS`) at any budget, and more
    where the budget gives `BAGS_PER_TAP` bags per tap, up to `MAX_TAPS` (so a larger budget
    takes every filter a smaller one does: more budget is never a longer program). 30 at
    default's 60000 bags, 49 at high's and max's."""
    return max(BASE_TAPS, min(MAX_TAPS, nodes // BAGS_PER_TAP))


class _State:
    """A bag (goal → virtual value), the steps taken (reversed code) and the step count."""

    __slots__ = ("bag", "code", "fresh", "score", "steps")

    def __init__(self, bag: dict, code: tuple, steps: int, fresh: int):
        self.bag, self.code, self.steps, self.fresh = bag, code, steps, fresh
        self.score = 0


class _Search:
    """The searches of one filter: the budget left, the best program, the memos by goal."""

    def __init__(self, goals: dict[str, Goal], m: int, registers: Sequence[str],
                 input_register: str, nodes: int, lean: bool):
        self.goals, self.m, self.registers, self.input = goals, m, registers, input_register
        self.left = nodes
        self.lean = lean
        self.best: list[Instr] | None = None
        self.owns: dict[bool, dict[Goal, list[tuple]]] = {False: {}, True: {}}
        self.overlaps = False
        self.pairs: dict[tuple[Goal, Goal], list[tuple]] = {}
        self.parts: dict[Goal, tuple | None] = {}

    def run(self, weight: int, width: int, overlaps: bool = False) -> None:
        """One beam search (offset weight, width, self-overlap splits in the full moves) until
        it ends or the budget is spent."""
        self.overlaps = overlaps
        start = _State({g: ("out", r) for r, g in self.goals.items()}, (), 0, 0)
        beam = [start]
        for _ in range(MAX_STEPS):
            children: list[tuple] = []
            seen: set = set()
            for parent in beam:
                if self.left <= 0:
                    return
                made, kept = self._children(parent, weight)
                self.left -= made
                for child in kept:
                    key = frozenset(child.bag)
                    if key in seen:
                        continue
                    seen.add(key)
                    if all(is_base(g, self.m) for g in child.bag):
                        self._finish(child)
                    elif self.best is None or (child.steps + self.m + _lower(child.bag, self.m)
                                               < len(self.best)):
                        children.append((child.score, len(children), child))
            if not children:
                return
            children.sort(key=lambda c: c[:2])
            beam = [c[2] for c in children[:width]]

    def _finish(self, state: _State) -> None:
        basic = bag_program(state, self.goals, self.m, self.registers, self.input)
        if basic is None:
            return
        program = as_op_set_all(basic, self.registers, self.goals)
        if program is not None and (self.best is None or len(program) < len(self.best)):
            self.best = program

    def _children(self, state: _State, weight: int) -> tuple[int, list[_State]]:
        """(bags made, the `MAX_CHILDREN` of lowest estimate) one step back from `state`."""
        out: list[_State] = []
        limit = len(self.registers)
        for g in sorted(state.bag):
            if is_base(g, self.m):
                continue
            for op, parts, extra in self._splits(g, state.bag):
                child = step(state, g, op, parts, extra, limit)
                if child is not None:
                    child.score = self._estimate(child.bag, weight)
                    out.append(child)
        order = sorted(range(len(out)), key=lambda i: (out[i].score, i))
        return len(out), [out[i] for i in order[:MAX_CHILDREN]]

    def _splits(self, g: Goal, bag: dict) -> list[tuple]:
        """(op, operand goals, direction(s)) for each way one instruction makes g: g's own
        (`_own`) and those that reuse a goal of the bag (`_pair`), each memoised."""
        memo = self.owns[self.overlaps]
        if (own := memo.get(g)) is None:
            own = memo[g] = self._own(g)
        found = list(own)
        for h in sorted(bag):
            if h != g:
                if (some := self.pairs.get((g, h))) is None:
                    some = self.pairs[(g, h)] = self._pair(g, h)
                found += some
        return list(dict.fromkeys(found))

    def _own(self, g: Goal) -> list[tuple]:
        """The splits of g that need no goal of the bag."""
        if len(g) == 1 and g[0][:2] == (0, 0):
            return _multiple(g[0][2], (), self.m)
        found: list[tuple] = []
        if all(c < 0 for _, _, c in g):
            found.append(("neg", (scale(g, -1),), None))
        far = distance(g)
        for v, d, n in _STEPS:
            if _far(g, v) <= far - n:
                found.append(("movx" if n == 1 else "mov2x", (shift(g, (-v[0], -v[1])),), d))
        full = self.overlaps and not self.lean
        twos = [] if len(g) == 1 else list(dict.fromkeys(_own_twos(g, self.lean, full)))
        threes = list(_self_threes(g)) if full and len(g) > 1 else []
        return found + self._from_twos(g, twos, None) + threes

    def _pair(self, g: Goal, h: Goal) -> list[tuple]:
        """The splits of g that reuse goal h of the bag (shifted or not, negated, a multiple)."""
        found: list[tuple] = []
        if h == scale(g, -1):
            found.append(("neg", (h,), None))
        for v, d, n in _STEPS:
            if shift(g, (-v[0], -v[1])) == h:
                found.append(("movx" if n == 1 else "mov2x", (h,), d))
        if len(g) == 1 and g[0][:2] == (0, 0):
            return found + (_multiple(g[0][2], (h,), self.m) if len(h) == 1
                            and h[0][:2] == (0, 0) else [])
        twos = [] if len(g) == 1 else list(_with_goal(g, h))
        return found + self._from_twos(g, twos, h)

    def _from_twos(self, g: Goal, twos: list[tuple], h: Goal | None) -> list[tuple]:
        """`twos` (two-operand splits of g), the three-operand adds made from them, the
        `subx` / `sub2x` forms of them, and g = S^v (a + b) (`addx` / `add2x`) where S^-v g
        lies nearer the origin and a + b is one of its own splits (with h: no farther, and
        its splits reusing h)."""
        found = twos + _threes(twos, self.lean)
        for op, (first, second), _ in twos:
            subs = [(first, second)] if op == "sub" else [
                (first, scale(second, -1)), (second, scale(first, -1))]
            for a, b in subs:
                near = distance(a)
                for v, d, n in _STEPS:
                    if _far(a, v) <= near - n * len(a):
                        found.append(("subx" if n == 1 else "sub2x",
                                      (shift(a, (-v[0], -v[1])), b), d))
        far = distance(g) - (1 if h is None else 0)
        for v, d, n in _STEPS:
            if _far(g, v) > far:
                continue
            moved = shift(g, (-v[0], -v[1]))
            if len(moved) == 1 and moved[0][:2] == (0, 0):
                if is_base(moved, self.m):
                    continue
                inner = _multiple(moved[0][2], () if h is None else (h,), self.m)
            elif len(moved) == 1:
                continue
            else:
                inner = list(_own_twos(moved, self.lean, self.overlaps and not self.lean)
                             if h is None else _with_goal(moved, h))
            found += [("addx" if n == 1 else "add2x", parts, d)
                      for op, parts, _ in inner if op == "add"]
        return found

    def _estimate(self, bag: dict, weight: int) -> int:
        """Half-instructions still needed, estimated: per goal of n taps ceil((n - 1) / 2)
        three-operand additions (a goal that is a shift of another goal, or its negation, only
        a move); one instruction per distinct multiple c·u that is not a base; `weight` halves
        per distinct shifted offset."""
        adds = 0
        shapes: set = set()
        multiples: set = set()
        offsets: set = set()
        parts = self.parts
        for g in bag:
            if (part := parts.get(g)) is None:
                part = parts[g] = _goal_part(g, self.m)
            if part is None:
                continue
            cost, shape, many, moved = part
            multiples |= many
            offsets |= moved
            if shape in shapes:
                adds += 2
            else:
                shapes.add(shape)
                adds += cost
        return adds + 2 * len(multiples) + weight * len(offsets)


# ---------------------------------------------------------------------- splits

def _multiple(c: int, have: tuple, m: int) -> list[tuple]:
    """c·u at the origin (not a base) from one step back: without `have`, -(−c·u), or c = a + b,
    c = a - b, c = b - a with a a base, the negation of one or c // 2 (so 5u = 2u + 3u); with
    `have` (one multiple of the bag at the origin), those with a that multiple."""
    found: list[tuple] = []
    if c < 0 and not have:
        found.append(("neg", (((0, 0, -c),),), None))
    bases = {1 << j for j in range(m + 1)}
    values = {h[0][2] for h in have} if have else bases | {-b for b in bases} | {c // 2}
    for a in sorted(values):
        if a in (0, c):
            continue
        ga = ((0, 0, a),)
        if c - a != a:
            found.append(("add", tuple(sorted((ga, ((0, 0, c - a),)))), None))
        found.append(("sub", (ga, ((0, 0, a - c),)), None))
        if c + a != 0:
            found.append(("sub", (((0, 0, c + a),), ga), None))
    return found


def _own_twos(g: Goal, lean: bool = True, overlaps: bool = False):
    """Two-operand splits of g that need no other goal: one whole tap and the rest, all taps of
    one value and the rest, the positive and the negative part, an edge row or column and the
    rest, a part that g also holds shifted (`_self_twos`, with `overlaps`: the full moves of the
    search that takes them; on the large kernels of the lean pass they cost more bags than they
    save), one atom or the top bit of a tap and the rest (the single taps: `_single`)."""
    gd = {(x, y): c for x, y, c in g}
    taps = _single(gd, lean)
    for p, c in taps:
        yield from _pair(((p[0], p[1], c),), as_goal({q: e for q, e in gd.items() if q != p}))
    values: dict[int, list] = {}
    for p, c in gd.items():
        values.setdefault(c, []).append(p)
    for c, where in sorted(values.items()):
        if 1 < len(where) < len(gd):
            part = as_goal(dict.fromkeys(where, c))
            yield from _pair(part, as_goal({q: e for q, e in gd.items() if q not in where}))
    positive = {p: c for p, c in gd.items() if c > 0}
    if 0 < len(positive) < len(gd):
        negative = as_goal({p: -c for p, c in gd.items() if c < 0})
        yield "sub", (as_goal(positive), negative), None
    for axis in (0, 1):
        for edge in (min(p[axis] for p in gd), max(p[axis] for p in gd)):
            line = {p: c for p, c in gd.items() if p[axis] == edge}
            if 1 < len(line) < len(gd):
                yield from _pair(as_goal(line), as_goal({p: c for p, c in gd.items()
                                                     if p not in line}))
    yield from _self_twos(gd, overlaps)
    for p, c in taps:
        sign = 1 if c > 0 else -1
        for part in sorted({(1 << (abs(c).bit_length() - 1)) * sign, sign}):
            if part != c:
                rest = dict(gd)
                rest[p] = c - part
                yield from _pair(((p[0], p[1], part),), as_goal(rest))


def _self_overlaps(gd: dict):
    """(step vector, c, S^v c) for each one- or two-step vector v where some part c of g (two
    taps or more) and its shift S^v c lie in g side by side (c + S^v c inside g, sign for
    sign): g = c + S^v c + rest, c made once and moved (Cain's programs add a partial sum to
    its own shift). c is taken greedily along v: each tap as much as the tap v further on
    still has room for."""
    for v, _, _ in _STEPS:
        room = dict(gd)
        part = {}
        for p in sorted(gd, key=lambda q: q[0] * v[0] + q[1] * v[1]):
            q = (p[0] + v[0], p[1] + v[1])
            a, b = room.get(p, 0), room.get(q, 0)
            if a and b and (a > 0) == (b > 0):
                c = min(abs(a), abs(b)) * (1 if a > 0 else -1)
                part[p] = c
                room[p] -= c
                room[q] -= c
        if len(part) >= 2:
            yield v, as_goal(part), as_goal({(p[0] + v[0], p[1] + v[1]): c
                                              for p, c in part.items()})


def _self_twos(gd: dict, overlaps: bool):
    """g = c + (g - c) for each c of `_self_overlaps` (none without `overlaps`): the rest
    holds S^v c, made from c later (`_with_goal`)."""
    for _, part, _ in _self_overlaps(gd) if overlaps else []:
        rest = dict(gd)
        for x, y, c in part:
            rest[(x, y)] -= c
        yield from _pair(part, as_goal(rest))


def _self_threes(g: Goal):
    """g = c + S^v c + rest (`_self_overlaps`) as one three-operand add, where the rest is
    not empty."""
    gd = {(x, y): c for x, y, c in g}
    for _, part, moved in _self_overlaps(gd):
        rest = dict(gd)
        for x, y, c in part + moved:
            rest[(x, y)] -= c
        rest = as_goal(rest)
        parts = tuple(sorted((part, moved, rest)))
        if rest and len(set(parts)) == 3:
            yield "add", parts, None


def _single(gd: dict, lean: bool = True) -> list:
    """The taps a split takes off one at a time, in order: every tap (full moves), or (lean)
    of each value the farthest from the origin (the last by position among equals). Taps of
    one value are the same multiple c·u and differ only in where they lie, so splitting off
    each of them is, but for its moves, one move made many times over: the farthest is the
    one whose moves are longest, and the nearer ones stay in the rest, to be built with it (a
    kernel of n taps of k values has k such splits, not n, and k^2 three-operand adds, not
    n^2)."""
    if not lean:
        return sorted(gd.items())
    farthest: dict[int, tuple] = {}
    for p, c in gd.items():
        key = (abs(p[0]) + abs(p[1]), p)
        if c not in farthest or key > farthest[c]:
            farthest[c] = key
    return sorted((key[1], c) for c, key in farthest.items())


def _with_goal(g: Goal, h: Goal):
    """g = r + S^d h, g = r - S^d h (S^d h lies inside g, sign for sign) and g = c + (g - c)
    with c the common part of g and S^d h, for every shift d that lines up a tap of h with one
    of g."""
    gd = {(x, y): c for x, y, c in g}
    hd = {(x, y): c for x, y, c in h}
    for d in sorted({(a[0] - b[0], a[1] - b[1]) for a in gd for b in hd}):
        hs = {(p[0] + d[0], p[1] + d[1]): c for p, c in hd.items()}
        for sign in (1, -1):
            rest = minus(gd, hs, sign)
            if rest is not None:
                if sign > 0:
                    yield from _pair(as_goal(hs), rest)
                elif rest:
                    yield "sub", (rest, as_goal(hs)), None
        common = _common(gd, hs)
        if common is not None:
            yield from _pair(as_goal(common), as_goal({p: gd[p] - common.get(p, 0) for p in gd}))


def _threes(twos: list[tuple], lean: bool = True) -> list[tuple]:
    """Three-operand adds: a two-operand add split whose rest is split once more by one
    whole tap (each triple once, in a fixed order)."""
    found = []
    seen = set()
    ordered = [(p[0], p[1]) for op, p, _ in twos if op == "add"]
    for a, rest in ordered + [(r, a) for a, r in ordered]:
        if len(rest) < 2:
            continue
        rd = {(x, y): c for x, y, c in rest}
        for p, c in _single(rd, lean):
            tap = ((p[0], p[1], c),)
            other = as_goal({q: e for q, e in rd.items() if q != p})
            parts = tuple(sorted((a, tap, other)))
            if len(set(parts)) == 3 and parts not in seen:
                seen.add(parts)
                found.append(("add", parts, None))
    return found


def _pair(a: Goal, rest: Goal):
    if a and rest and a != rest:
        yield "add", tuple(sorted((a, rest))), None




def _common(gd: dict, hs: dict) -> dict | None:
    common = {}
    for p, c in hs.items():
        have = gd.get(p, 0)
        if have and (have > 0) == (c > 0):
            common[p] = min(abs(have), abs(c)) * (1 if c > 0 else -1)
    if len(common) < 2 or common == gd:
        return None
    return common


# ---------------------------------------------------------------------- the estimate

def _goal_part(g: Goal, m: int) -> tuple | None:
    """(additions in halves, shape, multiples, shifted offsets) of one goal for `_estimate`;
    None for a base."""
    if is_base(g, m):
        return None
    many = frozenset(abs(c) for _, _, c in g if abs(c) & (abs(c) - 1) or abs(c) > 1 << m)
    moved = frozenset((x, y) for x, y, _ in g if (x, y) != (0, 0))
    cost = len(g) // 2 * 2 + (1 if len(g) == 1 and g[0][2] < 0 else 0)
    return cost, _shape(g), many, moved


def _shape(g: Goal) -> Goal:
    """g up to a shift and a sign: translated to its first tap, first coefficient positive."""
    x0, y0, c0 = g[0]
    sign = 1 if c0 > 0 else -1
    return tuple((x - x0, y - y0, c * sign) for x, y, c in g)


def _lower(bag: dict, m: int) -> int:
    """Steps any completion of `bag` still needs: one per goal that is not a base."""
    return sum(1 for g in bag if not is_base(g, m))


# ---------------------------------------------------------------------- helpers









def _far(g: Goal, v: tuple[int, int]) -> int:
    """`_distance` of g shifted by -v."""
    return sum(abs(x - v[0]) + abs(y - v[1]) for x, y, _ in g)

