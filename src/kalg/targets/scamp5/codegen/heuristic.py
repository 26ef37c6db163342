"""Estimates of the instructions a set of goals still needs: the scheduler's ranking and bound.

`estimate` is a guess used to rank states (it need not be a bound); `lower_bound` never exceeds
the true remaining count, so it can prune. Both count shared work once: a node that several goals
read is paid for once, and a goal that is a translate (or negation) of another only pays the move.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from kalg.targets.scamp5.codegen.goals import INPUT_KEY, Key, Space, distance, sign_class
from kalg.targets.scamp5.codegen.network import Kind, Terms


@dataclass(frozen=True, slots=True)
class Weights:
    """Relative weights of the estimate's parts (instruction-count units)."""

    shift: float = 1.0
    """Per two terms of a sum that sit away from where their node is made (one fused move)."""
    distance: float = 0.05
    """Per step of total distance from home: a tie-breaker towards nearer operands."""
    size: float = 0.1
    """Per distinct value wanted: fewer live values leave more room."""
    pressure: float = 1.0
    """Per value live beyond (registers - 2): a full register file leaves no room to split."""
    self_difference: bool = False
    """Price x(p+v) - y(p) (|v| <= 2 steps) at one instruction, as `subx`/`sub2x` make it, not
    an add plus a move: the centre-difference shape sum_d c_d (s_d - 1)·x of Laplacians. Off by
    default: it steers the beam away from the shapes the other rankings find."""


@dataclass(frozen=True, slots=True)
class _GoalInfo:
    """What the estimate needs of one goal (memoised per value)."""

    canon: Key
    cid: int
    """`canon`'s number in this estimator (`Estimator._canons`): a cheap dictionary key."""
    x: int
    y: int
    sign: int
    cost: float
    nodes: frozenset[int]
    """Nodes (and their descendants) that making this goal reads."""
    placements: frozenset[tuple[int, int, int, int]]
    """(halving, x, y, sign) this goal is, if it is one placed halving (sign 1 with div)."""


