"""Register allocation: a `Schedule` of register-free steps → SCAMP-5 instructions.

Values are renamed into SSA form (a value computed twice is two values), then a bounded
depth-first search assigns each result a physical register, honouring every operand rule of the
ISA (sub's result may not overwrite its subtrahend, div's three distinct outputs, diva in place)
and pinning each output to its named register. The scheduler already kept live values within the
budget, so a plain assignment almost always exists; when pinning fails (an output made while the
input still holds its register), the fewest outputs possible are left unpinned and moved into
place at the end (a parallel copy). `allocate` returns None if nothing works.
"""

from __future__ import annotations

import itertools
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from kalg.targets.scamp5.codegen.goals import INPUT_KEY, Key
from kalg.targets.scamp5.codegen.moves import Schedule, Step
from kalg.targets.scamp5.machine.isa import (
    Add,
    Add2x,
    Add3,
    Addx,
    Dir,
    Div,
    Div4,
    Diva,
    Divq,
    Instr,
    Mov,
    Mov2x,
    Movx,
    Neg,
    Res,
    Sub,
    Sub2x,
    Subx,
)

BACKTRACK_LIMIT = 5000
"""Assignment attempts before the allocator gives up on one schedule."""


@dataclass(frozen=True, slots=True)
class _Op:
    """A step on SSA values: `dests[0]` the result (div: `dests[1]` is -x/2)."""

    step: Step
    dests: tuple[int, ...]
    srcs: tuple[int, ...]


def allocate(schedule: Schedule, registers: Sequence[str], input_register: str,
             ) -> list[Instr] | None:
    """Instructions for `schedule`, or None if no assignment fits the registers."""
    ops, finals = _ssa(schedule)
    last = _last_uses(ops, finals)
    pins = _pins(finals, registers)
    for released in _releases(sorted(pins)):
        kept = {v: r for v, r in pins.items() if v not in released}
        alloc = _Allocator(ops, last, registers, input_register, kept)
        if (program := alloc.run()) is None:
            continue
        fixup = _fixup(alloc.final_registers(finals), registers)
        if fixup is not None:
            return program + fixup
    return None


def _releases(pinned: list[int]):
    """Sets of outputs allowed to miss their register, fewest first (each costs a final mov):
    every single one and every pair, then all of them."""
    yield ()
    yield from itertools.combinations(pinned, 1)
    yield from itertools.combinations(pinned, 2)
    if len(pinned) > 2:
        yield tuple(pinned)


def _ssa(schedule: Schedule) -> tuple[list[_Op], list[tuple[str, int]]]:
    current: dict[Key, int] = {INPUT_KEY: 0}
    count = 1
    ops = []
    for step in schedule.steps:
        srcs = tuple(current[k] for k in step.srcs)
        dests = tuple(range(count, count + len(step.dests)))
        count += len(dests)
        for k, v in zip(step.dests, dests, strict=True):
            current[k] = v
        ops.append(_Op(step, dests, srcs))
    finals = [(reg, current[key]) for reg, key in schedule.outputs]
    return ops, finals


def _last_uses(ops: list[_Op], finals: list[tuple[str, int]]) -> dict[int, int]:
    last: dict[int, int] = {}
    for i, op in enumerate(ops):
        for v in op.dests:
            last.setdefault(v, i)
        for v in op.srcs:
            last[v] = i
    for _, v in finals:
        last[v] = len(ops)
    return last


def _pins(finals: list[tuple[str, int]], registers: Sequence[str]) -> dict[int, str]:
    """Each output value's register (the first, when one value fills several outputs)."""
    pins: dict[int, str] = {}
    for reg, v in sorted(finals):
        if v != 0 and reg in registers:
            pins.setdefault(v, reg)
    return pins


