"""Reverse moves: the ways one instruction can produce a goal, and the goals it then needs.

The scheduler searches backwards from the outputs (as Cain does): a `Move` says "the last
instruction that makes this goal is `step`; before it, these sub-goals must be in registers".
Moves are generated from the goal's terms alone: splits of the term multiset into 2 parts
(`add`, `sub`, and with a shared shift `addx`/`add2x`/`subx`/`sub2x`) or 3 parts (3-operand `add`),
shifts (`movx`/`mov2x`), halving (`div` gives x/2 and -x/2 at once; `divq` in the basic set) and
negation. Shifted splits are kept only when they bring terms nearer to where their nodes are made
or onto a goal that is already wanted (that is how translated partial sums get shared).
"""

from __future__ import annotations

from dataclasses import dataclass

from kalg.codegen.goals import INPUT_KEY, Key, Space, canonical
from kalg.codegen.network import Kind, Terms, negate, translate
from kalg.codegen.splits import three_way, two_way
from kalg.scamp5.isa import Dir

Vector = tuple[int, int]
SHIFTS_1: dict[Vector, tuple[Dir, ...]] = {d.vector: (d,) for d in (Dir.NORTH, Dir.EAST,
                                                                    Dir.SOUTH, Dir.WEST)}
SHIFTS_2: dict[Vector, tuple[Dir, ...]] = {
    (0, 2): (Dir.NORTH, Dir.NORTH), (2, 0): (Dir.EAST, Dir.EAST),
    (0, -2): (Dir.SOUTH, Dir.SOUTH), (-2, 0): (Dir.WEST, Dir.WEST),
    (1, 1): (Dir.NORTH, Dir.EAST), (1, -1): (Dir.SOUTH, Dir.EAST),
    (-1, 1): (Dir.NORTH, Dir.WEST), (-1, -1): (Dir.SOUTH, Dir.WEST),
}
"""Two-step moves as `mov2x`/`add2x`/`sub2x` direction pairs (equal or perpendicular)."""

@dataclass(frozen=True, slots=True)
class Step:
    """One instruction on values (register-free). `dests[0]` is the result; div's `dests[1]` is
    -x/2. For `sub`/`subx`/`sub2x` the result is srcs[0] (shifted by `dirs`) - srcs[1]."""

    op: str
    dests: tuple[Key, ...]
    srcs: tuple[Key, ...]
    dirs: tuple[Dir, ...] = ()

    @property
    def cost(self) -> int:
        return 2 if self.op == "double" else 1


@dataclass(frozen=True, slots=True)
class Move:
    """`step` makes the goal; `subgoals` are the terms of its operands (one per `step.srcs`)."""

    step: Step
    subgoals: tuple[Terms, ...]


@dataclass(frozen=True, slots=True)
class Schedule:
    """Steps in program order and the value each output register must hold at the end."""

    steps: tuple[Step, ...]
    outputs: tuple[tuple[str, Key], ...]

    @property
    def cost(self) -> int:
        return sum(s.cost for s in self.steps)


@dataclass(frozen=True, slots=True)
class _Part:
    """A candidate operand: its terms, value and translation class."""

    terms: Terms
    key: Key
    canon: Key
    anchor: tuple[int, int]


