"""How well --timeout holds (issue 27): compile each case with a timeout, in process (after a
first compile has loaded the compiler's modules), and print the seconds taken against the
bound S·1.1 + 1 and how it ended.

    .venv/bin/python scripts/timeout_bound.py [CASE.kalg:S ...]

Default cases: a six-output filter of random 3x3 kernels at 0.1 s and 3 s, and a random 31x31
kernel at 20 s (seeded, so the table is repeatable up to the machine's speed).
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

import numpy as np

import kalg
from kalg.diagnostics import KalgError


def _matrix(k: np.ndarray) -> str:
    return "[" + "; ".join(" ".join(map(str, row)) for row in k) + "]"


def default_cases(folder: Path) -> list[tuple[Path, float]]:
    rng = np.random.default_rng(5)
    six = folder / "six.kalg"
    six.write_text("filter six = [" + ", ".join(
        f"{r}: {_matrix(rng.integers(-3, 4, (3, 3)))}" for r in "ABCDEF") + "]\n")
    big = folder / "random31.kalg"
    big.write_text(f"kernel r = {_matrix(np.random.default_rng(31).integers(-9, 10, (31, 31)))}\n")
    return [(six, 0.1), (six, 3.0), (big, 20.0)]


def main(argv: list[str]) -> int:
    with tempfile.TemporaryDirectory() as tmp:
        cases = ([(Path(a.rsplit(":", 1)[0]), float(a.rsplit(":", 1)[1])) for a in argv]
                 or default_cases(Path(tmp)))
        # the first compile of a process loads modules (C extensions: an import cannot be cut)
        kalg.compile([[1, 2, 1]], divisor=4)
        print("| case | --timeout s | seconds | bound s | ended |")
        print("|---|---|---|---|---|")
        for path, seconds in cases:
            start = time.monotonic()
            try:
                result = kalg.compile(path, timeout=seconds)
                ended = f"{result.instructions} instructions; {result.stats['stop reason']}"
            except KalgError as err:
                ended = f"error: {err.message}"
            took = time.monotonic() - start
            print(f"| {path.name} | {seconds:g} | {took:.2f} | {seconds * 1.1 + 1:.2f} | "
                  f"{ended[:140]} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
