"""The register budget's check, before any search (`check_budget`): every register exists on
the target, and the budget holds the input(s) and every output, the message saying which
register plays which role. One check for every definition SCAMP-5 compiles: a kernel or filter
of one input (whose register may move, --input) and a filter over several inputs (the target
block's inputs, which do not move)."""

from __future__ import annotations

from kalg.diagnostics import KalgError, KalgSemanticError, UsageError
from kalg.frontend import Definition
from kalg.targets.scamp5.registers import REGISTERS, SIMULATED_REGISTERS, WIDE


def check_budget(definition: Definition, registers: tuple[str, ...], target_name: str,
                 input_register: str | None = None, from_options: bool = True,
                 settings_input: str | None = None) -> None:
    """Refuse a budget that cannot hold a program of `definition`. `input_register`: the one
    input's register (None: a filter over several inputs, `definition.inputs`; then
    `settings_input`, the --input option, must not move them, and every error is a usage
    error: the file's own block is checked by the front end, so only the command line can
    cause these). `from_options`: the budget or input came from the command line, so a budget
    that misses them is a usage error (exit 2), else an error located at the definition."""
    universe = SIMULATED_REGISTERS if target_name == WIDE else REGISTERS
    unknown = [r for r in registers if r not in universe]
    if input_register is None:
        _inputs_unmoved(definition, settings_input)
        if unknown:
            raise UsageError(f"register(s) {', '.join(unknown)} are not registers of target "
                             f"{target_name} ({universe[0]}..{universe[-1]})",
                             hint=None if target_name == WIDE else
                             f"use a subset of them, or '--target {WIDE}' for a hypothetical "
                             "wider register file (in simulation only)")
        _holds_inputs_and_outputs(definition, registers)
        return
    if unknown and target_name == WIDE:
        raise KalgError(f"register(s) {', '.join(unknown)} are not in the simulated register file "
                        f"{SIMULATED_REGISTERS[0]}..{SIMULATED_REGISTERS[-1]}")
    if unknown:
        raise KalgError(f"register(s) {', '.join(unknown)} do not exist on SCAMP-5: its analogue "
                        f"registers are {'..'.join(REGISTERS[::5])}; use a subset of them "
                        f"(for a hypothetical wider register file, in simulation only, use "
                        f"'--target {WIDE}' or write 'target {WIDE} {{ registers: A..R }}')")
    _holds_input_and_outputs(definition, input_register, registers, from_options)


def _inputs_unmoved(definition: Definition, settings_input: str | None) -> None:
    """--input moves the one input of a kernel; a filter's inputs are its target block's."""
    inputs = definition.inputs
    if settings_input is not None and settings_input != inputs[0]:
        raise UsageError(
            f"'{definition.name}' reads the inputs {' '.join(inputs)} (the target block's "
            f"'input:'), so --input {settings_input} has nothing to move",
            hint="leave out --input; list the inputs in the target block, e.g. "
                 f"'input: {' '.join(inputs)}'")


def _holds_inputs_and_outputs(definition: Definition, registers: tuple[str, ...]) -> None:
    """A filter over several inputs: the budget holds every input and output."""
    inputs = definition.inputs
    missing = {"output": [o for o in definition.channels if o not in registers],
               "input": [c for c in inputs if c not in registers]}
    if said := [f"{', '.join(regs)} {f'is an {role}' if len(regs) == 1 else f'are {role}s'} "
                f"of '{definition.name}'" for role, regs in missing.items() if regs]:
        raise UsageError(f"the register budget {' '.join(registers)} must hold every input and "
                         f"output: {'; '.join(said)}", hint="add them to --registers")


def _holds_input_and_outputs(definition: Definition, input_register: str,
                             registers: tuple[str, ...], from_options: bool) -> None:
    """The input register and every output register must be in the budget; say which is which."""
    roles: dict[str, list[str]] = {}
    if input_register not in registers:
        roles.setdefault(input_register, []).append("the input register (the image starts there)")
    for register in sorted(definition.outputs):
        if register not in registers:
            role = ("the output register (a kernel's result replaces its input)"
                    if definition.kind == "kernel"
                    else f"an output register of '{definition.name}'")
            roles.setdefault(register, []).append(role)
    if roles:
        said = "; ".join(f"{r} is {' and '.join(what)}" for r, what in roles.items())
        error = UsageError if from_options else KalgSemanticError
        moved = input_register in roles  # a filter's outputs do not move with the input
        raise error(
            f"register(s) {', '.join(roles)} must be in the register budget "
            f"{' '.join(registers)}: {said}",
            span=None if from_options else definition.span,
            hint=f"add them to --registers, or move the input with --input REG "
                 f"(e.g. --input {registers[0]}: a kernel's result then ends in it too)"
            if moved else "add them to --registers, or give the filter's outputs registers "
                          "of the budget, or compile it as a sequence of programs with "
                          "--split auto (docs/layers.md)")
