"""Names the command line needs at start-up, in a light module (no numpy, lark or egglog): the
stages `kalg optimize --emit` can stop after."""

from __future__ import annotations

from enum import StrEnum


class Stage(StrEnum):
    AST = "ast"
    KERNELS = "kernels"
    EGRAPH = "egraph"
    DECOMPOSITION = "decomposition"
    PROGRAM = "program"