class Estimator:
    """Cost estimates for one network and op set (memoising). Only `estimate`'s pressure term
    depends on the register budget, so one estimator serves every budget (`memo.Memo`)."""

    def __init__(self, space: Space, op_set: str, weights: Weights | None = None):
        self.space = space
        self.fused = op_set == "all"
        self.w = weights or Weights()
        self.node_cost = [self._node_cost(i) for i in range(len(space.net.nodes))]
        self._goal_cost: dict[Terms, float] = {}
        self._infos: dict[Terms, _GoalInfo] = {}
        self._infos_by_id: dict[int, tuple[Terms, _GoalInfo]] = {}
        """`_info` by the identity of the terms object (`work_left`'s lookup, the hottest of
        the search: a tuple of tuples is hashed anew at every lookup by value, an id is not).
        Each entry keeps its terms alive, so an id is never reused while this holds it."""
        self._classes: dict[Key, Key] = {}
        self._canons: dict[Key, int] = {}
        """Each canonical key met by `_info`, numbered in the order met (`_GoalInfo.cid`)."""
        self._estimates: dict[tuple[tuple[Key, Terms], ...], float] = {}

    # ------------------------------------------------------------------ pieces
    def combine(self, k: int) -> int:
        """Adds needed to join k operands."""
        return _combine(k, self.fused)

    def moves(self, dist: int) -> int:
        """Moves needed to carry a value `dist` steps."""
        return math.ceil(dist / 2) if self.fused else dist

    def shift_work(self, terms: Terms) -> float:
        """Moves to bring a sum's terms to one place (two per fused move with the full set)."""
        return self._shift(_spread(terms, self.fused))

    def _shift(self, spread: int) -> float:
        """`shift_work` of terms whose `_spread` is `spread`."""
        if not spread:
            return 0.0
        if self.fused:  # the distance is not asked for: it is the hot path of op set all
            return self.w.shift * math.ceil(spread / 2)
        return self.w.shift * spread

    def sum_cost(self, terms: Terms) -> float:
        """Instructions to build a sum of terms whose nodes exist."""
        return self._sum_cost(*_sum_shape(self.space, self.fused, terms))

    def _sum_cost(self, combine: int, spread: int, negation: int, subx: bool) -> float:
        """`sum_cost` of terms whose `_sum_shape` is given."""
        if self.fused and self.w.self_difference and subx:
            return 1.0
        return combine + self._shift(spread) + negation

    def negation(self, terms: Terms) -> int:
        """1 when no term is positive and some negated term is not a halving: its sign must be
        paid for with a neg (div hands out -x/2 for free, so negated halvings cost nothing)."""
        return _negation(self.space, self.fused, terms)

    def _node_cost(self, i: int) -> float:
        node = self.space.net.nodes[i]
        if node.kind is Kind.INPUT:
            return 0.0
        if node.kind is Kind.HALF:
            return 1.0 + self.sum_cost(node.terms)
        return self.sum_cost(node.terms)

    def goal_cost(self, terms: Terms) -> float:
        """Own cost of a goal (its nodes are charged separately, once per state)."""
        if (c := self._goal_cost.get(terms)) is not None:
            return c
        c = self._goal_cost[terms] = self.shape_cost(goal_shape(self.space, self.fused, terms))
        return c

    def shape_cost(self, shape: Shape) -> float:
        """`goal_cost` of a goal whose `goal_shape` is `shape`: the weighted part alone (the
        shape is the same under every ranking, `moves.MoveGen.shape` keeps it per operand)."""
        half, combine, spread, negation, subx, far = shape
        c = self.node_cost[half] if half >= 0 else self._sum_cost(combine, spread, negation, subx)
        return c + self.w.distance * far

    def goal_class(self, key: Key) -> Key:
        """Canonical key up to translation and sign (memoised)."""
        if (c := self._classes.get(key)) is None:
            c = self._classes[key] = sign_class(key)[0]
        return c

    # ------------------------------------------------------------------ states
    def _info(self, key: Key, terms: Terms) -> _GoalInfo:
        # Memoised by the terms, not the key: the same value may come as other terms, and a
        # cache that kept the first terms' facts would depend on which search asked first.
        if (info := self._infos.get(terms)) is not None:
            return info
        canon, anchor, sign = sign_class(key)
        nodes: set[int] = set()
        placements: frozenset[tuple[int, int, int, int]] = frozenset()
        if len(terms) == 1 and self.space.kind(terms[0][0]) is not Kind.SUM:
            n, x, y, s = terms[0]
            own = self._single_cost(n, x, y, s)
            if self.space.kind(n) is Kind.HALF:
                placements = frozenset({(n, x, y, s if not self.fused else 1)})
            nodes |= self.space.descendants[n]
        else:
            own = self.goal_cost(terms)
            for n, *_ in terms:
                nodes.add(n)
                nodes |= self.space.descendants[n]
        cid = self._canons.setdefault(canon, len(self._canons))
        info = _GoalInfo(canon, cid, anchor[0], anchor[1], sign, own, frozenset(nodes),
                         placements)
        self._infos[terms] = info
        return info

    def _single_cost(self, n: int, x: int, y: int, s: int) -> float:
        """Own cost of one placed atom; a halving's div is charged per placement instead."""
        if self.space.kind(n) is Kind.HALF:
            return 0.0
        return self.moves(abs(x) + abs(y)) + (1 if s < 0 else 0)

    def estimate(self, bag: tuple[tuple[Key, Terms], ...], registers: int,
                 keys: tuple[Key, ...] | None = None) -> float:
        """Own work of each goal (a translate of a sum goal only pays its move), one div per
        place a halving is wanted (div gives x/2 and -x/2 together), every node still to
        build below them, once, and the pressure of the bag on `registers`. `keys`, if given,
        are accepted for compatibility (the memo is by bag: a pure function of it)."""
        if (e := self._estimates.get(bag)) is None:
            e = self._estimates[bag] = self.work_left(bag)
        return self.with_pressure(e, len(bag), registers)

    def with_pressure(self, work: float, values: int, registers: int) -> float:
        """`work_left`'s `work` plus the pressure of `values` live values on `registers`."""
        # Added last, as a sum of the parts would: the same float whichever budget asks.
        return work + self.w.pressure * max(0, values - (registers - 2))

    def work_left(self, bag: tuple[tuple[Key, Terms], ...]) -> float:
        """`estimate` without its pressure term (which alone depends on the budget); not
        memoised (the search keeps it with the bag)."""
        total = 0.0
        size = self.w.size
        nodes: set[int] = set()
        placed: set[tuple[int, int, int, int]] = set()
        seen: dict[int, list[tuple[int, int, int]]] = {}  # by canonical key (its number)
        by_id = self._infos_by_id
        for key, terms in bag:
            if key == INPUT_KEY:
                continue
            if (known := by_id.get(id(terms))) is None:
                known = by_id[id(terms)] = (terms, self._info(key, terms))
            info = known[1]
            nodes |= info.nodes
            if info.placements:
                placed |= info.placements
                continue
            if (others := seen.get(info.cid)) is not None:
                total += self._nearest(info, others)
                others.append((info.x, info.y, info.sign))
                continue
            seen[info.cid] = [(info.x, info.y, info.sign)]
            total += info.cost + size
        if placed:
            total += len(placed) * (1 + size)
            nodes -= {n for n, *_ in placed}
        total += sum(map(self.node_cost.__getitem__, nodes))
        return total

    def _nearest(self, info: _GoalInfo, others: list[tuple[int, int, int]]) -> int:
        """Moves (and a neg if the sign differs) to make the goal from the nearest of `others`,
        translates of it already paid for."""
        best = None
        for x, y, s in others:
            cost = self.moves(abs(info.x - x) + abs(info.y - y)) + (s != info.sign)
            if best is None or cost < best:
                best = cost
        assert best is not None
        return best

    def lower_bound(self, bag: tuple[tuple[Key, Terms], ...]) -> int:
        """Distinct values still to make; a div makes +x/2 and -x/2 together."""
        singles = set()
        count = 0
        for key, _ in bag:
            if key == INPUT_KEY:
                continue
            if len(key) == 1 and self.space.kind(key[0][0]) is Kind.HALF and self.fused:
                a, x, y, _ = key[0]
                if (a, x, y) in singles:
                    continue
                singles.add((a, x, y))
            count += 1
        return count



