"""A seeded analogue noise model for the numeric simulator, and error statistics.

`NoiseModel` is a frozen set of parameters; `NoiseModel.start(...)` makes the per-run state
(`Perturbation`) that the simulator calls after every value an instruction writes. Parameters
are in the units of the image values; the presets follow ../shared/docs/scamp5-isa.md:
Cain's emulator (write noise 0.005·|value|) and AUKE's cpa-sim (gain 0.93, fixed-pattern noise
N(0, 0.05), per-op noise N(0, 0.09), on grey values − 128).

The model is what lets two programs for one kernel be compared by expected error, not only by
length: every write adds error, and a macro with more bus steps adds more.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from kalg.diagnostics import KalgError


@dataclass(frozen=True, slots=True)
class NoiseModel:
    """What happens to a value v that an instruction writes, in this order (z, z' ~ N(0, 1) fresh
    per PE and per write; bus = the macro's bus steps):

    ``v ← gain·v;  v ← v·(1 + relative·z);  v ← v + fpn[register];  v ← v + additive·√(bus/2)·z'``

    ``v·relative·z`` has the distribution of Cain's ``relative·|v|`` write noise (z is symmetric).
    The fixed pattern ``fpn[register]`` is one N(0, fixed_pattern²) draw per PE and register,
    fixed for the run and shared by every image of a batch (it is a property of the chip). It is
    drawn for every register whatever the program, so two programs run with one seed see one chip.
    """

    gain: float = 1.0
    """Multiplicative gain per write (AUKE: 0.93); 1 means none."""
    relative: float = 0.0
    """Standard deviation of write noise relative to |value| (Cain: 0.005)."""
    fixed_pattern: float = 0.0
    """Standard deviation of the per-PE, per-register offset added on each write (AUKE: 0.05)."""
    additive: float = 0.0
    """Standard deviation of additive noise per write of a 2-bus-step macro (AUKE: 0.09); a macro
    of b bus steps (the 5-step divisions) gets additive·√(b/2)."""
    seed: int = 0
    """Seed of every random draw: the same model, program and image give the same result."""

    def __post_init__(self) -> None:
        for name in ("gain", "relative", "fixed_pattern", "additive"):
            value = getattr(self, name)
            if (isinstance(value, bool) or not isinstance(value, int | float)
                    or not math.isfinite(value) or value < 0):
                raise KalgError(f"noise parameter {name} must be a finite number >= 0, not "
                                f"{value!r}")

    @staticmethod
    def named(name: object, seed: int = 0) -> NoiseModel:
        """The preset called `name` ('cain' or 'auke'); KalgError for anything else."""
        presets = {"cain": NoiseModel.cain, "auke": NoiseModel.auke}
        if not isinstance(name, str) or name not in presets:
            raise KalgError(f"unknown noise model {name!r}: expected 'cain', 'auke' or a "
                            "kalg.targets.scamp5.machine.noise.NoiseModel")
        return presets[name](seed)

    @staticmethod
    def cain(seed: int = 0) -> NoiseModel:
        """Cain's emulator: write noise 0.005·|value|."""
        return NoiseModel(relative=0.005, seed=seed)

    @staticmethod
    def auke(seed: int = 0) -> NoiseModel:
        """AUKE's cpa-sim: gain 0.93, fixed pattern N(0, 0.05), per-op noise N(0, 0.09)."""
        return NoiseModel(gain=0.93, fixed_pattern=0.05, additive=0.09, seed=seed)

    @property
    def is_ideal(self) -> bool:
        """True when no parameter perturbs anything."""
        return (self.gain == 1.0 and self.relative == 0.0 and self.fixed_pattern == 0.0
                and self.additive == 0.0)

    def start(self, batch_shape: tuple[int, int, int], registers: Sequence[str]) -> Perturbation:
        """The per-run state for images of `batch_shape` (N, H, W) and the given register names."""
        fpn_seed, write_seed = np.random.SeedSequence(self.seed).spawn(2)
        fpn_rng = np.random.default_rng(fpn_seed)
        fixed = {r: fpn_rng.normal(0.0, self.fixed_pattern, batch_shape[1:]) for r in registers}
        return Perturbation(self, np.random.default_rng(write_seed), fixed,
                            np.empty(batch_shape))


class Perturbation:
    """Mutable per-run noise state: the write stream, the fixed pattern and a scratch buffer."""

    def __init__(self, model: NoiseModel, rng: np.random.Generator,
                 fixed: dict[str, np.ndarray], scratch: np.ndarray):
        self.model, self.rng, self.fixed, self.scratch = model, rng, fixed, scratch

    def apply(self, value: np.ndarray, register: str, bus: int) -> None:
        """Perturb `value` (an (n, H, W) view just written to `register`, n ≤ N) in place."""
        m, z = self.model, self.scratch[:value.shape[0]]
        if m.gain != 1.0:
            value *= m.gain
        if m.relative:
            self.rng.standard_normal(out=z)
            z *= m.relative
            z += 1.0
            value *= z
        if m.fixed_pattern:
            value += self.fixed[register]
        if m.additive:
            self.rng.standard_normal(out=z)
            z *= m.additive * math.sqrt(bus / 2)
            value += z


@dataclass(frozen=True, slots=True)
class ErrorStats:
    """Error of one output register against the ideal result, over the interior PEs."""

    rms: float
    """Root mean square error."""
    max_abs: float
    """Largest absolute error."""
    bias: float
    """Mean error (signed): the systematic part, e.g. from a gain below 1."""

    def __str__(self) -> str:
        return f"rms {self.rms:.4g}, max {self.max_abs:.4g}, bias {self.bias:+.4g}"


def error_stats(noisy: np.ndarray, ideal: np.ndarray) -> ErrorStats:
    """Statistics of ``noisy − ideal`` (arrays of one shape, already cut to the interior)."""
    err = np.asarray(noisy, dtype=np.float64) - ideal
    if err.size == 0:
        raise ValueError("no PEs to compare: the interior is empty")
    return ErrorStats(rms=float(np.sqrt(np.mean(err * err))), max_abs=float(np.max(np.abs(err))),
                      bias=float(np.mean(err)))
