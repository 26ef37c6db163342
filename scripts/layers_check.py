"""Compile the layer examples (examples/layer8.kalg, layer16.kalg) and check them as a user would:
every output read out at its mark, from the whole sequence replayed on the simulator, against its
exact kernel. Prints a Markdown table (docs/layers.md). Too slow for the test suite (a group of
four 3x3 filters takes 10-20 s of CPU).

    .venv/bin/python scripts/layers_check.py [examples/layer8.kalg ...]
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np

import kalg
from kalg.targets.scamp5.machine.simulator import simulate

ROOT = Path(__file__).resolve().parents[1]
DEFAULT = [ROOT / "examples" / "layer8.kalg", ROOT / "examples" / "layer16.kalg"]


def replay_error(result) -> float:
    """The largest difference, over every output, between the register read out at its mark
    (the whole sequence run from the input) and the output's kernel, on the interior."""
    image = np.random.default_rng(1).uniform(-1, 1, (64, 64))
    worst = 0.0
    for readout in result.readouts:
        state = simulate(result.program[:readout.after], image, result.input_register)
        for register, name in readout.registers.items():
            want = result.kernels[name].apply(image)
            worst = max(worst, float(np.max(np.abs(state[register] - want)[8:-8, 8:-8])))
    return worst


def main(paths: list[Path]) -> None:
    print("| file | outputs | programs (instructions each) | instructions | bus steps | "
          "replay error | seconds |")
    print("|---|---|---|---|---|---|---|")
    for path in paths:
        start = time.monotonic()
        result = kalg.compile(path)
        seconds = time.monotonic() - start
        each = " + ".join(str(r.instructions) for r in result.readouts)
        print(f"| {path.name} | {len(result.kernels)} | {len(result.readouts)} ({each}) | "
              f"{result.instructions} | {result.bus_steps} | {replay_error(result):.1e} | "
              f"{seconds:.0f} |", flush=True)


if __name__ == "__main__":
    main([Path(p) for p in sys.argv[1:]] or DEFAULT)
