"""Names the command line needs at start-up, in a light module (no numpy, lark or egglog): the
stages `kalg optimize --emit` can stop after, and the target names."""

from __future__ import annotations

from enum import StrEnum


class Stage(StrEnum):
    AST = "ast"
    KERNELS = "kernels"
    EGRAPH = "egraph"
    DECOMPOSITION = "decomposition"
    PROGRAM = "program"


WIDE = "scamp5_wide"
"""The target name of the simulated wider register file (`kalg.frontend.target.WIDE`)."""

REGISTERS = ("A", "B", "C", "D", "E", "F")
"""SCAMP-5's analogue registers (`kalg.targets.scamp5.machine.isa.REGISTERS`, kept equal by a
test)."""

SIMULATED_REGISTERS = tuple("ABCDEFGHIJKLMNOPQRSTUVWXYZ")
"""The simulated wide register file (`kalg.targets.scamp5.machine.isa.SIMULATED_REGISTERS`)."""
