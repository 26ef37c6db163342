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

from dataclasses import dataclass, field
from operator import attrgetter

from kalg.targets.scamp5.codegen.goals import INPUT_KEY, Key, Space, canonical, sign_class
from kalg.targets.scamp5.codegen.heuristic import Shape, goal_shape
from kalg.targets.scamp5.codegen.network import Kind, Terms, negate, translate
from kalg.targets.scamp5.codegen.splits import balanced_three_way, three_way_indices, two_way
from kalg.targets.scamp5.machine.isa import Dir

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

# Steps and moves are made by the hundred thousand per compile and never changed after: they are
# hashable value objects (`unsafe_hash`: the hash and equality of a frozen dataclass) without
# `frozen`, whose generated __init__ sets each field through object.__setattr__ (five times slower).
@dataclass(slots=True, unsafe_hash=True)
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


@dataclass(slots=True, unsafe_hash=True)
class Move:
    """`step` makes the goal; `operands` are its operands' values (one per `step.srcs`)."""

    step: Step
    operands: tuple[Operand, ...]
    prepared: tuple | None = field(default=None, compare=False, repr=False)
    """What a search reads of the move before it applies it (`search._prepare`), once."""

    @property
    def subgoals(self) -> tuple[Terms, ...]:
        """The terms of the operands: what must be in registers before the step."""
        return tuple(p.terms for p in self.operands)


@dataclass(slots=True, unsafe_hash=True)
class NearMove(Move):
    """A move whose first operand is one step from a value wanted when it was generated
    (`MoveGen._near_wanted_subs`): the search prices that operand at one instruction."""


@dataclass(slots=True, unsafe_hash=True)
class CentreMove(Move):
    """A 3-operand add along `splits.balanced_three_way` (a long goal's centre-difference
    split); only the `Weights.self_difference` search takes it."""


@dataclass(frozen=True, slots=True)
class Schedule:
    """Steps in program order and the value each output register must hold at the end."""

    steps: tuple[Step, ...]
    outputs: tuple[tuple[str, Key], ...]

    @property
    def cost(self) -> int:
        return sum(s.cost for s in self.steps)


_Role = tuple["Operand", "Operand", "Operand"]
"""(a, b, -b): goal = a - (-b) read as X - Y (see `MoveGen._roles`)."""


@dataclass(slots=True, eq=False)
class Operand:
    """A candidate operand: its terms, value and classes, and facts the move generator and the
    search ask of it again and again. One object per term list (`MoveGen.part`), so the facts
    are computed once and operands hash by identity (cheaper than hashing their terms)."""

    terms: Terms
    key: Key
    signs: int
    """Sum of the terms' signs (negative: the part is mostly negated)."""
    _canonical: tuple[Key, tuple[int, int]] | None = None
    _cls: Key | None = None
    _moved_from: tuple[Operand, int, int] | None = None
    """(source, dx, dy) if made as `source` moved by (dx, dy): same canonical key."""
    _class_of: Operand | None = None
    """An older operand of the same class (source of a translate or a negation), if any."""
    _opened: Terms | None = None
    _shape: tuple | None = None
    _gains: dict[Vector, int] | None = None
    _negated: Operand | None = None
    _shifted: dict[Vector, Operand] = field(default_factory=dict)

    @property
    def canon(self) -> Key:
        """`key` translated to the origin (`goals.canonical`; memoised)."""
        return self._canonical_pair()[0]

    @property
    def anchor(self) -> tuple[int, int]:
        """The translation from `canon` to `key`."""
        return self._canonical_pair()[1]

    def _canonical_pair(self) -> tuple[Key, tuple[int, int]]:
        if self._canonical is None:
            if self._moved_from is None:
                self._canonical = canonical(self.key)
            else:  # a translate: the source's canonical key, the anchor moved along
                source, dx, dy = self._moved_from
                canon, (x, y) = source._canonical_pair()
                self._canonical = (canon, (x + dx, y + dy))
        return self._canonical

    @property
    def cls(self) -> Key:
        """The value up to translation and sign (`goals.sign_class`; memoised)."""
        if self._cls is None:
            same = self._class_of
            self._cls = same.cls if same is not None else sign_class(self.key)[0]
        return self._cls

    @property
    def gains(self) -> dict[Vector, int]:
        """Shift vector v -> how much nearer home the terms get when read from p + v
        (`_gains`; memoised)."""
        if self._gains is None:
            self._gains = _gains(self.terms)
        return self._gains


