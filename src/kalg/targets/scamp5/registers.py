"""SCAMP-5's register files, in a light module (no numpy): the command line, the front end's
target block and the machine model (`machine.isa`) all read them here."""

REGISTERS = ("A", "B", "C", "D", "E", "F")
"""The analogue registers a program for the real SCAMP-5 may name."""

SIMULATED_REGISTERS = tuple("ABCDEFGHIJKLMNOPQRSTUVWXYZ")
"""The register file of the hypothetical wider SCAMP-5 (target `scamp5_wide`): A..F and then
G..Z, for studies such as Cain's 18-register one. It exists only in kalg's simulators; programs
that name a register beyond F cannot run on the device."""

WIDE = "scamp5_wide"
"""The target name of the simulated wider register file."""


def rung(required: tuple[str, ...], others: list[str], size: int) -> tuple[str, ...]:
    """The register file of `size` registers on a ladder of register files: the `required`
    ones (input and outputs), then the first of `others`. A larger budget's ladder has every
    rung of a smaller one (its others begin alike, up to renaming), so the best program over
    a ladder is monotone in the registers even where one search is not. The one ladder of
    both searches that climb one (`portfolio.Resources`, `codegen.virtual.rungs`); each
    chooses its sizes."""
    return (*required, *others[: size - len(required)])


def six_registers(registers: tuple[str, ...], inp: str, outputs) -> tuple[str, ...]:
    """The register budget of the searches made for the device's six registers (the exact
    searches that find shorter programs, the goal bags, the filters' common parts):
    `registers`, or with more than six of them six (the input's, the outputs', then the first
    others): a program on six of the registers is a program on all of them, so a larger budget
    is never longer than A..F for want of these searches."""
    if len(registers) <= 6:
        return registers
    first = [inp, *(o for o in outputs if o != inp)]
    rest = [r for r in registers if r not in first]
    return tuple([*first, *rest][:6]) if len(first) <= 6 else registers
