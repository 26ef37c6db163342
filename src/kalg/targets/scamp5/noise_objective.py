"""Noise as an objective (`quietest`): among the programs kalg finds within `slack` instructions
of the shortest, the one with the least expected analogue error.

The programs: the shortest (what the pipeline chose), each candidate decomposition's own program
(`codegen.generate`, bounded by the shortest's length plus the slack) and, for a filter, the
constant-matrix program. Each is scored by simulating it under a noise model kalg has
(`kalg.targets.scamp5.machine.noise`: AUKE's, by default, whose per-write noise grows with a
macro's bus steps and whose gain below one compounds along every chain of writes) on a seeded
image of grey levels
about zero, and the expected error is each output's signal-to-noise ratio: the worst output's
SNR decides, then fewer instructions, then fewer bus steps, then the shortest's order. The
chosen program is verified exactly and in the simulator before it is returned. Deterministic:
the noise, the image and the candidates' order are fixed.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from kalg.algebra.kernel import Kernel
from kalg.diagnostics import KalgError, RegisterPressureError
from kalg.targets.scamp5 import codegen
from kalg.targets.scamp5.machine.isa import Instr, bus_steps
from kalg.targets.scamp5.machine.noise import NoiseModel

__all__ = ["MODELS", "Scored", "quietest", "snr_db", "write_depth"]

MODELS = {"auke": NoiseModel.auke, "cain": NoiseModel.cain}
"""The noise models an objective may name (`kalg simulate --noise` has the same presets)."""

IMAGE_SIDE = 64
"""Side of the seeded image each program is scored on (grey levels - 128, AUKE's convention)."""


@dataclass(frozen=True, slots=True)
class Scored:
    """A program with its expected error: the worst output's SNR in dB under the model."""

    program: list[Instr]
    name: str
    snr_db: float

    @property
    def key(self) -> tuple[float, int, int]:
        return (-round(self.snr_db, 6), len(self.program), bus_steps(self.program))


def snr_db(program: list[Instr], outputs: Mapping[str, Kernel], input_register: str,
           model: NoiseModel) -> float:
    """The worst output's signal-to-noise ratio in dB (signal: the ideal output's rms over the
    interior; noise: the rms of the noisy run's difference from it) on a seeded image."""
    from kalg.targets.scamp5.machine.simulator import footprint, noise_statistics, simulate

    reach = max(k.radius() for k in outputs.values())
    side = max(IMAGE_SIDE, 2 * reach + 16)
    image = np.random.default_rng(0).uniform(-128, 128, (side, side))
    stats = noise_statistics(program, image, model, sorted(outputs), input_register)
    ideal = simulate(program, image, input_register)
    rows, cols = footprint(program).interior(image.shape)
    worst = math.inf
    for register, st in stats.items():
        signal = math.sqrt(float((ideal[register][rows, cols] ** 2).mean()))
        ratio = math.inf if st.rms == 0 else -math.inf if signal == 0 else \
            20 * math.log10(signal / st.rms)
        worst = min(worst, ratio)
    return worst


def write_depth(program: list[Instr], input_register: str) -> int:
    """The longest chain of writes: how many instructions the deepest value passed through (each
    write adds noise and, under AUKE's gain, scales what it carries)."""
    depth = {input_register: 0}
    for instr in program:
        d = 1 + max((depth.get(r, 0) for r in instr.reads()), default=0)
        depth |= dict.fromkeys(instr.writes(), d)
    return max(depth.values())


def quietest(shortest: list[Instr], name: str, candidates: Mapping[str, object],
             outputs: Mapping[str, Kernel], registers: tuple[str, ...], input_register: str,
             ops: str, slack: int, model: NoiseModel,
             ) -> tuple[Scored, Scored, int]:
    """(the chosen program, the shortest scored, how many programs were compared): the
    quietest of the programs at most `len(shortest) + slack` long."""
    limit = len(shortest) + slack
    found = [(shortest, name), *_alternatives(candidates, outputs, registers, input_register,
                                              ops, limit)]
    seen: set[tuple[str, ...]] = set()
    scored = []
    for program, source in found:
        text = tuple(map(str, program))
        if len(program) > limit or text in seen:
            continue
        seen.add(text)
        scored.append(Scored(program, source, snr_db(program, outputs, input_register, model)))
    best = min(scored, key=lambda s: s.key)  # min keeps the earliest of equal keys
    _verify(best.program, outputs, input_register)
    return best, scored[0], len(scored)


def _alternatives(candidates: Mapping[str, object], outputs: Mapping[str, Kernel],
                  registers: tuple[str, ...], input_register: str, ops: str,
                  limit: int) -> list[tuple[list[Instr], str]]:
    """Each candidate decomposition's program within `limit` instructions, and for several
    outputs the constant-matrix program."""
    from kalg.targets.scamp5.portfolio import searchable
    from kalg.targets.scamp5.programs import SCREEN

    try:
        usable = searchable(dict(candidates))
    except KalgError:
        usable = {}
    out = []
    for name, decomposition in usable.items():
        try:
            program = codegen.generate(decomposition, registers, input_register, ops, SCREEN,
                                       longest=limit)
        except (RegisterPressureError, KalgError):
            continue
        if program is not None:
            out.append((program, name))
    if len(outputs) > 1 and (matrix := codegen.matrix_filter(dict(outputs), registers,
                                                             input_register, ops)) is not None:
        out.append((matrix, "shared matrix"))
    return out


def _verify(program: list[Instr], outputs: Mapping[str, Kernel], input_register: str) -> None:
    """Exactly, then in the simulator on a random image as wide as the scoring one."""
    from kalg.targets.scamp5.machine.simulator import verify_numeric
    from kalg.targets.scamp5.machine.symbolic import verify_exact

    verify_exact(program, outputs, input_register)
    reach = max(k.radius() for k in outputs.values())
    side = max(IMAGE_SIDE, 2 * reach + 16)
    image = np.random.default_rng(0).uniform(-1, 1, (side, side))
    verify_numeric(program, outputs, image, input_register)
