"""How well --timeout holds (issue 27): compile each case with a timeout, in process (after a
first compile has loaded the compiler's modules), and print the seconds taken against the
bound S·1.1 + 1 and how it ended.

    .venv/bin/python scripts/timeout_bound.py [CASE.kalg:S ...]

Default cases, one or more per path of the compiler: single kernels small (gauss3) and large
(random 9x9 and 31x31), a channel filter (cnn_layer: two inputs), a six-output filter of random
3x3 kernels, an eight-output filter with `split: auto` (layer8) and a sixteen-output layer
(layer16) (random kernels seeded, so the table is repeatable up to the machine's speed). A
case "ends" in a program (the searched one, or the direct fallback when the alarm cut the
compile: `kalg.targets.scamp5.fallback`) or an error naming the stage cut.
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

import numpy as np

import kalg
from kalg.diagnostics import KalgError

ROOT = Path(__file__).resolve().parents[1]


def _matrix(k: np.ndarray) -> str:
    return "[" + "; ".join(" ".join(map(str, row)) for row in k) + "]"


def default_cases(folder: Path) -> list[tuple[str, Path, float]]:
    rng = np.random.default_rng(5)
    six = folder / "six.kalg"
    six.write_text("filter six = [" + ", ".join(
        f"{r}: {_matrix(rng.integers(-3, 4, (3, 3)))}" for r in "ABCDEF") + "]\n")
    r9 = folder / "random9.kalg"
    r9.write_text(f"kernel r = {_matrix(np.random.default_rng(9).integers(-9, 10, (9, 9)))}\n")
    big = folder / "random31.kalg"
    big.write_text(f"kernel r = {_matrix(np.random.default_rng(31).integers(-9, 10, (31, 31)))}\n")
    ex = ROOT / "examples"
    return [("single small", ex / "gauss3.kalg", 0.1), ("single small", ex / "gauss3.kalg", 1),
            ("single large", r9, 1), ("single large", r9, 5), ("single large", big, 5),
            ("single large", big, 20), ("channel filter", ex / "cnn_layer.kalg", 0.5),
            ("channel filter", ex / "cnn_layer.kalg", 3), ("six outputs", six, 0.1),
            ("six outputs", six, 1), ("six outputs", six, 3),
            ("eight outputs, split auto", ex / "layer8.kalg", 1),
            ("eight outputs, split auto", ex / "layer8.kalg", 5),
            ("layer of 16", ex / "layer16.kalg", 2), ("layer of 16", ex / "layer16.kalg", 10)]


def main(argv: list[str]) -> int:
    with tempfile.TemporaryDirectory() as tmp:
        cases = ([("given", Path(a.rsplit(":", 1)[0]), float(a.rsplit(":", 1)[1])) for a in argv]
                 or default_cases(Path(tmp)))
        # the first compile of a process loads modules (C extensions: an import cannot be cut)
        kalg.compile([[1, 2, 1]], divisor=4)
        print("| path | case | --timeout S | wall s | bound S·1.1+1 s | held | ended |")
        print("|---|---|---|---|---|---|---|")
        for label, path, seconds in cases:
            start = time.monotonic()
            try:
                result = kalg.compile(path, timeout=seconds)
                ended = (f"{result.instructions} instructions ({result.stats['candidate']}); "
                         f"{result.stats['stop reason']}")
            except KalgError as err:
                ended = f"error: {err.message}"
            took = time.monotonic() - start
            bound = seconds * 1.1 + 1
            print(f"| {label} | {path.name} | {seconds:g} | {took:.2f} | {bound:.2f} | "
                  f"{'yes' if took <= bound else 'NO'} | {ended[:160]} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
