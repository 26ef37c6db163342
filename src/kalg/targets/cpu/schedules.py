"""`choose(plan, border, compile, check) -> Choice`: how a kernel's (or a bank's) cpu plan is
lowered on this machine - its form and its schedule - chosen by a small measured search.

The candidates: each form of the plan (`plan.forms`: its passes, the direct correlation, the
separable one) under the fixed schedule (`FIXED`) and, for the forms that copy the input, under
`in-place`; then the fastest of these under each other schedule of `SCHEDULES` that changes it
(at most 9 compiles).
Every candidate is compiled (from the disk cache when there) and checked against the reference
correlation (`check`: VerificationError on any difference) before it is timed, so whatever is
chosen is correct. The candidates of a stage are timed in ROUNDS interleaved rounds on one
fixed image of SEARCH_SHAPE (one warm-up call each first): the median counts, the first in
order wins a tie. Budgets are counts, not seconds.

The choice is cached as JSON beside the compiled pipelines, keyed by the plan, the border, the
machine (Halide's host target and the number of cores), kalg's and Halide's versions and the
candidates (`choice_key`): a rerun reads it and compiles nothing it does not run (the chosen
pipeline itself comes from the disk cache), so given the cache the choice is deterministic.
The forms differ in float32 rounding (not in exact results): each is within the reference
check's tolerance. `KALG_CPU_SEARCH=0` skips the search (the plan's passes, fixed schedule).
"""

from __future__ import annotations

import hashlib
import json
import os
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from kalg.targets.cpu.borders import Border
from kalg.targets.cpu.plan import CpuPlan, forms, reads_input_in_place

SCHEDULES: dict[str, tuple | None] = {
    "strips": None,
    "strips-wide": (0, 0, 2, False),
    "tiles": (32, 256, 1, False),
    "sliding": (64, 0, 1, True),
    "sliding-wide": (64, 0, 2, True),
    "in-place": (0, 0, 1, False, True),
}
"""Schedules (`halide.Lowering.schedule_cpu`: rows per strip or 0 for the fixed rule's,
columns per tile or 0 for whole rows, times the natural vector width, sliding window) by name:
`strips` is the fixed rule (strips of rows in parallel, every stored value computed per strip);
`-wide` vectors of twice the natural width (more independent operations in flight); `tiles`
strips of 32 rows cut into tiles of 256 columns (stored values stay in the first cache levels);
`sliding` strips of 64 rows whose stored values are computed row by row as the output needs
them (line buffers, as OpenCV's separable filters keep a ring of rows); `in-place` strips whose
direct or separable form reads the bordered input where it is instead of copying it per strip
(an extra pass through the cache that a small kernel does not amortise; not a candidate for the
plan's passes, which it would not change)."""

FIXED = ("plan", "strips")
"""The choice without a search: the plan's passes under the fixed rule."""

SEARCH_SHAPE = (1080, 1920)
"""The image (rows, columns) every candidate is timed on: a frame of HD video."""

ROUNDS = 7
"""Timed calls per candidate, interleaved with the other candidates of its stage."""


@dataclass
class Choice:
    """The form and schedule chosen, the seconds each candidate took (median, on
    SEARCH_SHAPE) and whether the choice came from the cache."""

    form: str
    schedule: str
    seconds: dict[str, float] = field(default_factory=dict)
    cached: bool = False

    @property
    def name(self) -> str:
        return f"{self.form}/{self.schedule}"


def searching() -> bool:
    """Whether `build` searches (KALG_CPU_SEARCH is not 0)."""
    return os.environ.get("KALG_CPU_SEARCH", "1") != "0"


