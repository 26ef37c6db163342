"""Register pressure facts for the backward search: what one step needs, which goal came last.

`need` counts the registers in use while a step runs, from the values live across it. It is exact
for the allocator's rules: a result may take the register of an operand read for the last time,
except where the ISA forbids it (sub's subtrahend, neg's source), and div always occupies three
registers (y0, y1 and its scratch y2), plus the source when the source must survive (div with a
separate source). `expandable` says which goals may have been made last.
"""

from __future__ import annotations

from collections.abc import Sequence

from kalg.targets.scamp5.codegen.goals import INPUT_KEY, Key, Space
from kalg.targets.scamp5.codegen.moves import Step
from kalg.targets.scamp5.codegen.network import Terms

_SUBTRAHEND_RULE = frozenset({"sub", "subx", "sub2x", "neg"})
"""Steps whose result may not overwrite their last operand (y != x1, or y != x0 for neg)."""


def need(step: Step, through: set[Key], before: int) -> int:
    """Registers in use while `step` runs; `through` = values live across it, `before` = number
    of values live just before it."""
    if step.op == "div":
        src = step.srcs[0]
        return len(through - {src}) + 3 + (1 if src in through else 0)
    if step.op in ("divq", "double"):
        return before + 1  # divq: y != x0; double: a copy first
    if step.op == "res":
        return len(through) + 1
    # The result may take the register of an operand read for the last time (one not live
    # across the step), unless the ISA forbids that operand (the subtrahend).
    forbidden = step.srcs[-1] if step.op in _SUBTRAHEND_RULE else None
    for k in step.srcs:
        if k not in through and (forbidden is None or k != forbidden):
            return before
    return before + 1


def expandable(space: Space, bag: Sequence[tuple[Key, Terms]]) -> list[Terms]:
    """Goals that no other goal in the bag may still read, so one of them was made last.

    A goal may read another if the other's nodes lie strictly below its own, or among its own
    nodes while the other is the smaller sum (a partial sum of it). The goal with the highest
    nodes and most terms is never blocked, so the list is never empty for a non-empty bag.
    """
    facts = [(t, frozenset(n for n, *_ in t), space.needs(t)) for k, t in bag if k != INPUT_KEY]
    out = []
    for terms, nodes, _ in facts:
        if not any(_may_read(other, nodes, len(terms)) for other in facts if other[0] is not terms):
            out.append(terms)
    return out


def _may_read(other: tuple[Terms, frozenset[int], frozenset[int]], nodes: frozenset[int],
              size: int) -> bool:
    o_terms, o_nodes, o_needs = other
    if nodes <= o_needs - o_nodes:
        return True
    return nodes <= o_needs and size < len(o_terms)
