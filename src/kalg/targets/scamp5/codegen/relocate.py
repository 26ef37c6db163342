"""A one-output program moved into other registers, instruction for instruction (`relocate`).

A kernel compiled alone reads the input from its register and leaves the output there, over
the whole register file. In a filter it is one stage among others: its output goes into its
own register, the registers of earlier outputs are taken, and until the last stage the input
must be kept. Such a program runs as that stage, with the same instructions renamed, wherever
the stage's free registers allow it:

* the output in the input's register (the input may be overwritten): a renaming of the
  program's registers into the free ones that fixes the input's register, so it needs at most
  as many registers as are free;
* any other output (the input kept): the input's register is split at its first write. Until
  then it holds the input and keeps it; from that write on, its values live in the output's
  register, and every other register of the program is renamed into the free ones left. This
  needs one register more than the program uses, that the program writes the input's register
  (its output: an empty program leaves the input where it is, and moving it costs an
  instruction), and that the instruction writing it first reads the input through an operand
  apart from its result (``diva`` halves in place, ``div`` poisons its source: neither
  keeps the input).

The renamings are fixed (the registers in the order given), so the result is deterministic.
Not verified here: the caller verifies exactly.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Sequence

from kalg.targets.scamp5.machine.isa import Instr


def relocate(program: Sequence[Instr], free: Sequence[str], input_register: str,
             output: str) -> list[Instr] | None:
    """`program` (input and output in `input_register`) as a stage writing only `free`
    registers, its output in `output`, keeping the input unless `output` is the input's
    register; the same length, or None where the rules of the module's docstring do not hold."""
    used = sorted({r for instr in program for r in instr.registers()} - {input_register})
    if output == input_register:
        others = [r for r in free if r != input_register]
        if input_register not in free or len(used) > len(others):
            return None
        names = dict(zip(used, others, strict=False)) | {input_register: input_register}
        return [instr.renamed(names) for instr in program]
    return _split(program, used, free, input_register, output)


def _split(program: Sequence[Instr], used: list[str], free: Sequence[str],
           input_register: str, output: str) -> list[Instr] | None:
    """The kept-input case of `relocate`."""
    first = next((i for i, instr in enumerate(program) if input_register in instr.writes()),
                 None)
    others = [r for r in free if r not in (input_register, output)]
    if first is None or input_register not in free or output not in free \
            or len(used) > len(others):
        return None
    names = dict(zip(used, others, strict=False))
    before = names | {input_register: input_register}
    after = names | {input_register: output}
    at = _split_instruction(program[first], names, input_register, output)
    if at is None:
        return None
    return ([instr.renamed(before) for instr in program[:first]] + [at]
            + [instr.renamed(after) for instr in program[first + 1:]])


def _split_instruction(instr: Instr, names: dict[str, str], input_register: str,
                       output: str) -> Instr | None:
    """`instr`, which first writes `input_register`, with that write into `output` and its
    reads of the input kept on `input_register`: of the ways to give each of its operands
    naming the input's register one of the two, the one whose effects are the original's so
    renamed and which breaks no rule of the ISA; None where no way does (the input read and
    overwritten through one operand)."""
    fields = [f.name for f in dataclasses.fields(instr)]  # type: ignore[arg-type]
    on_input = [f for f in fields if getattr(instr, f) == input_register]
    renamed = {f: names[v] for f in fields if isinstance(v := getattr(instr, f), str)
               and v in names}
    written = {input_register: output}
    want = [(written.get(dest, names.get(dest, dest)),
             form if not isinstance(form, tuple) else
             tuple((c, names.get(r, r), o) for c, r, o in form))
            for dest, form in instr.effects()]
    for choice in itertools.product((input_register, output), repeat=len(on_input)):
        candidate = dataclasses.replace(instr, **renamed,  # type: ignore[type-var]
                                        **dict(zip(on_input, choice, strict=True)))
        if candidate.violation() is None and candidate.effects() == want:
            return candidate
    return None
