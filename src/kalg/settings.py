"""What the user asked of one compile (`Settings`), and the end of its --timeout (`Deadline`).

Every stage of the pipeline reads these; they depend on nothing but the stage names.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass

from kalg.stages import Stage

EXHAUSTIVE_NODES = 6_000_000
"""Default node budget of the exact search (`kalg.targets.scamp5.exact.exhaustive`, and of
`kalg optimize --exhaustive`): a count, so that the answer does not depend on the machine, of
about 15 s of CPU time at the search's rate (a node is a state visited or a child dropped by the
two-step test). `--exhaustive-nodes` raises it; the program's header says what was proven when
the search stops at it."""


@dataclass(frozen=True, slots=True)
class Settings:
    """What the user asked for; None means "as the file's target block says"."""

    name: str | None = None
    ops: str | None = None
    registers: tuple[str, ...] | None = None
    target: str | None = None
    """"scamp5", or "scamp5_wide" for a hypothetical register file beyond A..F (simulated)."""
    emit: Stage = Stage.PROGRAM
    time_limit: float = 10.0
    node_limit: int = 30_000
    exhaustive: bool = False
    """Also run the exact search (`codegen.exhaustive`) for a shorter program, or a proof."""
    exhaustive_nodes: int = EXHAUSTIVE_NODES
    progress: Callable[[str], None] | None = None
    input: str | None = None
    """The register the image starts in (and a kernel's result ends in); None: the file's."""
    timeout: float | None = None
    """Wall-clock bound in seconds on the whole compile, code generation included; None: none.
    When it expires during code generation the best verified program so far is the result."""
    warn: Callable[[str], None] | None = None
    """Receives each warning as soon as it is known (they are also in `Result.warnings`)."""
    noise_slack: int = 0
    """Choose, among the programs within this many instructions of the shortest, the one with
    the least expected analogue error (`kalg.noise_objective`); 0: the shortest."""
    noise_model: str = "auke"
    """The noise model of that choice: "auke" or "cain" (`kalg.noise_objective.MODELS`)."""
    split: str | None = None
    """A filter with more outputs than registers: "auto" compiles it as a layer, a sequence of
    programs (`kalg.layers`), "N" with at most N outputs per program; None: the target
    block's `split`, else such a filter is an error."""


class Deadline:
    """The end of `--timeout`: seconds left, and whether it has passed (never, without one)."""

    def __init__(self, seconds: float | None):
        self.seconds = seconds
        self.end = None if seconds is None else time.monotonic() + seconds

    def left(self) -> float:
        return math.inf if self.end is None else self.end - time.monotonic()

    def passed(self) -> bool:
        return self.left() <= 0