class _Allocator:
    def __init__(self, ops: list[_Op], last: dict[int, int], registers: Sequence[str],
                 input_register: str, pins: dict[int, str]):
        self.ops = ops
        self.last = last
        self.registers = tuple(registers)
        self.pins = pins
        self.pin_regs = set(pins.values())
        self.start = {0: input_register}
        self.tries = 0
        self.where: dict[int, str] = {}
        self.failed: set[tuple[int, tuple[tuple[int, str], ...]]] = set()
        """(operation, live values' registers) from which no assignment exists: the rest of
        the search depends on nothing else, so such a state is not searched twice."""

    def run(self) -> list[Instr] | None:
        # The search recurses once per operation: a long schedule (hundreds of operations, e.g.
        # a tap-by-tap candidate) needs more than Python's default depth.
        depth = sys.getrecursionlimit()
        sys.setrecursionlimit(max(depth, 4 * len(self.ops) + 1000))
        try:
            return self._dfs(0, dict(self.start))
        finally:
            sys.setrecursionlimit(depth)

    def final_registers(self, finals: list[tuple[str, int]]) -> list[tuple[str, str]]:
        """(wanted register, register it is in) for each output."""
        return [(reg, self.where[v]) for reg, v in finals]

    def _dfs(self, i: int, reg_of: dict[int, str]) -> list[Instr] | None:
        if i == len(self.ops):
            self.where = reg_of
            return []
        self.tries += 1
        if self.tries > BACKTRACK_LIMIT:
            return None
        op = self.ops[i]
        live = {v: r for v, r in reg_of.items() if self.last.get(v, -1) >= i}
        state = (i, tuple(sorted(live.items())))
        if state in self.failed:
            return None
        for instrs, assigned in self._choices(i, op, live):
            rest = self._dfs(i + 1, {**live, **assigned})
            if rest is not None:
                return instrs + rest
        if self.tries <= BACKTRACK_LIMIT:  # searched to the end, not cut off
            self.failed.add(state)
        return None

    def _free(self, i: int, live: dict[int, str], keep: set[int] = frozenset()) -> list[str]:
        """Registers a result of op i may take: not held by a value read after i."""
        busy = {r for v, r in live.items() if self.last[v] > i or v in keep}
        free = [r for r in self.registers if r not in busy]
        # Keep output registers for their outputs where we can: try them last.
        return sorted(free, key=lambda r: (r in self.pin_regs, self.registers.index(r)))

    def _targets(self, value: int, free: list[str]) -> list[str]:
        if (pin := self.pins.get(value)) is None:
            return free
        return [pin] if pin in free else []

    def _choices(self, i: int, op: _Op, live: dict[int, str]):
        src = [live[v] for v in op.srcs]
        name = op.step.op
        if name == "div":
            yield from self._div_choices(i, op, live, src[0])
            return
        if name == "double":
            yield from self._double_choices(i, op, live, src[0])
            return
        free = self._free(i, live)
        forbidden = {src[-1]} if name in ("sub", "subx", "sub2x", "neg", "divq") else set()
        for y in self._targets(op.dests[0], [r for r in free if r not in forbidden]):
            yield [_emit(op.step, y, src)], {op.dests[0]: y}

    def _div_choices(self, i: int, op: _Op, live: dict[int, str], x: str):
        pos, neg = op.dests
        dies = self.last[op.srcs[0]] == i
        free = self._free(i, live)
        others = [r for r in free if r != x]
        if dies:
            for y0 in self._targets(pos, others):
                for y1 in self._targets(neg, [r for r in others if r != y0]):
                    yield [Div(y0, y1, x)], {pos: y0, neg: y1}
            if pos not in self.pins or self.pins[pos] == x:
                for y1 in self._targets(neg, others):
                    for y2 in [r for r in others if r != y1][:1]:
                        yield [Diva(x, y1, y2)], {pos: x, neg: y1}
            return
        for y0 in self._targets(pos, others):
            for y1 in self._targets(neg, [r for r in others if r != y0]):
                for y2 in [r for r in others if r not in (y0, y1)][:1]:
                    yield [Div4(y0, y1, y2, x)], {pos: y0, neg: y1}

    def _double_choices(self, i: int, op: _Op, live: dict[int, str], x: str):
        free_now = [r for r in self._free(i, live, keep=set(op.srcs)) if r != x]
        for t in free_now[:2]:
            for y in self._targets(op.dests[0], self._free(i, live)):
                yield [Mov(t, x), Add(y, x, t)], {op.dests[0]: y}


_EMIT: dict[str, Callable[[str, list[str], tuple[Dir, ...]], Instr]] = {
    "mov": lambda y, s, d: Mov(y, s[0]),
    "movx": lambda y, s, d: Movx(y, s[0], d[0]),
    "mov2x": lambda y, s, d: Mov2x(y, s[0], d[0], d[1]),
    "add": lambda y, s, d: Add(y, s[0], s[1]),
    "add3": lambda y, s, d: Add3(y, s[0], s[1], s[2]),
    "addx": lambda y, s, d: Addx(y, s[0], s[1], d[0]),
    "add2x": lambda y, s, d: Add2x(y, s[0], s[1], d[0], d[1]),
    "sub": lambda y, s, d: Sub(y, s[0], s[1]),
    "subx": lambda y, s, d: Subx(y, s[0], d[0], s[1]),
    "sub2x": lambda y, s, d: Sub2x(y, s[0], d[0], d[1], s[1]),
    "neg": lambda y, s, d: Neg(y, s[0]),
    "divq": lambda y, s, d: Divq(y, s[0]),
    "res": lambda y, s, d: Res(y),
}
"""One-result steps → instruction, given the result register, operand registers, directions."""


def _emit(step: Step, y: str, src: list[str]) -> Instr:
    return _EMIT[step.op](y, src, step.dirs)


def _fixup(placed: list[tuple[str, str]], registers: Sequence[str]) -> list[Instr] | None:
    """Moves that put every output in its register (a parallel copy; cycles use a spare)."""
    pending = {want: have for want, have in placed if want != have}
    program: list[Instr] = []
    while pending:
        sources = set(pending.values())
        ready = sorted(w for w in pending if w not in sources)
        if ready:
            w = ready[0]
            program.append(Mov(w, pending.pop(w)))
            continue
        spare = [r for r in registers if r not in {w for w, _ in placed} and r not in sources]
        if not spare:
            return None
        w = sorted(pending)[0]
        program.append(Mov(spare[0], pending[w]))
        for k, v in pending.items():
            if v == pending[w]:
                pending[k] = spare[0]
    return program
