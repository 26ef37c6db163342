"""A program of op set basic made a program of op set all, where the registers allow.

The two op sets differ in one macro each way: basic halves with `divq(y, x)` (y := x/2), which
Cain's op set all does not have; all halves with `div`, which writes scratch registers as well:
`div(y, s, x)` (y := x/2, s := -x/2, x left undefined) or `div(y, s, t, x)` (x kept, t := x).
So a basic program is an all program once each `divq` becomes a `div` whose scratch
registers hold nothing read later - which is what `as_op_set_all` checks, by liveness.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from kalg.targets.scamp5.machine.isa import NEWS, Div, Div4, Divq, Instr


def as_op_set_all(program: Sequence[Instr], registers: Sequence[str],
                  outputs: Iterable[str]) -> list[Instr] | None:
    """`program` with every `divq(y, x)` replaced by `div(y, s, x)` where x is not read again
    before it is written and a register s is free, else by `div(y, s, t, x)` with two free
    registers; None where some `divq` has no such registers. A register is free at an
    instruction when it is not read before it is next written, nor an output (`outputs` hold
    their values to the end); scratch is taken in `registers` order. Same length; the caller
    verifies, as for any program."""
    out: list[Instr] = []
    for instr, after in zip(program, _live_after(program, outputs), strict=True):
        if not isinstance(instr, Divq):
            out.append(instr)
            continue
        y, x = instr.y, instr.x0
        free = [r for r in registers if r not in after and r not in (x, y)]
        if x not in after and free:
            out.append(Div(y, free[0], x))
        elif len(free) >= 2:
            out.append(Div4(y, free[0], free[1], x))
        else:
            return None
    return out


def _live_after(program: Sequence[Instr], outputs: Iterable[str]) -> list[frozenset[str]]:
    """For each instruction, the registers read later before being written (and the outputs,
    live at the end)."""
    live = set(outputs)
    found = []
    for instr in reversed(program):
        found.append(frozenset(live))
        live = (live - set(instr.writes())) | (set(instr.reads()) - {NEWS})
    return found[::-1]
