"""Programs over virtual values made physical, shared by the dyadic filter constructions
(`codegen.cse`, `codegen.reverse`): the filter as integers over the input divided once
(`integer_matrix`), the register files they search (`rungs`), and the linear-scan register
allocation of their virtual code (`allocate`).

Virtual code is a list of (op, destination, sources, extra) over values named by tuples:
("in",) the input, ("out", R) the accumulator of the output in register R, anything else an
intermediate value; `extra` is a direction (movx, addx, subx), two (`TwoSteps`: mov2x, add2x,
sub2x) or div's scratch value.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction

from kalg.algebra.kernel import Kernel
from kalg.targets.scamp5.machine.isa import (
    Add,
    Add2x,
    Add3,
    Addx,
    Dir,
    Div,
    Divq,
    Instr,
    Mov,
    Mov2x,
    Movx,
    Neg,
    Sub,
    Sub2x,
    Subx,
)
from kalg.targets.scamp5.registers import rung

MAX_RUNG = 8
"""Register files of at most this many registers are searched (`rungs`): a larger file gets
the program of its first eight (the searches' work grows with the registers)."""


def integer_matrix(outputs: Mapping[str, Kernel]) -> tuple[int, dict[str, dict]] | None:
    """(m, register → offset → integer coefficient of u = input / 2^m), or None."""
    taps = {}
    for reg, kernel in outputs.items():
        try:
            taps[reg] = {d: Fraction(c) for d, c in kernel.taps.items() if c != 0}
        except (TypeError, ValueError):
            return None
        if not taps[reg]:
            return None
    dens = [c.denominator for t in taps.values() for c in t.values()]
    m = max(d.bit_length() - 1 for d in dens)
    if any(d != 1 << (d.bit_length() - 1) for d in dens) or m > 8:
        return None
    return m, {r: {d: int(c * (1 << m)) for d, c in t.items()} for r, t in taps.items()}


def rungs(registers: Sequence[str], columns: Mapping, input_register: str):
    """The register files searched: the outputs' and the input's registers and the first j
    others, for every j up to `MAX_RUNG` registers in all. The search is not monotone in the
    registers (a register more lets other plans into the beam), the minimum over these rungs
    is: a file with more registers has every rung of a smaller one (up to renaming)."""
    needed = tuple(r for r in registers if r in columns or r == input_register)
    others = [r for r in registers if r not in needed]
    for size in range(len(needed), min(len(registers), MAX_RUNG) + 1):
        yield rung(needed, others, size)


_NOT_REUSED = {"sub": (1,), "subx": (1,), "sub2x": (1,), "neg": (0,), "divq": (0,), "div": (0,)}
"""Operands whose register the destination may not take (the ISA's y != x rules; div destroys
its source, which is also never the destination)."""


def allocate(code: list[tuple], order: list[str], registers: Sequence[str],
             input_register: str, loose: bool) -> list[Instr] | None:
    """Physical registers by a linear scan over `code`: the input in its register from the
    start, each output's accumulator in its register (with `loose`, the last output's
    anywhere, then moved to its register: one instruction more, a register less reserved
    meanwhile); a value's register is free after its last read; a value never takes a
    register that an output or the input claims before the value's last read. None where
    some value finds no register."""
    first, last = _lifetimes(code, order)
    pinned = {("out", r): r for r in (order[:-1] if loose else order)}
    pinned[("in",)] = input_register
    claims: dict[str, list[int]] = {r: [] for r in registers}
    for v, r in pinned.items():
        claims[r].append(first.get(v, -1))
    if loose:
        claims[order[-1]].append(len(code))
    where: dict = {("in",): input_register}
    busy: dict[str, object] = {input_register: ("in",)}
    program: list[Instr] = []
    for i, (op, dest, srcs, extra) in enumerate(code):
        keep = {srcs[k] for k in _NOT_REUSED.get(op, ())}
        _release(busy, where, [s for s in srcs if s not in keep and s != dest], last, i)
        for v in [x for x in (dest, extra) if isinstance(x, tuple) and x not in where]:
            reg = _register(v, i, pinned, claims, busy, registers, last)
            if reg is None:
                return None
            where[v] = reg
            busy[reg] = v
        program.append(_instr(op, where[dest], [where[s] for s in srcs], extra, where))
        _release(busy, where, [s for s in srcs if s != dest], last, i)
        if isinstance(extra, tuple):
            busy.pop(where[extra], None)
    acc = where[("out", order[-1])]
    if acc != order[-1]:
        program.append(Mov(order[-1], acc))
    return program


def _lifetimes(code: list[tuple], order: list[str]) -> tuple[dict, dict]:
    """Each virtual register's first write and last read (outputs: the end)."""
    last: dict = {}
    first: dict = {}
    for i, (_, dest, srcs, extra) in enumerate(code):
        for s in srcs:
            last[s] = i
        first.setdefault(dest, i)
        last.setdefault(dest, i)
        if isinstance(extra, tuple):
            first.setdefault(extra, i)
            last[extra] = i
    for reg in order:
        last[("out", reg)] = len(code)
    return first, last


def _release(busy: dict, where: dict, values: list, last: dict, now: int) -> None:
    """Free the registers of `values` read for the last time at `now`."""
    for s in values:
        if last.get(s) == now and busy.get(where[s]) == s:
            del busy[where[s]]


def _register(v, now, pinned, claims, busy, registers, last) -> str | None:
    if v in pinned:
        reg = pinned[v]
        return None if reg in busy else reg
    end = last[v]
    free = [r for r in registers if r not in busy
            and not any(now <= c <= end for c in claims[r])]
    if not free:
        return None
    # best fit: the register claimed soonest after this value's last read
    return min(free, key=lambda r: (min([c for c in claims[r] if c > end], default=1 << 30),
                                    registers.index(r)))


@dataclass(frozen=True, slots=True)
class TwoSteps:
    """The `extra` of a two-step macro (mov2x, add2x, sub2x): its directions (not a tuple, which
    `extra` uses for div's scratch value)."""

    d1: Dir
    d2: Dir


_MOVED = {"mov2x": lambda y, xs, e: Mov2x(y, xs[0], e.d1, e.d2),
          "addx": lambda y, xs, e: Addx(y, xs[0], xs[1], e),
          "add2x": lambda y, xs, e: Add2x(y, xs[0], xs[1], e.d1, e.d2),
          "subx": lambda y, xs, e: Subx(y, xs[0], e, xs[1]),
          "sub2x": lambda y, xs, e: Sub2x(y, xs[0], e.d1, e.d2, xs[1])}
"""The op set all macros of virtual code (`codegen.goalbag`) that move their operands."""


def _instr(op: str, y: str, xs: list[str], extra, where) -> Instr:
    if op == "movx":
        return Movx(y, xs[0], extra)
    if op in _MOVED:
        return _MOVED[op](y, xs, extra)
    if op == "add":
        return Add(y, *xs) if len(xs) == 2 else Add3(y, *xs)
    if op == "sub":
        return Sub(y, xs[0], xs[1])
    if op == "neg":
        return Neg(y, xs[0])
    if op == "mov":
        return Mov(y, xs[0])
    if op == "divq":
        return Divq(y, xs[0])
    return Div(y, where[extra], xs[0])