class MoveGen:
    """Generates (and memoises) the reverse moves of goals for one network and op set."""

    def __init__(self, space: Space, op_set: str):
        self.space = space
        self.fused = op_set == "all"
        self.shifts = dict(SHIFTS_1) | (SHIFTS_2 if self.fused else {})
        self._base: dict[Terms, list[Move]] = {}
        self._parts: dict[Terms, Operand] = {}
        self._splits: dict[Terms, list[tuple[Operand, Operand]]] = {}
        self._split_indexes: dict[Terms, _SplitIndex] = {}
        self._near_indexes: dict[Terms, _NearIndex] = {}

    def release(self) -> None:
        """Cut the links between this generator's operands (`memo.Memo.release`) and forget
        them; the generator is empty afterwards."""
        for p in self._parts.values():
            p._moved_from = p._class_of = p._negated = None
            p._shifted = {}
        self._parts.clear()
        self._base.clear()
        self._splits.clear()
        self._split_indexes.clear()
        self._near_indexes.clear()

    def held(self) -> int:
        """How many operands this generator holds."""
        return len(self._parts)

    # ------------------------------------------------------------------ helpers
    def part(self, terms: Terms) -> Operand:
        """The operand with these terms (memoised: keys are the expensive part)."""
        if (p := self._parts.get(terms)) is not None:
            return p
        return self._new_part(terms, self.space.key(terms))

    def _new_part(self, terms: Terms, key: Key) -> Operand:
        """The operand with these terms and their key, remembered for `part`."""
        p = self._parts[terms] = Operand(terms, key, sum(t[3] for t in terms))
        return p

    def shifted(self, part: Operand, v: Vector) -> Operand:
        """The operand that, read at p + v, gives `part` (memoised on `part`)."""
        if (p := part._shifted.get(v)) is None:
            dx, dy = -v[0], -v[1]
            terms, key = _translate_sorted(part.terms, dx, dy), _translate_sorted(part.key, dx, dy)
            p = part._shifted[v] = self._derived(terms, key, part.signs, part, (dx, dy))
        return p

    def opened(self, part: Operand) -> Terms:
        """`Space.open` of the operand's terms: the goal it becomes (memoised on `part`)."""
        if part._opened is None:
            part._opened = self.space.open(part.terms)
        return part._opened

    def shape(self, part: Operand) -> Shape:
        """`heuristic.goal_shape` of the goal the operand becomes (memoised on `part`): what
        every ranking's cost of it is made of."""
        if part._shape is None:
            part._shape = goal_shape(self.space, self.fused, self.opened(part))
        return part._shape

    def _negated(self, part: Operand) -> Operand:
        if (p := part._negated) is None:
            p = self._derived(negate(part.terms), _negated_key(part.key), -part.signs, part)
            part._negated = p
        return p

    def _derived(self, terms: Terms, key: Key, signs: int, source: Operand,
                 moved: tuple[int, int] | None = None) -> Operand:
        """`part(terms)` for a translate (by `moved`) or negation of `source`, whose key and
        signs are known: saves expanding the terms again, and a new operand takes its classes
        from `source` when asked (only a new one: links then point to older operands)."""
        if (p := self._parts.get(terms)) is None:
            p = self._parts[terms] = Operand(terms, key, signs)
            p._class_of = source
            if moved is not None:
                p._moved_from = (source, *moved)
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
    def _single(self, goal: Operand) -> list[Move]:
        node, x, y, sign = goal.terms[0]
        out = []
        for v, dirs in self.shifts.items():
            if goal.gains[v] > 0:
                out.append(self._mov(goal, self.shifted(goal, v), dirs))
        if self.space.kind(node) is Kind.HALF:
            out += self._halve(goal, node, x, y, sign)
        elif sign < 0:
            pos = self.part(negate(goal.terms))
            out.append(Move(Step("neg", (goal.key,), (pos.key,)), (pos,)))
        return out

    def _mov(self, goal: Operand, src: Operand, dirs: tuple[Dir, ...]) -> Move:
        op = "movx" if len(dirs) == 1 else "mov2x"
        return Move(Step(op, (goal.key,), (src.key,), dirs), (src,))

    def _halve(self, goal: Operand, node: int, x: int, y: int, sign: int) -> list[Move]:
        arg = self.part(self.space.open(translate(self.space.net.nodes[node].terms, x, y)))
        pos = self.part(((node, x, y, 1),))
        neg = self.part(((node, x, y, -1),))
        if self.fused:
            return [Move(Step("div", (pos.key, neg.key), (arg.key,)), (arg,))]
        if sign > 0:
            return [Move(Step("divq", (goal.key,), (arg.key,)), (arg,))]
        return [Move(Step("neg", (goal.key,), (pos.key,)), (pos,))]

    # ------------------------------------------------------------------ sums
    def _sum(self, goal: Operand) -> list[Move]:
        out: list[Move] = []
        for p, q in self.splits(goal.terms):
            out += self._pair(goal, p, q)
        if self.fused:
            out += self._triples(goal)
        if goal.signs < 0:
            pos = self.part(negate(goal.terms))
            out.append(Move(Step("neg", (goal.key,), (pos.key,)), (pos,)))
        for v, dirs in self.shifts.items():
            if goal.gains[v] > 0:
                out.append(self._mov(goal, self.shifted(goal, v), dirs))
        return out

    def _pair(self, goal: Operand, p: Operand, q: Operand) -> list[Move]:
        """add / sub of two parts, unshifted or with a shift that brings them home."""
        if not p.key or not q.key:
            return []
        roles = self._roles(p, q)
        out = self._add(goal, p, q)
        out += self._subs(goal, roles, (0, 0), ())
        if not self.fused:
            return out
        out += self._self_difference(goal, p, q)
        gains_p, gains_q = p.gains, q.gains
        for v, dirs in self.shifts.items():
            gain_p, gain_q = gains_p[v], gains_q[v]
            if gain_p + gain_q > 0 or (gain_p + gain_q == 0 and _lands_home(p, q, v)):
                out += self._add(goal, self.shifted(p, v), self.shifted(q, v), dirs)
            if gain_p > 0 or gain_q > 0:
                out += self._subs(goal, roles, v, dirs, only_closer=True)
        return out

    def _add(self, goal: Operand, p: Operand, q: Operand, dirs: tuple[Dir, ...] = ()) -> list[Move]:
        """goal = p + q (both read at p + dirs); equal operands need a copy first (`double`)."""
        if p.key == q.key:
            return [] if dirs else [Move(Step("double", (goal.key,), (p.key,)), (p,))]
        op = ("add", "addx", "add2x")[len(dirs)]
        a, b = (p, q) if p.key < q.key else (q, p)  # operands in key order
        return [Move(Step(op, (goal.key,), (a.key, b.key), dirs), (a, b))]

    def _roles(self, p: Operand, q: Operand, any_sign: bool = False) -> list[_Role]:
        """The ways to read goal = p + q as X - Y: (a, b, -b) with X = a (shifted by the move)
        and Y = -b, for {a, b} = {p, q}. Unless `any_sign`, b must be a single term or mostly
        negative in the goal, so that -b is a natural value."""
        return [(a, b, self._negated(b)) for a, b in ((p, q), (q, p))
                if any_sign or b.signs < 0 or len(b.terms) <= 1]

    def _subs(self, goal: Operand, roles: list[_Role], v: Vector, dirs: tuple[Dir, ...],
              only_closer: bool = False) -> list[Move]:
        """goal = X(p+v) - Y in each of the `roles`; `only_closer`: where X gets nearer home."""
        out = []
        for a, _, y in roles:
            if only_closer and a.gains[v] <= 0:
                continue
            x = self.shifted(a, v) if dirs else a
            if x.key == y.key and not dirs:
                continue  # x - x: nothing to compute (a shifted x(p+v) - x(p) is fine)
            op = ("sub", "subx", "sub2x")[len(dirs)]
            out.append(Move(Step(op, (goal.key,), (x.key, y.key), dirs), (x, y)))
        return out

    def _self_difference(self, goal: Operand, p: Operand, q: Operand) -> list[Move]:
        """goal = y(p+v) - y(p) from one register y (as in Sobel's sub2x(A, B, west, west, B))."""
        out = []
        if len(p.key) != len(q.key):
            return out  # a translate of -q has as many atoms as q (a cheap first test)
        for a, b in ((p, q), (q, p)):
            y = self._negated(b)
            if y.canon != a.canon:
                continue
            v = (a.anchor[0] - y.anchor[0], a.anchor[1] - y.anchor[1])
            if (dirs := self.shifts.get(v)) is not None:
                op = ("subx", "sub2x")[len(dirs) - 1]
                out.append(Move(Step(op, (goal.key,), (y.key, y.key), dirs), (y, y)))
        return out

    def _triples(self, goal: Operand) -> list[Move]:
        """goal = p + q + r (3-operand add of three different values)."""
        out = []
        seen: set[tuple[Key, ...]] = set()
        terms = goal.terms
        blocks: dict[tuple[int, ...], Operand] = {}  # a block recurs in many splits
        full = three_way_indices(len(terms))
        kind = Move if full else CentreMove
        for split in full or balanced_three_way(terms):
            ps = []
            for block in split:
                if (part := blocks.get(block)) is None:
                    part = blocks[block] = self.part(tuple([terms[i] for i in block]))
                ps.append(part)
            ps.sort(key=_operand_key)
            keys = (ps[0].key, ps[1].key, ps[2].key)
            if not all(keys) or keys[0] == keys[1] or keys[1] == keys[2] or keys in seen:
                continue  # an empty or repeated operand (sorted: repeats are adjacent)
            seen.add(keys)
            out.append(kind(Step("add3", (goal.key,), keys), tuple(ps)))
        return out

    def splits(self, terms: Terms) -> list[tuple[Operand, Operand]]:
        """Distinct 2-way splits of a term multiset (all of them for short goals)."""
        if (s := self._splits.get(terms)) is not None:
            return s
        raw = two_way(terms)
        seen: set[tuple[Terms, Terms]] = set()
        out = []
        whole = self.part(terms).key
        for a, b in raw:
            a, b = min(a, b), max(a, b)
            if (a, b) not in seen:
                seen.add((a, b))
                out.append(self._halves(whole, a, b))
        self._splits[terms] = out
        return out

    def _halves(self, whole: Key, a: Terms, b: Terms) -> tuple[Operand, Operand]:
        """`(part(a), part(b))` for a split of a sum whose key is `whole`. Keys add up, so
        the key of a new part is the whole's minus the other part's (`Space.key_rest`):
        cheaper than expanding its terms (the long part of a long sum's one-term-off split)."""
        pa, pb = self._parts.get(a), self._parts.get(b)
        if pa is None and pb is None:
            if len(a) <= len(b):
                pa = self.part(a)
            else:
                pb = self.part(b)
        if pa is None:
            pa = self._new_part(a, self.space.key_rest(a, whole, pb.key))
        if pb is None:
            pb = self._new_part(b, self.space.key_rest(b, whole, pa.key))
        return pa, pb

    # ------------------------------------------------------------------ merges
    def merges(self, terms: Terms, present: set[Key],
               wanted: dict[Key, list[tuple[int, int]]], near: bool = False) -> list[Move]:
        """Moves whose operand is a goal already wanted, or a translate of one: reusing it costs
        no new sum. Covers a whole-goal shift and splits with such a part; with `near`, also
        `_near_wanted_subs` (an operand one step from a wanted value)."""
        goal = self.part(terms)
        if not wanted or len(terms) == 0 or goal.key == INPUT_KEY:
            return []
        out = [self._mov(goal, self.shifted(goal, v), dirs)
               for v, dirs in self._vectors_to(goal, wanted)]
        if len(terms) >= 2:
            splits = self.splits(terms)
            negated = {_negated_key(k) for k in present}
            index = self._split_index(terms, splits)
            pairs = index.pairs(present, negated, wanted, self.shifts if self.fused else None)
            nears = (self._near_index(terms, splits).hits(present, negated)
                     if near and self.fused else ())
            if not (pairs or nears):
                return out
            sizes = {len(canon) for canon in wanted}
            # Only the splits the indexes name can give a move: the others give none.
            for i in sorted({*pairs, *nears}):
                p, q = splits[i]
                if i in pairs:
                    out += self._merge_pair(goal, p, q, present, negated, wanted, sizes)
                if i in nears:
                    out += self._near_wanted_subs(goal, p, q, present, negated)
        return out

    def _split_index(self, terms: Terms, splits: list[tuple[Operand, Operand]]) -> _SplitIndex:
        """The `_SplitIndex` of a goal's splits (memoised per goal)."""
        if (index := self._split_indexes.get(terms)) is None:
            index = self._split_indexes[terms] = _SplitIndex(splits, self.fused)
        return index

    def _near_index(self, terms: Terms, splits: list[tuple[Operand, Operand]]) -> _NearIndex:
        """The `_NearIndex` of a goal's splits (memoised per goal; op set all only)."""
        if (index := self._near_indexes.get(terms)) is None:
            index = self._near_indexes[terms] = _NearIndex(self, splits)
        return index

    def _near_wanted_subs(self, goal: Operand, p: Operand, q: Operand, present: set[Key],
                          negated_present: set[Key]) -> list[Move]:
        """goal = X(p+v) - Y with Y one term and X one term away from a wanted value W (so
        X is one `addx`/`subx`/`sub2x`-like step from W). This is how (s_v - 1)·Y is folded
        into a sum in one instruction: P + (s_v - 1)·Y = (s_-v P + Y)(p+v) - Y, e.g. the
        Laplacian's (s_E + s_S - 2)·A = (s_NE·A - (s_N - 1)·A)(p+south) - A. Such X are
        farther from home than the goal's part, so `_pair` (which keeps only moves that bring
        terms nearer) never offers them."""
        out = []
        for a, b in ((p, q), (q, p)):
            if len(b.terms) != 1:
                continue
            y = self._negated(b)
            for v, dirs in self.shifts.items():
                if a.gains[v] > 0:
                    continue  # `_pair` offers it already
                x = self.shifted(a, v)
                if _one_atom_from(x.key, present, negated_present):
                    op = ("subx", "sub2x")[len(dirs) - 1]
                    out.append(NearMove(Step(op, (goal.key,), (x.key, y.key), dirs), (x, y)))
        return out

    def _vectors_to(self, part: Operand, wanted: dict[Key, list[tuple[int, int]]]):
        for ax, ay in wanted.get(part.canon, ()):
            v = (part.anchor[0] - ax, part.anchor[1] - ay)
            if (dirs := self.shifts.get(v)) is not None:
                yield v, dirs

    def _merge_pair(self, goal: Operand, p: Operand, q: Operand, present: set[Key],
                    negated_present: set[Key], wanted: dict[Key, list[tuple[int, int]]],
                    sizes: set[int]) -> list[Move]:
        """Splits with a part (or its negation) wanted as is, or wanted up to one move.
        `negated_present` holds the negations of `present` (p's negation is wanted exactly when
        p is among them: no need to make the negated operand to ask); `sizes` the lengths of
        the keys in `wanted` (a part of another length is no translate of one: no lookup)."""
        if not p.key or not q.key:
            return []
        out = []
        if p.key in present or q.key in present:
            out += self._add(goal, p, q)
        negated = q.key in negated_present or p.key in negated_present
        roles = None
        if negated or p.key in present or q.key in present:
            roles = self._roles(p, q, any_sign=True)
            out += self._subs(goal, roles, (0, 0), ())
        if not self.fused:
            return out
        vectors = {}
        for part in (p, q):
            if len(part.key) in sizes:
                vectors |= dict(self._vectors_to(part, wanted))
        for v, dirs in sorted(vectors.items()):
            ps, qs = self.shifted(p, v), self.shifted(q, v)
            out += self._add(goal, ps, qs, dirs)
            roles = roles or self._roles(p, q, any_sign=True)
            out += self._subs(goal, roles, v, dirs)
        return out


