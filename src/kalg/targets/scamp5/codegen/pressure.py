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
    kind, forbidden = rule(step)
    return counted(kind, forbidden, len(through), before,
                   [k for k in step.srcs if k not in through])


DIV, ONE_MORE, ONE_LESS, REUSE = range(4)
"""The kinds of `rule`: div (y0, y1 and its scratch y2, plus a source that survives), a
result that needs a register of its own (divq: y != x0; double: a copy first), res (no
operands), and a result that may take the register of an operand read for the last time."""


def rule(step: Step) -> tuple[int, Key | None]:
    """How `need` counts for `step`: its kind, and (`REUSE`) the operand whose register the
    result may not take (the subtrahend), if any. Depends on the step alone: a search keeps it
    per move."""
    if step.op == "div":
        return DIV, None
    if step.op in ("divq", "double"):
        return ONE_MORE, None
    if step.op == "res":
        return ONE_LESS, None
    return REUSE, step.srcs[-1] if step.op in _SUBTRAHEND_RULE else None


def counted(kind: int, forbidden: Key | None, through: int, before: int,
            dead: Sequence[Key]) -> int:
    """`need` from the step's `rule` (kind, forbidden operand), the number of values live
    across it and just before it, and its operands not live across it (read for the last
    time, repeats allowed)."""
    if kind == DIV:
        return through + 3  # the source, if it survives, is one of the values live across
    if kind == ONE_MORE:
        return before + 1
    if kind == ONE_LESS:
        return through + 1
    # The result may take the register of an operand read for the last time (one not live
    # across the step), unless the ISA forbids that operand (the subtrahend).
    for k in dead:
        if forbidden is None or k != forbidden:
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
