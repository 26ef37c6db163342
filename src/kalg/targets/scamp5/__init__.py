"""The SCAMP-5 target: programs of analogue instructions for the focal-plane processor.

* `cost`: the cost models extraction minimises (`scamp5(op_set)`, `kernel()`).
* `optimize`, `optimize_channels`: the e-graph search under them (decompositions of the outputs).
* `pipeline`: the lowering, kernels → a verified program (`compile_text`), stage by stage:
  `candidates` (decompositions), `programs`, `portfolio` and `filters` (the code generator's
  best over them, monotone in resources), `channel_programs` and `channel_stages` (filters over
  several inputs), `exact` (the exact search), `codegen` (the code generator).
* `machine`: the device - instruction set (`isa`), program text (`text`), exact and numpy
  simulators (`symbolic`, `simulator`: the verifier and the runner), noise (`noise`), and the
  PNG of `kalg simulate --report` (`report`).

`TARGET` (`scamp5`, the device's register file A..F) and `WIDE_TARGET` (`scamp5_wide`, a
simulated wider one, for studies) are this target in the shape of `kalg.targets.Target`: the
cost model is `cost.scamp5`, the lowering `pipeline`, the verifier the exact symbolic execution
(`machine.symbolic.verify_exact`) plus the simulator against the reference correlation
(`machine.simulator.verify_numeric`), and the runner the simulator. Importing this package is
light: each plug-in method imports what it needs.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from kalg.stages import Stage
from kalg.targets.scamp5.registers import WIDE


class Scamp5Target:
    """A SCAMP-5 register file as a target. `settings.target` None in `optimize`/`compile`
    means the file's target block, as it always has; otherwise it must name this target."""

    emit = Stage.PROGRAM

    def __init__(self, name: str) -> None:
        self.name = name

    def cost(self, ops: str = "all") -> Callable[..., float | None]:
        from kalg.targets.scamp5 import cost
        return cost.scamp5(ops)

    def lower(self, outputs: Mapping[str, Any], **settings: Any) -> list:
        """The verified program computing `outputs` (register → real kernel), compiled as
        `kalg optimize` compiles the filter of those kernels; `settings` are `Settings` fields
        (registers, input, ops, ...)."""
        from kalg.frontend.arrays import kalg_text
        from kalg.settings import Settings

        rows = {reg: kernel.to_rows(centred=True) for reg, kernel in outputs.items()}
        text = kalg_text(rows, name="outputs")
        result = self.optimize(text, "<kernels>", Settings(target=self.name, **settings))
        return result.program

    def verify(self, artefact: list, outputs: Mapping[str, Any], input_register: str = "A",
               ) -> str:
        """Raise VerificationError unless the program computes every output kernel exactly
        (symbolic execution) and in the simulator on a random image."""
        import numpy as np

        from kalg.targets.scamp5.machine.simulator import verify_numeric
        from kalg.targets.scamp5.machine.symbolic import verify_exact
        from kalg.targets.scamp5.pipeline import verify_shape

        verify_exact(artefact, outputs, input_register)
        image = np.random.default_rng(0).uniform(-1, 1, verify_shape(dict(outputs)))
        verify_numeric(artefact, outputs, image, input_register)
        return "exact symbolic execution and the simulator against the reference correlation"

    def runner(self, artefact: list, input_register: str = "A", **options: Any,
               ) -> Callable[..., Any]:
        """image → register → simulated value (`kalg.targets.scamp5.machine.simulator.simulate`;
        `options` such as `noise` go to it)."""
        from kalg.targets.scamp5.machine.simulator import simulate

        def run(image: Any) -> dict[str, Any]:
            return simulate(artefact, image, input_register, **options)

        return run

    def optimize(self, text: str, path: str, settings: Any, output: str | None = None) -> Any:
        from kalg.targets.scamp5.pipeline import compile_text
        if settings.target not in (None, self.name):
            raise ValueError(f"settings for target {settings.target!r} given to {self.name}")
        return compile_text(text, path, settings)

    def compile(self, text: str, path: str, settings: Any, **runtime: Any) -> Any:
        from kalg.diagnostics import UsageError
        from kalg.results import CompileResult

        if runtime:
            raise UsageError(f"unknown option(s) {', '.join(sorted(runtime))} for target "
                             f"{settings.target or self.name}")
        r = self.optimize(text, path, settings)
        return CompileResult(r.text, r.stage.value, r.program, r.stats, r.verified,
                             r.decomposition, r.definition, r.warnings, r.input_register,
                             settings.target or self.name, r.readouts, r.kept)


TARGET = Scamp5Target("scamp5")
WIDE_TARGET = Scamp5Target(WIDE)

__all__ = ["TARGET", "WIDE_TARGET", "Scamp5Target"]