class _SplitIndex:
    """Which splits of a goal `MoveGen._merge_pair` can give a move for, by the bag: a split
    gives one only where a part's key is in the bag or among the negations of its keys
    (`by_key`), or (op set all) a part's canonical key is wanted at an anchor one shift from
    the part's (`by_canon`). Splits with an empty part give none and are left out. `merges`
    asks this instead of trying every split of every goal in every bag: the same moves, in the
    same order."""

    __slots__ = ("by_canon", "by_key")

    def __init__(self, splits: list[tuple[Operand, Operand]], fused: bool):
        self.by_key: dict[Key, list[int]] = {}
        """A key -> the splits with a part of that key."""
        self.by_canon: dict[Key, list[tuple[int, tuple[int, int]]]] = {}
        """A canonical key -> (split, the part's anchor) for each part of that class (op set all:
        the only one with shifted splits)."""
        for i, (p, q) in enumerate(splits):
            if not p.key or not q.key:
                continue
            for part in (p, q):
                self.by_key.setdefault(part.key, []).append(i)
                if fused:
                    self.by_canon.setdefault(part.canon, []).append((i, part.anchor))

    def pairs(self, present: set[Key], negated: set[Key],
              wanted: dict[Key, list[tuple[int, int]]],
              shifts: dict[Vector, tuple[Dir, ...]] | None) -> set[int]:
        """The splits that can give a move in a bag of keys `present` (`negated`: their
        negations) and wanted values `wanted` (`MoveGen.merges`); `shifts`: the op set's shift
        vectors (None: no shifted splits, op set basic)."""
        hits = _named(self.by_key, present, negated)
        if shifts is None:
            return hits
        by_canon = self.by_canon
        for canon, anchors in wanted.items():
            for i, (x, y) in by_canon.get(canon, ()):
                if i not in hits and any((x - ax, y - ay) in shifts for ax, ay in anchors):
                    hits.add(i)
        return hits


