"""The fallback schedule: evaluate every output depth first, one node at a time, no search.

Input: a `Network` and an op set. Output: one `Schedule` (the same form the search produces), or
None when the schedule would exceed `MAX_STEPS`.

Each sum is accumulated node by node: the terms that read one node are served by computing that
node once (at the offset of its first term) and moving copies of it to the other offsets, so a
chain such as (1 + x)^8 costs a few instructions per factor, not 2^8 recomputations. Nodes that
need the most registers are computed first, while nothing else is held (Sethi-Ullman order); the
input (always available) comes last. So only the input, the running sums of the enclosing levels,
one node and one moved copy are alive at a time: programs are long, but they fit registers where
the search's beam can run into dead ends (a tight budget, long flat sums). A node read by several
different sums is still computed once per reading sum (nothing is kept across sums), which a
DAG with much reconvergent sharing can make exponential: `MAX_STEPS` stops that early.
"""

from __future__ import annotations

from kalg.targets.scamp5.codegen.goals import INPUT_KEY, Key, Space
from kalg.targets.scamp5.codegen.moves import SHIFTS_1, SHIFTS_2, Schedule, Step
from kalg.targets.scamp5.codegen.network import (
    INPUT_NODE,
    Kind,
    Network,
    Term,
    Terms,
    negate,
    translate,
)

MAX_STEPS = 4000
"""A fallback schedule longer than this is abandoned (None): no use as a program, and building
it (a value recomputed for every reader) could take exponential time and memory."""


class _TooLong(Exception):
    pass


def sequential(net: Network, op_set: str, share: bool = True) -> Schedule | None:
    """A schedule computing each output on its own, depth first; None if over `MAX_STEPS`.
    Without `share`, terms are added in their own order (positive first) and a node is made
    again for every term that reads it: no copy of it is held while its terms are added (a
    register fewer on some networks), but chains cost exponential time (hence `MAX_STEPS`)."""
    builder = _Builder(Space(net), op_set == "all", share)
    outputs = []
    try:
        for reg, terms in net.outputs:
            outputs.append((reg, builder.value(terms)))
    except _TooLong:
        return None
    return Schedule(tuple(builder.steps), tuple(outputs))


