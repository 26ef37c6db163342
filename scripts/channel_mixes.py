"""SCAMP-5 programs for random filters over several inputs whose outputs read mixes of the
inputs: kalg's program (`kalg.targets.scamp5.pipeline`: the mix paths against the constant-matrix
program) against the constant-matrix program alone, on seeded random filters (not from any file).

* `one`: 2 outputs, each a random 3x3 kernel (integers -2..2, over 4) applied to ONE random
  integer mix (coefficients ±1..3) of 3 inputs;
* `own`: 2 outputs over 2 inputs, each its own random kernel on its own random mix.

    PYTHONPATH=src python scripts/channel_mixes.py [SEEDS]
"""

from __future__ import annotations

import sys

import numpy as np

from kalg.frontend import load_text
from kalg.targets.scamp5 import codegen
from kalg.targets.scamp5.pipeline import Settings, compile_text


def _kernel(rng) -> str:
    rows = ["; ".join(" ".join(str(int(v)) for v in rng.integers(-2, 3, 3)) for _ in range(3))]
    return f"[{rows[0]}] / 4"


def _mix(rng, names: str) -> str:
    coefficients = rng.integers(1, 4, len(names)) * rng.choice([-1, 1], len(names))
    return " + ".join(f"{int(m)} * {c}" for m, c in zip(coefficients, names, strict=True))


def text(kind: str, seed: int) -> str:
    rng = np.random.default_rng(seed)
    if kind == "one":
        mix = _mix(rng, "ABC")
        return ("target scamp5 { registers: A..F, input: A B C }\n"
                f"filter f = [D: {_kernel(rng)} * ({mix}), E: {_kernel(rng)} * ({mix})]\n")
    return ("target scamp5 { registers: A..F, input: A B }\n"
            f"filter f = [C: {_kernel(rng)} * ({_mix(rng, 'AB')}), "
            f"D: {_kernel(rng)} * ({_mix(rng, 'AB')})]\n")


def main(seeds: range) -> None:
    print("| kind | seed | ops | kalg | matrix alone | candidate |")
    print("|---|---|---|---|---|---|")
    for kind in ("one", "own"):
        for seed in seeds:
            source = text(kind, seed)
            definition = load_text(source, "f.kalg").definition()
            for ops in ("all", "basic"):
                result = compile_text(source, "f.kalg", Settings(ops=ops))
                matrix = codegen.matrix_channels(definition.channels, tuple("ABCDEF"),
                                                 definition.inputs, ops)
                alone = len(matrix) if matrix else "none"
                print(f"| {kind} | {seed} | {ops} | {len(result.program)} | {alone} | "
                      f"{result.stats['candidate']} |", flush=True)


if __name__ == "__main__":
    main(range(int(sys.argv[1]) if len(sys.argv) > 1 else 5))