class _NearIndex:
    """Which splits of a goal `MoveGen._near_wanted_subs` can give a move for, by the bag: one
    whose shifted operand is one atom from a key of the bag or from the negation of one
    (`by_key`: each such near key -> the splits). The same moves, in the same order."""

    __slots__ = ("by_key",)

    def __init__(self, gen: MoveGen, splits: list[tuple[Operand, Operand]]):
        self.by_key: dict[Key, list[int]] = {}
        for i, (p, q) in enumerate(splits):
            for a, b in ((p, q), (q, p)):
                if len(b.terms) != 1:
                    continue
                for v in gen.shifts:
                    if a.gains[v] <= 0:
                        for near in _one_atom_off(gen.shifted(a, v).key):
                            self.by_key.setdefault(near, []).append(i)

    def hits(self, present: set[Key], negated: set[Key]) -> set[int]:
        """The splits that can give a move in a bag of keys `present` (`negated`: their
        negations)."""
        return _named(self.by_key, present, negated)


def _named(by_key: dict[Key, list[int]], present: set[Key], negated: set[Key]) -> set[int]:
    """The splits `by_key` names for a key of the bag (`present`) or a negation of one."""
    hits: set[int] = set()
    for keys in (present, negated):
        for k in keys:
            if (found := by_key.get(k)) is not None:
                hits.update(found)
    return hits


