"""A one-output program moved into other registers, instruction for instruction (`relocate`).

A kernel compiled alone reads the input from its register and leaves the output there, over
the whole register file. In a filter it is one stage among others: its output goes into its
own register, the registers of earlier outputs are taken, and until the last stage the input
must be kept. Such a program runs as that stage, with the same instructions on other
registers, wherever its values fit the stage's free registers at every point:

* every value an instruction writes is a value of its own (a register written twice holds two),
  except where one operand is read and overwritten (``diva`` halves in place, ``div`` poisons
  its source), or where the program wrote it into the register of a value read there for the
  last time (``sub(A, A, B)``; not into the input's where it is kept): there the value goes
  on in the same register;
* each value lives from its write to its last read; the input from the start (to the end where
  it is kept: then it may not be overwritten in place), the output to the end;
* values are given registers in the order they are written, the input's its own and the
  output's its own, any other a free register that no pinned value needs meanwhile, the one
  a pinned value claims soonest after it ends (best fit), else the first; a
  value written by an instruction never takes the register of one it reads (so no rule of the
  ISA on equal operands can break).

A program that uses every register can still fit where its values do not all live at once
(kernels compiled alone use every register they are given). The assignment is fixed by the
program and the registers' order, so the result is deterministic. Not verified here: the
caller verifies exactly.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from kalg.targets.scamp5.machine.isa import Instr
from kalg.targets.scamp5.registers import SIMULATED_REGISTERS

_NAMES = frozenset(SIMULATED_REGISTERS)


def relocate(program: Sequence[Instr], free: Sequence[str], input_register: str,
             output: str) -> list[Instr] | None:
    """`program` (input and output in `input_register`) as a stage writing only `free`
    registers, its output in `output`, keeping the input unless `output` is the input's
    register; the same length, or None where its values do not fit (the module's rules), or
    it leaves the output in the input unwritten while the input is to be kept."""
    keep = output != input_register
    if input_register not in free or output not in free:
        return None
    values = _Values(program, input_register)
    values.join_shared(keep)
    final = values.current[input_register]
    if keep and any(values.find(v) == 0 for v in range(1, len(values.parent))):
        return None  # the input overwritten in place: it cannot be kept
    if keep and final == 0:
        return None  # the output is the input itself: moving it costs an instruction
    pins = {values.find(0): input_register, values.find(final): output}
    ends = {values.find(0): len(program)} if keep else {}
    ends[values.find(final)] = len(program)
    where = _assign(values, pins, ends, free)
    if where is None:
        return None
    moved = [dataclasses.replace(instr, **{f: where[values.find(v)]  # type: ignore[type-var]
                                           for f, v in fields.items()})
             for instr, fields in zip(program, values.fields, strict=True)]
    return None if any(i.violation() is not None for i in moved) else moved


class _Values:
    """The values of a program: for each instruction its register operands' values (field →
    value), each value's first write and last read, webs of values sharing a register (union
    by `find`). Value 0 is the input."""

    def __init__(self, program: Sequence[Instr], input_register: str):
        self.parent: list[int] = [0]
        self.born: list[int] = [-1]
        self.last: list[int] = [-1]
        self.current: dict[str, int] = {input_register: 0}
        self.fields: list[dict[str, int]] = []
        self.shared: list[tuple[int, int, int]] = []
        for i, instr in enumerate(program):
            self.fields.append(self._step(i, instr))

    def join_shared(self, keep_input: bool) -> None:
        """Where the program wrote a value into the register of one it read there for the last
        time, the two go on in one register (the program's own choice, so within the ISA's
        rules); never into the input's where it is kept."""
        for i, read, written in self.shared:
            if self.last[read] == i and not (keep_input and self.find(read) == 0):
                self.parent[self.find(written)] = self.find(read)

    def find(self, v: int) -> int:
        while self.parent[v] != v:
            v = self.parent[v]
        return v

    def _new(self, i: int) -> int:
        self.parent.append(len(self.parent))
        self.born.append(i)
        self.last.append(i)
        return len(self.parent) - 1

    def _step(self, i: int, instr: Instr) -> dict[str, int]:
        reads, writes = _roles(instr)
        fields: dict[str, int] = {}
        for f in reads:
            reg = getattr(instr, f)
            if reg not in self.current:  # read before any write: not in kalg's programs
                self.current[reg] = self._new(-1)
            v = self.current[reg]
            self.last[v] = i
            fields[f] = v
        for f in writes:
            v = self._new(i)
            if f in reads:  # read and overwritten through one operand: the same register
                self.parent[v] = self.find(fields[f])
            else:
                self.shared += [(i, fields[g], v) for g in reads
                                if getattr(instr, g) == getattr(instr, f)]
            self.current[getattr(instr, f)] = v
            fields[f] = v
        return fields


def _roles(instr: Instr) -> tuple[list[str], list[str]]:
    """The register operands `instr` reads and writes, by field name: each operand given a
    register of its own, its effects say which."""
    names = [f.name for f in dataclasses.fields(instr)  # type: ignore[arg-type]
             if getattr(instr, f.name) in _NAMES]
    own = dict(zip(names, SIMULATED_REGISTERS, strict=False))
    apart = dataclasses.replace(instr, **own)  # type: ignore[type-var]
    field_of = {r: f for f, r in own.items()}
    effects = apart.effects()
    written = [field_of[d] for d, _ in effects if d in field_of]
    read = [field_of[r] for _, form in effects for _, r, _ in form or () if r in field_of]
    return list(dict.fromkeys(read)), list(dict.fromkeys(written))


def _assign(values: _Values, pins: dict[int, str], ends: dict[int, int],
            free: Sequence[str]) -> dict[int, str] | None:
    """A register of `free` for each web, pinned ones in theirs, in the order the webs are
    first written; None where some web finds none."""
    span: dict[int, list[int]] = {}
    for v in range(len(values.parent)):
        w = values.find(v)
        lo, hi = values.born[v], values.last[v]
        if w in span:
            span[w] = [min(span[w][0], lo), max(span[w][1], hi)]
        else:
            span[w] = [lo, hi]
    for w, end in ends.items():
        span[w][1] = max(span[w][1], end)
    where: dict[int, str] = {}
    for w in sorted(span, key=lambda w: (span[w][0], w)):
        lo, hi = span[w]
        taken = {where[o] for o in where if span[o][0] <= hi and lo <= span[o][1]}
        needed = {r for o, r in pins.items() if o != w and span[o][0] <= hi
                  and lo <= span[o][1]}
        if w in pins:
            reg = pins[w] if pins[w] not in taken else None
        else:  # best fit: the register a pinned value claims soonest after this one ends
            claims = {r: min((span[o][0] for o, p in pins.items() if p == r
                              and span[o][0] > hi), default=len(span) + 1 << 20)
                      for r in free}
            reg = min((r for r in free if r not in taken and r not in needed),
                      key=lambda r: (claims[r], free.index(r)), default=None)
        if reg is None:
            return None
        where[w] = reg
    return where
