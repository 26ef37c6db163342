"""The program `--timeout` falls back on (issue 27): a direct construction, bounded by a count,
made and verified before the searches start, so that a compile cut at its deadline still
answers with a verified program, within the bound (`kalg.settings.bounded`).

The construction is one plan of `codegen.matrix` (`direct_program`): the input divided once by
the kernels' common power of two, then each output in register order as a walk over its taps
adding or subtracting the fewest signed multiples of that value. No search: its work grows with
the taps (a walk is exact up to 12 offsets, greedy beyond), milliseconds for 3x3 filters, about
0.1 s for a 9x9 and 2 s for a 31x31 on the shared 2-core machine. It does not apply (None) to
non-dyadic or other-semiring kernels, or where the outputs leave no register for the divided
input (six outputs on six registers): there a cut still ends in an error naming the stage.

`Fallback` holds the result made from it until the cut asks (`answer`), the stop reason then
saying what was cut.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence

import numpy as np

from kalg.algebra.kernel import Kernel
from kalg.diagnostics import KalgError
from kalg.results import Result
from kalg.settings import Settings
from kalg.targets.scamp5.codegen import check_program
from kalg.targets.scamp5.codegen.matrix import direct_build
from kalg.targets.scamp5.machine.isa import Instr
from kalg.targets.scamp5.machine.simulator import verify_numeric_channels
from kalg.targets.scamp5.machine.symbolic import verify_exact_channels

CANDIDATE = "direct construction (the --timeout fallback)"


def direct_program(outputs: Mapping[str, Mapping[str, Kernel]], registers: Sequence[str],
                   inputs: Sequence[str], ops: str,
                   shape: Callable[[dict, list[Instr]], tuple[int, int]]) -> list[Instr] | None:
    """The direct construction's program for `outputs` (output register → input register →
    kernel), checked legal, verified exactly on every input and numerically on random images of
    `shape(outputs, program)`; None where it does not apply."""
    program = direct_build(outputs, registers, tuple(inputs), ops)
    if program is None:
        return None
    check_program(program, registers, ops, tuple(inputs))
    verify_exact_channels(program, outputs, tuple(inputs))
    rng = np.random.default_rng(0)
    side = shape(dict(outputs), program)
    verify_numeric_channels(program, outputs, {c: rng.uniform(-1, 1, side) for c in inputs})
    return program


class Fallback:
    """The result a cut compile answers with, once `prepare` has made it."""

    def __init__(self) -> None:
        self.result: Result | None = None

    def prepare(self, settings: Settings, make: Callable[[], Result | None]) -> Result | None:
        """With --timeout, make the fallback result now (before the searches) and keep it;
        with `settings.direct`, return it as the compile's result (an error where the direct
        construction does not apply). Otherwise nothing."""
        if settings.direct:
            if (result := make()) is None:
                raise KalgError("the direct construction does not apply to this definition "
                                "(non-dyadic coefficients, another semiring, or no register "
                                "left for the divided input)")
            return result
        if settings.timeout is not None:
            if settings.progress:
                settings.progress("fallback: the direct construction, verified")
            try:
                self.result = make()
            except KalgError:  # no fallback: the compile's own error will say why
                self.result = None
        return None

    def answer(self, stage: str, seconds: float) -> Result | None:
        """The fallback result, saying that the compile was cut during `stage`; None if none
        was made before the cut."""
        if self.result is None:
            return None
        reason = (f"--timeout {seconds:g} s expired and the compile was cut during {stage}: "
                  "this is the direct construction's program (the input divided once, each "
                  "output a walk over its taps; no search), verified, made before the cut")
        stats = {**self.result.stats, "stop reason": reason}
        return dataclasses.replace(self.result, text=f"// stop: {reason}\n{self.result.text}",
                                   stats=stats, warnings=[*self.result.warnings, reason])