def _one_atom_off(key: Key) -> list[Key]:
    """The non-empty values `key` plus or minus one atom nearer zero (`_one_atom_from`'s)."""
    out = []
    for i, (a, x, y, c) in enumerate(key):
        rest = c - (1 if c > 0 else -1)
        near = (*key[:i], (a, x, y, rest), *key[i + 1:]) if rest else key[:i] + key[i + 1:]
        if near:
            out.append(near)
    return out


def _translate_sorted(terms: Terms, dx: int, dy: int) -> Terms:
    """`network.translate` for sorted terms (as all `Terms` and keys are): a common offset
    keeps their order, so there is nothing to sort."""
    return tuple([(n, x + dx, y + dy, s) for n, x, y, s in terms])


def _one_atom_from(key: Key, present: set[Key], negated_present: set[Key]) -> bool:
    """Whether the value `key` is a wanted value (or its negation) plus or minus one atom."""
    for i, (a, x, y, c) in enumerate(key):
        rest = c - (1 if c > 0 else -1)
        near = (*key[:i], (a, x, y, rest), *key[i + 1:]) if rest else key[:i] + key[i + 1:]
        if near and (near in present or near in negated_present):
            return True
    return False


_operand_key = attrgetter("key")
"""An operand's key (as a sort key: looked up in C)."""