class _Builder:
    def __init__(self, space: Space, fused: bool, share: bool = True):
        self.space = space
        self.fused = fused
        self.share = share
        self.steps: list[Step] = []
        self._needs: dict[int, int] = {}

    def emit(self, step: Step) -> None:
        if len(self.steps) >= MAX_STEPS:
            raise _TooLong
        self.steps.append(step)

    def value(self, terms: Terms) -> Key:
        """Emit steps that make the sum of `terms`; return its key."""
        terms = self.space.open(terms)
        if not terms:
            self.emit(Step("res", ((),), ()))
            return ()
        if not self.share:
            return self._unshared(terms)
        groups: dict[int, list[Term]] = {}
        for t in terms:
            groups.setdefault(t[0], []).append(t)
        order = sorted(groups, key=lambda n: (n == INPUT_NODE, -self.need(n), n))
        acc: Key | None = None
        acc_terms: Terms = ()
        for node in order:
            # Start from a positive term where there is one: sub absorbs the negative ones.
            group = sorted(groups[node], key=lambda t: (t[3] < 0, t[1], t[2]))
            base, at = self._base(group[0])
            for t in group:
                positive = self._walk(base, node, at, (t[1], t[2]))
                if acc is None:
                    acc = positive if t[3] > 0 else self._negative(t, positive, at)
                    acc_terms = (t,)
                    continue
                acc, acc_terms = self._accumulate(acc, acc_terms, t, positive)
        assert acc is not None
        return acc

    def _unshared(self, terms: Terms) -> Key:
        """The sum term by term in the given order (positive terms first), each term made
        from scratch: no node is held while its other terms are added."""
        order = sorted(terms, key=lambda t: t[3] < 0)
        acc_terms: Terms = (order[0],)
        acc = self._term(order[0])
        for t in order[1:]:
            acc, acc_terms = self._accumulate(acc, acc_terms, t, self._term((*t[:3], 1)))
        return acc

    def _accumulate(self, acc: Key, acc_terms: Terms, t: Term, positive: Key,
                    ) -> tuple[Key, Terms]:
        """Add the signed term t (its value, positive, is `positive`) to the partial sum `acc`
        of `acc_terms`: one sub, double or add step. Returns the new sum and its terms."""
        acc_terms = tuple(sorted((*acc_terms, t)))
        key = self.space.key(acc_terms)
        if t[3] < 0:
            self.emit(Step("sub", (key,), (acc, positive)))
        elif positive == acc:
            self.emit(Step("double", (key,), (acc,)))
        else:
            self.emit(Step("add", (key,), (acc, positive)))
        return key, acc_terms

    def _term(self, term: Term) -> Key:
        """One term (node at an offset, signed), made from scratch."""
        node, x, y, sign = term
        if self.space.kind(node) is Kind.SUM:
            return self.value((term,))
        pos, _ = self._base(term)
        pos = self._walk(pos, node, (0, 0), (x, y)) if node == INPUT_NODE else pos
        return pos if sign > 0 else self._negative(term, pos, (x, y))

    def need(self, node: int) -> int:
        """Registers computing `node` ties up (a Sethi-Ullman number; memoised)."""
        if (n := self._needs.get(node)) is not None:
            return n
        kind = self.space.kind(node)
        if kind is Kind.INPUT:
            n = 0
        else:
            inner = sorted((self.need(m) for m in {t[0] for t in self.space.net.nodes[node].terms}),
                           reverse=True)
            n = max([2, *(k + i for i, k in enumerate(inner))]) + (kind is Kind.HALF)
        self._needs[node] = n
        return n

    def _base(self, first: Term) -> tuple[Key, tuple[int, int]]:
        """The positive value of `first`'s node, made once for all the terms that read it, and
        the offset it is made at (the input is there for free, at the origin)."""
        node, x, y, _ = first
        if self.space.kind(node) is Kind.INPUT:
            return INPUT_KEY, (0, 0)
        if self.space.kind(node) is Kind.SUM:
            return self.value(translate(self.space.net.nodes[node].terms, x, y)), (x, y)
        return self._halve(node, x, y), (x, y)

    def _negative(self, term: Term, positive: Key, at: tuple[int, int]) -> Key:
        """-`positive` for a negated term: free where div made it, else a neg."""
        node, x, y, _ = term
        key = self.space.key((term,))
        if not (self.fused and self.space.kind(node) is Kind.HALF and (x, y) == at):
            self.emit(Step("neg", (key,), (positive,)))
        return key

    def _walk(self, key: Key, node: int, at: tuple[int, int], goal: tuple[int, int]) -> Key:
        """Move the positive value of `node` held at offset `at` (key `key`) to `goal`, two
        steps per move where the op set allows."""
        while at != goal:
            v, dirs = self._step_towards(at, goal)
            at = (at[0] + v[0], at[1] + v[1])
            nxt = self.space.key(((node, at[0], at[1], 1),))
            self.emit(Step("movx" if len(dirs) == 1 else "mov2x", (nxt,), (key,), dirs))
            key = nxt
        return key

    def _step_towards(self, at: tuple[int, int], goal: tuple[int, int]):
        shifts = {**SHIFTS_1, **(SHIFTS_2 if self.fused else {})}
        best = min(shifts, key=lambda v: (abs(goal[0] - at[0] - v[0]) + abs(goal[1] - at[1] - v[1]),
                                          -abs(v[0]) - abs(v[1]), v))
        return best, shifts[best]

    def _halve(self, node: int, x: int, y: int) -> Key:
        arg = self.value(translate(self.space.net.nodes[node].terms, x, y))
        pos = self.space.key(((node, x, y, 1),))
        if self.fused:
            neg = self.space.key(negate(((node, x, y, 1),)))
            self.emit(Step("div", (pos, neg), (arg,)))
        else:
            self.emit(Step("divq", (pos,), (arg,)))
        return pos