Shape = tuple[int, int, int, int, bool, int]
"""What `Estimator.goal_cost` reads of a goal, none of it weighted (`goal_shape`)."""


def goal_shape(space: Space, fused: bool, terms: Terms) -> Shape:
    """(the goal's halving node if it is one placed halving, else -1; then `_sum_shape`'s
    adds, spread, negation and whether it is one subx; its distance from home): what its cost
    is made of under any weights (`Estimator.shape_cost`), for op set all if `fused`."""
    far = distance(terms)
    if len(terms) == 1 and space.kind(terms[0][0]) is Kind.HALF:
        return terms[0][0], 0, 0, 0, False, far
    return -1, *_sum_shape(space, fused, terms), far


def _sum_shape(space: Space, fused: bool, terms: Terms) -> tuple[int, int, int, bool]:
    """(adds to join the terms, their `_spread`, 1 if their sign costs a neg, whether they are
    one subx): `Estimator.sum_cost` before the weights."""
    return (_combine(len(terms), fused), _spread(terms, fused), _negation(space, fused, terms),
            _one_subx(terms))


def _combine(k: int, fused: bool) -> int:
    """Adds needed to join k operands."""
    if k <= 1:
        return 0
    return math.ceil((k - 1) / 2) if fused else k - 1


def _spread(terms: Terms, fused: bool) -> int:
    """The places away from home the terms sit at: how many (op set all, whose fused moves
    carry two), or their total distance (op set basic). Zero exactly when none is away."""
    spots = {(n, x, y) for n, x, y, _ in terms if x or y}
    if fused:
        return len(spots)
    return sum(abs(x) + abs(y) for _, x, y in spots)


def _negation(space: Space, fused: bool, terms: Terms) -> int:
    """`Estimator.negation`."""
    if any(s > 0 for *_, s in terms) or not fused:
        return int(not fused and all(s < 0 for *_, s in terms))
    return int(any(space.kind(n) is not Kind.HALF for n, *_ in terms))


def _one_subx(terms: Terms) -> bool:
    """x(p+v) - y(p) with |v| <= 2 steps: one `subx`/`sub2x` (its shift costs nothing extra)."""
    if len(terms) != 2:
        return False
    (_, x0, y0, s0), (_, x1, y1, s1) = terms
    if s0 == s1:
        return False
    (px, py), (nx, ny) = ((x0, y0), (x1, y1)) if s0 > 0 else ((x1, y1), (x0, y0))
    return abs(px - nx) + abs(py - ny) <= 2 and (nx, ny) == (0, 0)
