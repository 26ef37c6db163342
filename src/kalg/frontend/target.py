"""The target block: `ast.TargetBlock` → `Target` (registers, input register, op set).

A file has at most one block; without one, kalg compiles for SCAMP-5 with registers A..F, the
input in A and every macro allowed.

`scamp5_wide` is the same machine with a *hypothetical* wider register file (any of A..Z, e.g.
`target scamp5_wide { registers: A..R }` for the 18 registers of the Cain paper's study): a
deliberate opt-in for studies, compiled and verified in kalg's simulators only. The real target
`scamp5` stays strict: a register beyond F there is an error.
"""

from __future__ import annotations

from kalg.diagnostics import KalgSemanticError
from kalg.frontend import ast
from kalg.frontend.module import Target
from kalg.targets.scamp5 import registers

TARGETS = ("scamp5", "scamp5_wide")
"""The machines kalg can compile for (`scamp5_wide`: simulated only, see the module docstring)."""
WIDE = registers.WIDE
"""The target name of the simulated wider register file."""
OP_SETS = ("all", "basic")
"""SCAMP-5 op sets: every macro, or AUKE's basic set (docs/scamp5-isa.md)."""
FIELDS = ("registers", "input", "ops", "split")


def target_of(program: ast.Program) -> Target:
    """The program's target, from its single target block or the defaults."""
    blocks = [s for s in program.statements if isinstance(s, ast.TargetBlock)]
    if not blocks:
        return Target()
    if len(blocks) > 1:
        raise KalgSemanticError(
            f"a second target block (the first is on line {blocks[0].span.line})",
            blocks[1].span)
    return _target(blocks[0])


def _target(block: ast.TargetBlock) -> Target:
    if block.name not in TARGETS:
        raise KalgSemanticError(f"unknown target {block.name!r}: expected "
                                f"{' or '.join(TARGETS)}", block.name_span)
    fields = _fields(block)
    registers = _registers(fields["registers"]) if "registers" in fields else Target().registers
    if block.name != WIDE and "registers" in fields:
        _check_real_registers(registers, fields["registers"])
    inputs = _registers(fields["input"]) if "input" in fields else registers[:1]
    for input_register in inputs:
        if input_register not in registers:
            raise KalgSemanticError(
                f"the input register {input_register!r} is not one of the registers "
                f"{', '.join(registers)}",
                fields["input"].span if "input" in fields else block.span)
    ops = _single(fields["ops"], "ops") if "ops" in fields else Target().ops
    if ops not in OP_SETS:
        raise KalgSemanticError(f"unknown op set {ops!r}: expected {' or '.join(OP_SETS)}",
                                fields["ops"].items[0].span)
    split = _split(fields["split"]) if "split" in fields else None
    return Target(registers, inputs[0], ops, block.name, block.span,
                  inputs if len(inputs) > 1 else (), split)


def _split(field: ast.TargetField) -> str:
    """`split: auto`: a filter with more outputs than registers is a layer
    (`kalg.targets.scamp5.layers`)."""
    value = _single(field, "split")
    if value != "auto":
        raise KalgSemanticError(f"split takes 'auto' (a number of outputs per program is the "
                                f"option --split N), not {value!r}", field.span)
    return value


def _check_real_registers(registers: tuple[str, ...], field: ast.TargetField) -> None:
    """`target scamp5` names only SCAMP-5's analogue registers (what `kalg optimize` needs)."""
    unknown = [r for r in registers if r not in Target().registers]
    if unknown:
        shown = ", ".join(unknown) if len(unknown) <= 4 else f"{unknown[0]}..{unknown[-1]}"
        raise KalgSemanticError(
            f"register(s) {shown} do not exist on SCAMP-5: its analogue registers are A..F; "
            f"use a subset of them, or 'target {WIDE}' for a hypothetical wider register file "
            "(in simulation only)", field.span)


def _fields(block: ast.TargetBlock) -> dict[str, ast.TargetField]:
    fields: dict[str, ast.TargetField] = {}
    for field in block.fields:
        if field.name not in FIELDS:
            raise KalgSemanticError(f"unknown target field {field.name!r}: expected "
                                    f"{', '.join(FIELDS)}", field.span)
        if field.name in fields:
            raise KalgSemanticError(f"target field {field.name!r} is given twice", field.span)
        fields[field.name] = field
    return fields


def _single(field: ast.TargetField, what: str) -> str:
    if len(field.items) != 1 or field.items[0].last is not None:
        raise KalgSemanticError(f"{what} takes one name", field.span)
    return field.items[0].first


def _registers(field: ast.TargetField) -> tuple[str, ...]:
    registers: list[str] = []
    for item in field.items:
        for name in _expand(item):
            if name in registers:
                raise KalgSemanticError(f"register {name!r} is listed twice", item.span)
            registers.append(name)
    return tuple(registers)


def _expand(item: ast.RegisterItem) -> list[str]:
    """A name, or the letters of an inclusive range such as A..F."""
    if item.last is None:
        return [item.first]
    first, last = item.first, item.last
    if len(first) != 1 or len(last) != 1 or first.isupper() != last.isupper():
        raise KalgSemanticError(
            f"a register range joins two letters of the same case, e.g. A..F, not "
            f"{first}..{last}", item.span)
    if first > last:
        raise KalgSemanticError(f"the register range {first}..{last} is empty", item.span)
    return [chr(c) for c in range(ord(first), ord(last) + 1)]
