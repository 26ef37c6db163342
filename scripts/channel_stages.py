"""SCAMP-5 programs for filters over two inputs, before and after the staged candidate
(`channel_programs._staged_program`: each (output, channel) kernel from its channel's e-graph,
or the channels' common factor applied once to their mix): instructions and CPU seconds of the whole
compile, with the staged candidate switched off ("before": the constant-matrix and mix
programs only, kalg before it) and on ("after"). Every program is verified by the compile
(exactly on every input, numerically on a random image) and checked here once more.

Filters: the three channel examples, then seeded random ones (none from a file), seed s:
1 + s % 3 outputs over inputs A, B, each output a 3x3 kernel per input; even seeds draw every
kernel from random integers 0..4 over 4 or 8 (half the seeds each), odd seeds draw each from
structured kernels (Gaussian /16, box /8, Sobel x or y /4, Laplacian /4, negated at random)
or, one time in four, a random one.

    PYTHONPATH=src python scripts/channel_stages.py [SEEDS] [--ops all|basic]
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import numpy as np

import kalg.targets.scamp5.channel_programs as channel_programs
from kalg.frontend import load_text
from kalg.targets.scamp5 import codegen
from kalg.targets.scamp5.machine.simulator import verify_numeric_channels
from kalg.targets.scamp5.machine.symbolic import verify_exact_channels
from kalg.targets.scamp5.pipeline import Settings, compile_text

EXAMPLES = ("cnn_layer", "colour_edges", "frame_pair")
STRUCTURED = {"gauss": "[1 2 1; 2 4 2; 1 2 1] / 16", "box": "[1 1 1; 1 1 1; 1 1 1] / 8",
              "sobel_x": "[1 0 -1; 2 0 -2; 1 0 -1] / 4", "sobel_y": "[1 2 1; 0 0 0; -1 -2 -1] / 4",
              "laplacian": "[0 1 0; 1 -4 1; 0 1 0] / 4"}


SHORT = {channel_programs.MATRIX: "matrix", channel_programs.MIXED: "one mix",
         channel_programs.MIXES: "own mixes", channel_programs.STAGED: "staged"}


def _random(rng, divisor: int) -> str:
    rows = "; ".join(" ".join(str(int(v)) for v in rng.integers(0, 5, 3)) for _ in range(3))
    return f"[{rows}] / {divisor}"


def _kernel(rng, structured: bool, divisor: int) -> str:
    if not structured or rng.random() < 0.25:
        return _random(rng, divisor)
    name = sorted(STRUCTURED)[int(rng.integers(len(STRUCTURED)))]
    return ("-" if rng.random() < 0.3 else "") + STRUCTURED[name]


def text(seed: int) -> str:
    """The random filter of `seed` (see the module's docstring)."""
    rng = np.random.default_rng(seed)
    structured, divisor = seed % 2 == 1, (4, 8)[(seed // 2) % 2]
    outputs = []
    for out in "CDE"[: 1 + seed % 3]:
        a, b = _kernel(rng, structured, divisor), _kernel(rng, structured, divisor)
        outputs.append(f"{out}: {a} * A + {b} * B")
    return ("target scamp5 { registers: A..F, input: A B }\n"
            f"filter f = [{', '.join(outputs)}]\n")


def _cpu() -> float:
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def _compile(source: str, ops: str, staged: bool):
    saved = channel_programs._staged_program
    if not staged:
        channel_programs._staged_program = lambda *args, **kwargs: None
    try:
        start = _cpu()
        result = compile_text(source, "f.kalg", Settings(ops=ops))
        return result, _cpu() - start
    finally:
        channel_programs._staged_program = saved


def row(name: str, source: str, ops: str) -> tuple[int, int]:
    definition = load_text(source, "f.kalg").definition()
    matrix = codegen.matrix_channels(definition.channels, tuple("ABCDEF"), definition.inputs, ops)
    before, t_before = _compile(source, ops, staged=False)
    after, t_after = _compile(source, ops, staged=True)
    for result in (before, after):
        verify_exact_channels(result.program, definition.channels, definition.inputs)
        images = {c: np.random.default_rng(1).uniform(-1, 1, (40, 40)) for c in definition.inputs}
        verify_numeric_channels(result.program, definition.channels, images)
    n_before, n_after = len(before.program), len(after.program)
    assert n_after <= n_before, f"{name}: the staged candidate made it longer"
    winner = SHORT.get(after.stats["candidate"], after.stats["candidate"])
    print(f"| {name} | {len(definition.channels)} | {len(matrix) if matrix else 'none'} | "
          f"{n_before} | {n_after} | {winner} | {t_before:.1f} | "
          f"{t_after:.1f} |", flush=True)
    return n_before, n_after


def main(argv: list[str]) -> None:
    ops = argv[argv.index("--ops") + 1] if "--ops" in argv else "all"
    seeds = int(next((a for a in argv if a.isdigit()), 20))
    print(f"ops {ops}; CPU seconds of the whole compile (user + sys, forked workers included)\n")
    print("| filter | outputs | matrix alone | before | after | winner | CPU s before | "
          "CPU s after |")
    print("|---|---|---|---|---|---|---|---|")
    root = Path(__file__).resolve().parents[1] / "examples"
    totals = [row(e, (root / f"{e}.kalg").read_text(), ops) for e in EXAMPLES]
    totals += [row(f"seed {s} ({'structured' if s % 2 else 'random'})", text(s), ops)
               for s in range(seeds)]
    before, after = (sum(t[i] for t in totals) for i in (0, 1))
    shorter = sum(a < b for b, a in totals)
    print(f"\ntotal {before} -> {after} instructions; shorter on {shorter} of {len(totals)}, "
          "longer on none")


if __name__ == "__main__":
    main(sys.argv[1:])
