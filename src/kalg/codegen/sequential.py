"""The fallback schedule: evaluate every output depth first, one term at a time, no search.

Input: a `Network` and an op set. Output: one `Schedule` (the same form the search produces).
Each output is accumulated term by term; each term is computed right before it is added (a
shift chain from the input, a halving of its argument computed the same way, or a nested sum),
so only the input, the running sums of the enclosing levels and one term in the making are alive.
Nothing is shared beyond what the keys merge, so programs are long, but they fit registers where
the search's beam can run into dead ends (a tight budget, long flat sums).
"""

from __future__ import annotations

from kalg.codegen.goals import INPUT_KEY, Key, Space
from kalg.codegen.moves import SHIFTS_1, SHIFTS_2, Schedule, Step
from kalg.codegen.network import INPUT_NODE, Kind, Network, Term, Terms, negate, translate


def sequential(net: Network, op_set: str) -> Schedule:
    """A schedule computing each output on its own, depth first."""
    builder = _Builder(Space(net), op_set == "all")
    outputs = []
    for reg, terms in net.outputs:
        outputs.append((reg, builder.value(terms)))
    return Schedule(tuple(builder.steps), tuple(outputs))


class _Builder:
    def __init__(self, space: Space, fused: bool):
        self.space = space
        self.fused = fused
        self.steps: list[Step] = []

    def value(self, terms: Terms) -> Key:
        """Emit steps that make the sum of `terms`; return its key."""
        terms = self.space.open(terms)
        if not terms:
            self.steps.append(Step("res", ((),), ()))
            return ()
        # Start from a positive term where there is one: sub absorbs the negative ones.
        order = sorted(terms, key=lambda t: t[3] < 0)
        acc_terms: Terms = (order[0],)
        acc = self.term(order[0])
        for t in order[1:]:
            positive = self.term((*t[:3], 1))
            acc_terms = tuple(sorted((*acc_terms, t)))
            key = self.space.key(acc_terms)
            if t[3] < 0:
                self.steps.append(Step("sub", (key,), (acc, positive)))
            elif positive == acc:
                self.steps.append(Step("double", (key,), (acc,)))
            else:
                self.steps.append(Step("add", (key,), (acc, positive)))
            acc = key
        return acc

    def term(self, term: Term) -> Key:
        """Emit steps that make one term (node at an offset, signed); return its key."""
        node, x, y, sign = term
        key = self.space.key((term,))
        kind = self.space.kind(node)
        if kind is Kind.SUM:
            return self.value((term,))
        pos = self._shifted_input(x, y) if kind is Kind.INPUT else self._halve(node, x, y)
        if sign > 0:
            return pos
        if self.fused and kind is Kind.HALF:
            return key  # div made -x/2 as well
        self.steps.append(Step("neg", (key,), (pos,)))
        return key

    def _shifted_input(self, x: int, y: int) -> Key:
        """Walk the input to (x, y), two steps per move where the op set allows."""
        at = (0, 0)
        key = INPUT_KEY
        while at != (x, y):
            v, dirs = self._step_towards(at, (x, y))
            at = (at[0] + v[0], at[1] + v[1])
            nxt = self.space.key(((INPUT_NODE, at[0], at[1], 1),))
            self.steps.append(Step("movx" if len(dirs) == 1 else "mov2x", (nxt,), (key,), dirs))
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
            self.steps.append(Step("div", (pos, neg), (arg,)))
        else:
            self.steps.append(Step("divq", (pos,), (arg,)))
        return pos