class MoveGen:
    """Generates (and memoises) the reverse moves of goals for one network and op set."""

    def __init__(self, space: Space, op_set: str):
        self.space = space
        self.fused = op_set == "all"
        self.shifts = dict(SHIFTS_1) | (SHIFTS_2 if self.fused else {})
        self._base: dict[Terms, list[Move]] = {}
        self._parts: dict[Terms, _Part] = {}
        self._splits: dict[Terms, list[tuple[_Part, _Part]]] = {}
        self._shifts: dict[tuple[Terms, Vector], _Part] = {}
        self._negs: dict[Terms, _Part] = {}

    # ------------------------------------------------------------------ helpers
    def part(self, terms: Terms) -> _Part:
        """The operand with these terms (memoised: keys are the expensive part)."""
        if (p := self._parts.get(terms)) is not None:
            return p
        key = self.space.key(terms)
        canon, anchor = canonical(key)
        p = self._parts[terms] = _Part(terms, key, canon, anchor)
        return p

    def _shifted(self, terms: Terms, v: Vector) -> _Part:
        """The operand that, read at p + v, gives `terms`."""
        if (p := self._shifts.get((terms, v))) is None:
            p = self._shifts[(terms, v)] = self.part(translate(terms, -v[0], -v[1]))
        return p

    def _negated(self, part: _Part) -> _Part:
        if (p := self._negs.get(part.terms)) is None:
            p = self._negs[part.terms] = self.part(negate(part.terms))
        return p

    # ------------------------------------------------------------------ public
    def base(self, terms: Terms) -> list[Move]:
        """Every move for goal `terms` that stands on its own (memoised)."""
        if (base := self._base.get(terms)) is None:
            base = self._base[terms] = self._base_moves(terms)
        return base

    def _base_moves(self, terms: Terms) -> list[Move]:
        goal = self.part(terms)
        if goal.key == INPUT_KEY:
            return []
        if not goal.key:
            return [Move(Step("res", (goal.key,), ()), ())]
        if len(terms) == 1:
            return self._single(goal)
        return self._sum(goal)

    # ------------------------------------------------------------------ single terms
    def _single(self, goal: _Part) -> list[Move]:
        node, x, y, sign = goal.terms[0]
        out = []
        for v, dirs in self.shifts.items():
            if _gain(goal.terms, v) > 0:
                out.append(self._mov(goal, self._shifted(goal.terms, v), dirs))
        if self.space.kind(node) is Kind.HALF:
            out += self._halve(goal, node, x, y, sign)
        elif sign < 0:
            pos = self.part(negate(goal.terms))
            out.append(Move(Step("neg", (goal.key,), (pos.key,)), (pos.terms,)))
        return out

    def _mov(self, goal: _Part, src: _Part, dirs: tuple[Dir, ...]) -> Move:
        op = "movx" if len(dirs) == 1 else "mov2x"
        return Move(Step(op, (goal.key,), (src.key,), dirs), (src.terms,))

    def _halve(self, goal: _Part, node: int, x: int, y: int, sign: int) -> list[Move]:
        arg = self.part(self.space.open(translate(self.space.net.nodes[node].terms, x, y)))
        pos = self.part(((node, x, y, 1),))
        neg = self.part(((node, x, y, -1),))
        if self.fused:
            return [Move(Step("div", (pos.key, neg.key), (arg.key,)), (arg.terms,))]
        if sign > 0:
            return [Move(Step("divq", (goal.key,), (arg.key,)), (arg.terms,))]
        return [Move(Step("neg", (goal.key,), (pos.key,)), (pos.terms,))]

    # ------------------------------------------------------------------ sums
    def _sum(self, goal: _Part) -> list[Move]:
        out: list[Move] = []
        for p, q in self.splits(goal.terms):
            out += self._pair(goal, p, q)
        if self.fused:
            out += self._triples(goal)
        if sum(s for *_, s in goal.terms) < 0:
            pos = self.part(negate(goal.terms))
            out.append(Move(Step("neg", (goal.key,), (pos.key,)), (pos.terms,)))
        for v, dirs in self.shifts.items():
            if _gain(goal.terms, v) > 0:
                out.append(self._mov(goal, self._shifted(goal.terms, v), dirs))
        return out

    def _pair(self, goal: _Part, p: _Part, q: _Part) -> list[Move]:
        """add / sub of two parts, unshifted or with a shift that brings them home."""
        if not p.key or not q.key:
            return []
        out = self._add(goal, p, q)
        out += self._subs(goal, p, q, (0, 0), ())
        if not self.fused:
            return out
        out += self._self_difference(goal, p, q)
        for v, dirs in self.shifts.items():
            gain_p, gain_q = _gain(p.terms, v), _gain(q.terms, v)
            if gain_p + gain_q > 0 or (gain_p + gain_q == 0 and _lands_home(p, q, v)):
                out += self._add(goal, self._shifted(p.terms, v), self._shifted(q.terms, v), dirs)
            if gain_p > 0 or gain_q > 0:
                out += self._subs(goal, p, q, v, dirs, only_closer=True)
        return out

    def _add(self, goal: _Part, p: _Part, q: _Part, dirs: tuple[Dir, ...] = ()) -> list[Move]:
        """goal = p + q (both read at p + dirs); equal operands need a copy first (`double`)."""
        if p.key == q.key:
            return [] if dirs else [Move(Step("double", (goal.key,), (p.key,)), (p.terms,))]
        op = ("add", "addx", "add2x")[len(dirs)]
        a, b = sorted((p, q), key=lambda t: t.key)
        return [Move(Step(op, (goal.key,), (a.key, b.key), dirs), (a.terms, b.terms))]

    def _subs(self, goal: _Part, p: _Part, q: _Part, v: Vector, dirs: tuple[Dir, ...],
              only_closer: bool = False, any_sign: bool = False) -> list[Move]:
        """goal = X(p+v) - Y with {X(+v), -Y} = {p, q} in either role. Unless `any_sign`, Y must
        be a single term or mostly negative in the goal, so that -Y is a natural value."""
        out = []
        for a, b in ((p, q), (q, p)):
            if not any_sign and sum(s for *_, s in b.terms) >= 0 and len(b.terms) > 1:
                continue
            if only_closer and _gain(a.terms, v) <= 0:
                continue
            x = self._shifted(a.terms, v) if dirs else a
            y = self._negated(b)
            if x.key == y.key and not dirs:
                continue  # x - x: nothing to compute (a shifted x(p+v) - x(p) is fine)
            op = ("sub", "subx", "sub2x")[len(dirs)]
            out.append(Move(Step(op, (goal.key,), (x.key, y.key), dirs), (x.terms, y.terms)))
        return out

    def _self_difference(self, goal: _Part, p: _Part, q: _Part) -> list[Move]:
        """goal = y(p+v) - y(p) from one register y (as in Sobel's sub2x(A, B, west, west, B))."""
        out = []
        for a, b in ((p, q), (q, p)):
            y = self._negated(b)
            if y.canon != a.canon:
                continue
            v = (a.anchor[0] - y.anchor[0], a.anchor[1] - y.anchor[1])
            if (dirs := self.shifts.get(v)) is not None:
                op = ("subx", "sub2x")[len(dirs) - 1]
                out.append(Move(Step(op, (goal.key,), (y.key, y.key), dirs), (y.terms, y.terms)))
        return out

    def _triples(self, goal: _Part) -> list[Move]:
        """goal = p + q + r (3-operand add of three different values)."""
        out = []
        seen: set[tuple[Key, ...]] = set()
        for parts in three_way(goal.terms):
            ps = sorted((self.part(t) for t in parts), key=lambda t: t.key)
            keys = tuple(p.key for p in ps)
            if keys in seen or not all(keys) or len(set(keys)) < 3:
                continue
            seen.add(keys)
            out.append(Move(Step("add3", (goal.key,), keys), tuple(p.terms for p in ps)))
        return out

    def splits(self, terms: Terms) -> list[tuple[_Part, _Part]]:
        """Distinct 2-way splits of a term multiset (all of them for short goals)."""
        if (s := self._splits.get(terms)) is not None:
            return s
        raw = two_way(terms)
        seen: set[tuple[Terms, Terms]] = set()
        out = []
        for a, b in raw:
            a, b = min(a, b), max(a, b)
            if (a, b) not in seen:
                seen.add((a, b))
                out.append((self.part(a), self.part(b)))
        self._splits[terms] = out
        return out

    # ------------------------------------------------------------------ merges
    def merges(self, terms: Terms, present: set[Key],
               wanted: dict[Key, list[tuple[int, int]]]) -> list[Move]:
        """Moves whose operand is a goal already wanted, or a translate of one: reusing it costs
        no new sum. Covers a whole-goal shift and splits with such a part."""
        goal = self.part(terms)
        if not wanted or len(terms) == 0 or goal.key == INPUT_KEY:
            return []
        out = [self._mov(goal, self._shifted(terms, v), dirs)
               for v, dirs in self._vectors_to(goal, wanted)]
        if len(terms) >= 2:
            for p, q in self.splits(terms):
                out += self._merge_pair(goal, p, q, present, wanted)
        return out

    def _vectors_to(self, part: _Part, wanted: dict[Key, list[tuple[int, int]]]):
        for ax, ay in wanted.get(part.canon, ()):
            v = (part.anchor[0] - ax, part.anchor[1] - ay)
            if (dirs := self.shifts.get(v)) is not None:
                yield v, dirs

    def _merge_pair(self, goal: _Part, p: _Part, q: _Part, present: set[Key],
                    wanted: dict[Key, list[tuple[int, int]]]) -> list[Move]:
        """Splits with a part (or its negation) wanted as is, or wanted up to one move."""
        if not p.key or not q.key:
            return []
        out = []
        if p.key in present or q.key in present:
            out += self._add(goal, p, q)
        negated = self._negated(q).key in present or self._negated(p).key in present
        if negated or p.key in present or q.key in present:
            out += self._subs(goal, p, q, (0, 0), (), any_sign=True)
        if not self.fused:
            return out
        vectors = dict(self._vectors_to(p, wanted)) | dict(self._vectors_to(q, wanted))
        for v, dirs in sorted(vectors.items()):
            ps, qs = self._shifted(p.terms, v), self._shifted(q.terms, v)
            out += self._add(goal, ps, qs, dirs)
            out += self._subs(goal, p, q, v, dirs, any_sign=True)
        return out


def _lands_home(p: _Part, q: _Part, v: Vector) -> bool:
    """A lone term of p or q moves exactly onto its node's own place."""
    return any(len(t.terms) == 1 and t.terms[0][1:3] == v for t in (p, q))


def _gain(terms: Terms, v: Vector) -> int:
    """How much nearer home the terms get when their operand is read from p + v instead."""
    vx, vy = v
    return sum(abs(x) + abs(y) - abs(x - vx) - abs(y - vy) for _, x, y, _ in terms)