def _negated_key(key: Key) -> Key:
    """The key of the negated value. A key has one entry per (atom, x, y), so negating its
    coefficients keeps it sorted."""
    return tuple((a, x, y, -c) for a, x, y, c in key)


def _lands_home(p: Operand, q: Operand, v: Vector) -> bool:
    """A lone term of p or q moves exactly onto its node's own place."""
    return any(len(t.terms) == 1 and t.terms[0][1:3] == v for t in (p, q))


def _gains(terms: Terms) -> dict[Vector, int]:
    """How much nearer home the terms get when their operand is read from p + v instead of p,
    for every shift vector v. A term's gain, |x| + |y| - |x - vx| - |y - vy|, is an x part
    plus a y part, so one count per axis gives every vector."""
    nx, ny = [0] * 5, [0] * 5
    for _, x, y, _ in terms:
        nx[x + 2 if -2 <= x <= 2 else (0 if x < 0 else 4)] += 1
        ny[y + 2 if -2 <= y <= 2 else (0 if y < 0 else 4)] += 1
    gx, gy = _axis_gains(nx), _axis_gains(ny)
    return {(dx, dy): gx[dx] + gy[dy] for dx, dy in _VECTORS}


_VECTORS = (*SHIFTS_1, *SHIFTS_2)
"""Every shift vector (components -2..2)."""


def _axis_gains(counts: list[int]) -> dict[int, int]:
    """Per step d in -2..2 along one axis, the sum of |c| - |c - d| over the coordinates c,
    given `counts`: how many are <= -2, -1, 0, 1, >= 2. For d > 0 a coordinate gains d from d
    on, loses d up to 0 and gains 2c - d between (0 for d = 2, c = 1); d < 0 mirrors that."""
    le_m2, m1, z, p1, ge2 = counts
    return {0: 0,
            1: p1 + ge2 - (z + m1 + le_m2), 2: 2 * ge2 - 2 * (z + m1 + le_m2),
            -1: m1 + le_m2 - (z + p1 + ge2), -2: 2 * le_m2 - 2 * (z + p1 + ge2)}