def choose(plan: CpuPlan, border: Border, compile: Callable[[str, tuple | None], Callable],
           check: Callable[[Callable], None]) -> Choice:
    """The fastest checked (form, schedule) for the plan with `border`: from the cache, else by
    the search (see the module docstring). `compile(form, schedule)` returns a run(images,
    outs) function; `check(run)` raises if its results differ from the reference."""
    path = _choice_path(plan, border)
    if path is not None and path.exists():
        try:
            data = json.loads(path.read_text())
            if data["form"] in forms(plan) and data["schedule"] in SCHEDULES:
                return Choice(data["form"], data["schedule"], data.get("seconds", {}), True)
        except (OSError, ValueError, KeyError, TypeError):
            pass
    choice = _search(plan, compile, check)
    if path is not None:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps({"form": choice.form, "schedule": choice.schedule,
                                        "seconds": choice.seconds}, sort_keys=True))
        except OSError:
            pass
    return choice


def _search(plan: CpuPlan, compile: Callable, check: Callable) -> Choice:
    runs: dict[tuple[str, str], Callable] = {}

    def candidate(form: str, schedule: str) -> Callable:
        if (form, schedule) not in runs:
            run = compile(form, SCHEDULES[schedule])
            check(run)  # a candidate is timed only once it is known to be right
            runs[form, schedule] = run
        return runs[form, schedule]

    rng = np.random.default_rng(0)
    images = [rng.random(SEARCH_SHAPE, dtype=np.float32) for _ in plan.inputs or (None,)]
    if plan.semiring.name == "boolean":
        images = [(i < 0.1).astype(np.uint8) for i in images]
    seconds: dict[str, float] = {}
    # the copy of the input is part of a form's cost: each form with it and (but the plan's
    # passes, which have none) without it, before the other schedules
    first = [(f, s) for f in forms(plan) for s in SCHEDULES
             if s == FIXED[1] or (f != "plan" and reads_input_in_place(SCHEDULES[s]))]
    best_form = _fastest(first, candidate, images, len(plan.outputs), seconds)[0]
    second = [(best_form, s) for s in SCHEDULES
              if best_form != "plan" or not reads_input_in_place(SCHEDULES[s])]
    form, schedule = _fastest(second, candidate, images, len(plan.outputs), seconds)
    return Choice(form, schedule, seconds)


def _fastest(candidates: list[tuple[str, str]], candidate: Callable, images: list[np.ndarray],
             outputs: int, seconds: dict[str, float]) -> tuple[str, str]:
    """The candidate of least median time over ROUNDS interleaved rounds (the first on a tie);
    records each median in `seconds` under 'form/schedule'."""
    outs = [np.empty_like(images[0]) for _ in range(outputs)]
    runs = [candidate(*c) for c in candidates]
    for run in runs:  # warm-up: first-touch of buffers, the thread pool
        run(images, outs)
    times: list[list[float]] = [[] for _ in runs]
    for _ in range(ROUNDS):
        for k, run in enumerate(runs):
            start = time.perf_counter()
            run(images, outs)
            times[k].append(time.perf_counter() - start)
    medians = [statistics.median(t) for t in times]
    for c, m in zip(candidates, medians, strict=True):
        seconds[f"{c[0]}/{c[1]}"] = m
    return candidates[min(range(len(candidates)), key=lambda k: medians[k])]


def choice_key(plan: CpuPlan, border: Border) -> str:
    """What a cached choice depends on (see the module docstring)."""
    from kalg import __version__
    from kalg.targets.cpu import halide  # the only module that imports Halide
    text = "\n".join([f"kalg {__version__} halide {halide.halide_version()}",
                      f"target {halide.host_target()} cores {os.cpu_count()}",
                      f"border {border}", f"forms {forms(plan)}",
                      f"schedules {sorted(SCHEDULES.items())} {SEARCH_SHAPE} {ROUNDS}",
                      plan.describe()])
    return hashlib.sha256(text.encode()).hexdigest()


def _choice_path(plan: CpuPlan, border: Border) -> Path | None:
    from kalg.targets.cpu.halide import cache_dir
    base = cache_dir()
    return None if base is None else base / f"kalg_choice_{choice_key(plan, border)[:32]}.json"


__all__ = ["FIXED", "SCHEDULES", "Choice", "choice_key", "choose", "searching"]
