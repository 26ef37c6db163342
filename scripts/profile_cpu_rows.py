"""Profile rows of `kalg bench --target cpu`: what dominates a row that misses its goal.

    PYTHONPATH=src python scripts/profile_cpu_rows.py "box 3x3" "Kirsch"

For each row (names as in the bench, by substring): the form and schedule the search chooses
(`schedules.choose`, in $KALG_CACHE_DIR or a fresh cache) with every candidate's median time
on the search's image; then on the bench's 3840x2160 image, timed in interleaved rounds, kalg's
chosen pipeline, OpenCV's call and a memory floor (a fresh output per output filled by one
copy of the input: the bytes any filter must read and write); and Halide's own profile of the
chosen pipeline (time per Func, `Profile` target feature, JIT: its last of three runs), the
Funcs that dominate first.
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import sys
import tempfile

import numpy as np

from kalg.targets.cpu import bench, build, halide, schedules
from kalg.targets.cpu.plan import plan_data

REPEATS = 7


def _floor(outputs: int):
    def copy(image):
        return [np.copyto(np.empty_like(image), image) for _ in range(outputs)]
    return copy


def _profile(f, choice, image) -> list[str]:
    """Halide's profile of the chosen pipeline on `image`: the report of its last run, Funcs by
    time (the profiler prints from C: captured through a temporary file)."""
    hl = halide.hl
    target = hl.get_host_target().with_feature(hl.TargetFeature.Profile)
    low = halide.Lowering(plan_data(f.plan, choice.form), bench.BORDER.mode, bench.BORDER.value,
                          target, schedules.SCHEDULES[choice.schedule])
    pipeline, params = low.pipeline()
    fn = pipeline.compile_to_callable(params, target)
    images = image if isinstance(image, list) else [image]
    outs = [np.empty_like(images[0]) for _ in f.plan.outputs]
    sys.stdout.flush()
    with tempfile.TemporaryFile(mode="w+") as report:  # Halide prints it from C, to fd 1 or 2
        saved = [os.dup(1), os.dup(2)]
        os.dup2(report.fileno(), 1)
        os.dup2(report.fileno(), 2)
        try:
            for _ in range(3):
                fn(*images, *outs)
        finally:
            for fd, old in zip((1, 2), saved, strict=True):
                os.dup2(old, fd)
                os.close(old)
        report.seek(0)
        text = report.read()
    last = text[text.rfind(" total time"):]
    lines = [ln.strip() for ln in last.splitlines() if re.search(r"\(\s*\d+\.\d%\)", ln)]
    return sorted(lines, key=lambda ln: -float(re.search(r"\(\s*(\d+\.\d)%\)", ln).group(1)))


def main(selected: list[str]) -> int:
    rng = np.random.default_rng(0)
    real = rng.random(bench.SHAPE, dtype=np.float32)
    binary = (rng.random(bench.SHAPE) < 0.05).astype(np.uint8)
    mp = bench.SHAPE[0] * bench.SHAPE[1] / 1e6
    for row in bench.rows():
        if not any(s in row.name for s in selected):
            continue
        with contextlib.redirect_stdout(io.StringIO()):
            f = build(row.source, bench.BORDER)
        image = binary if f.plan.semiring.name == "boolean" else real
        f(image[:64, :64])  # the search (or its cached choice)
        choice = f.choices[bench.BORDER]
        print(f"## {row.name}: {f.plan.ops()} ops/pixel, chosen {choice.name}")
        print("search (ms on 1920x1080): " + ", ".join(
            f"{k} {v * 1e3:.2f}" for k, v in sorted(choice.seconds.items(), key=lambda e: e[1])))
        fns = [f, _floor(len(f.plan.outputs))]
        cv = bench._opencv(row, f.plan.kernels)
        fns += [cv] if cv else []
        timed = bench._interleaved(fns, image, REPEATS)
        names = ["kalg", "memory floor", "OpenCV"][:len(fns)]
        print("3840x2160, interleaved medians: " + ", ".join(
            f"{n} {mp / t:.0f} MP/s" for n, (t, _) in zip(names, timed, strict=True)))
        print("Halide profile of kalg's pipeline (3840x2160):")
        for line in _profile(f, choice, image)[:6]:
            print(f"    {line}")
        print(flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
