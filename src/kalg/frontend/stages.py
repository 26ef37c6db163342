"""The front end's own stages, the same for every target: `front_end` answers `--emit ast` and
`--emit kernels` itself and hands every later stage the checked definition (`Checked`)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import TYPE_CHECKING

from kalg.results import Result
from kalg.stages import Stage

if TYPE_CHECKING:
    from kalg.frontend import Definition, Module
    from kalg.settings import Settings

__all__ = ["FRONT_END", "Checked", "front_end"]

FRONT_END = (Stage.AST, Stage.KERNELS)
"""Stages that do not depend on the target: `front_end` answers them."""


@dataclass(frozen=True)
class Checked:
    """The front end's answer for a stage after it: the checked module and the definition asked
    for, its kernel's output moved to the input register the settings name."""

    module: Module
    definition: Definition
    input_register: str


def front_end(text: str, path: str, settings: Settings) -> Result | Checked:
    """Parse and check .kalg `text`: the `Result` of `settings.emit` when it is a front-end
    stage (`FRONT_END`), else what the target compiles (`Checked`). Syntax errors are reported
    before any meaning is computed; semantic errors are located in `path`."""
    from kalg import frontend
    from kalg.frontend.ast import dump
    from kalg.frontend.report import format_definition

    tree = frontend.parse(text.removeprefix("\ufeff"), path)
    if settings.emit is Stage.AST:
        return Result(Stage.AST, dump(tree) + "\n")
    module = frontend.check(tree, settings.target, settings.registers)
    input_register = settings.input or module.target.input
    definition = _with_input(module.definition(settings.name), module.target.input,
                             input_register)
    if settings.emit is Stage.KERNELS:
        return Result(Stage.KERNELS, format_definition(definition) + "\n",
                      definition=definition)
    return Checked(module, definition, input_register)


def _with_input(definition: Definition, file_input: str, input_register: str) -> Definition:
    """A kernel's result replaces its input: with the input moved, so is its output."""
    if definition.kind != "kernel" or input_register == file_input:
        return definition
    return dataclasses.replace(definition,
                               outputs={input_register: definition.outputs[file_input]})
