"""Brute-force shortest programs for the exact search's soundness tests: breadth first over
exact register states, no pruning, so what it finds is the truth the search must agree with."""

from __future__ import annotations

from kalg.targets.scamp5.exact.exhaustive import _exact
from kalg.targets.scamp5.machine.symbolic import initial_state, step


def shortest_by_brute_force(templates, registers, goals, depth: int) -> dict[tuple, int]:
    """Fewest instructions of `templates` (programs from the input in A, at most `depth`)
    that leave each kernel (by its exact key) in one of the `goals` registers."""
    shortest: dict[tuple, int] = {}
    frontier, seen = [initial_state("A")], set()
    for d in range(depth + 1):
        following = []
        for state in frontier:
            for r in goals:
                if state[r] is not None and state[r].taps:
                    shortest.setdefault(_exact(state[r]), d)
            if d == depth:
                continue
            for instr in templates:
                if any(state[r] is None for r in instr.reads()):
                    continue
                new = step(state, instr)
                sig = tuple(None if new[r] is None else _exact(new[r]) for r in registers)
                if sig not in seen:
                    seen.add(sig)
                    following.append(new)
        frontier = following
    return shortest
