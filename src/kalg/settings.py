"""What the user asked of one compile (`Settings`), and the end of its --timeout (`Deadline`).

Every stage of the pipeline reads these; they depend on nothing but the stage names.
"""

from __future__ import annotations

import math
import signal
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from types import CodeType, FrameType

from kalg.stages import Stage

EXHAUSTIVE_NODES = 6_000_000
"""Default node budget of the exact search (`kalg.targets.scamp5.exact.exhaustive`, and of
`kalg optimize --exhaustive`): a count, so that the answer does not depend on the machine, of
about 15 s of CPU time at the search's rate (a node is a state visited or a child dropped by the
two-step test). `--exhaustive-nodes` raises it; the program's header says what was proven when
the search stops at it."""

BOUND_NODES = 3_000
"""Default node budget of the lower bound's exact searches (`kalg.targets.scamp5.exact.bounds`),
all outputs together: deterministic, about 0.1 to 0.4 s of CPU on a 3x3 or 7x7 kernel, usually
one depth beyond the search's estimate at the start."""


@dataclass(frozen=True, slots=True)
class Settings:
    """What the user asked for; None means "as the file's target block says"."""

    name: str | None = None
    ops: str | None = None
    registers: tuple[str, ...] | None = None
    target: str | None = None
    """"scamp5", or "scamp5_wide" for a hypothetical register file beyond A..F (simulated)."""
    emit: Stage = Stage.PROGRAM
    time_limit: float | None = None
    """A wall-clock cap on e-graph saturation (the ILP gets 3x), asked for by the user; None:
    counts alone (nodes, iterations, branch-and-bound nodes) decide, so the program is the same
    on a busy machine as on an idle one."""
    node_limit: int = 30_000
    exhaustive: bool = False
    """Also run the exact search (`codegen.exhaustive`) for a shorter program, or a proof."""
    exhaustive_nodes: int = EXHAUSTIVE_NODES
    bound_nodes: int = BOUND_NODES
    effort: str = "default"
    """How hard the code generator searches: a level of `kalg.effort.LEVELS` (count budgets)."""
    """Node budget of the lower bound's exact searches (`exact.bounds`)."""
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
    direct: bool = False
    """Compile by the direct construction alone (`kalg.targets.scamp5.fallback`): the program
    --timeout falls back on, made for each program of a layer when the layer is cut."""
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


HARD_SLACK = 0.1
"""--timeout S holds within S·(1 + HARD_SLACK) + 1 s on every path: `bounded` cuts what
still runs then, and answers with the program made and verified before (the fallback)."""


REPEAT = 0.25
"""Seconds between the alarm's repeats, until the cut takes."""


class TimeoutCut(BaseException):
    """Raised in the main thread by `bounded`'s alarm; a BaseException so that no handler of
    the compile's own (`except Exception`) can swallow the cut. Never seen by callers."""


def _inside(frame: FrameType | None, code: CodeType) -> bool:
    """Whether `frame` or a frame that called it runs `code`."""
    while frame is not None:
        if frame.f_code is code:
            return True
        frame = frame.f_back
    return False


def bounded[T](seconds: float | None, doing: Callable[[], str], work: Callable[[], T],
               fallback: Callable[[str], T | None] = lambda _stage: None) -> T:
    """`work()`, bounded to `seconds`·(1 + HARD_SLACK) + 0.5 s of wall-clock time: the
    searches cut themselves at `seconds` (and keep the best program found), but a stage that
    cannot be cut in the middle (one e-graph iteration, a code generator's beam step, a
    whole-filter construction) once ran 12.7 s past --timeout 0.1. When the alarm fires the
    work is abandoned and `fallback(stage)` answers (`doing()`: the stage running; the
    fallback is a program made and verified before, so answering takes milliseconds); where
    it has none (None), a ResourceLimitError says what was cut.

    Only in the main thread (where signals are delivered) and where no other alarm is set;
    elsewhere the searches' own checks of the deadline are the bound."""
    usable = (seconds is not None and threading.current_thread() is threading.main_thread()
              and signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0))
    if not usable:
        return work()

    done = False

    def cut(signum, frame):
        # Not inside `quiet` itself: a cut raised there is printed by Python as "Exception
        # ignored in sys.unraisablehook" with its traceback; the next repeat cuts instead.
        if not done and not _inside(frame, quiet.__code__):
            raise TimeoutCut

    def quiet(unraisable):  # an alarm that landed where exceptions are ignored: no noise
        if not isinstance(unraisable.exc_value, TimeoutCut):
            hook(unraisable)

    previous, hook = signal.signal(signal.SIGALRM, cut), sys.unraisablehook
    # The alarm repeats: an exception raised where Python ignores it (a finaliser, a fork
    # hook: "Exception ignored in ...", which `quiet` keeps off stderr) would otherwise end the
    # cut for good
    sys.unraisablehook = quiet
    signal.setitimer(signal.ITIMER_REAL, seconds * (1 + HARD_SLACK) + 0.5, REPEAT)
    try:
        try:
            return work()
        finally:
            done = True
            signal.setitimer(signal.ITIMER_REAL, 0)
    except TimeoutCut:
        stage = doing()
        if (answer := fallback(stage)) is not None:
            return answer
        from kalg.diagnostics import ResourceLimitError

        raise ResourceLimitError(
            f"--timeout {seconds:g} s expired and the compile was cut during {stage}, before "
            "a verified program was found",
            hint="raise --timeout (a program is printed when one is found in time)") from None
    finally:
        signal.signal(signal.SIGALRM, previous)
        sys.unraisablehook = hook
