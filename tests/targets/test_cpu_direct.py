"""Huge cpu plans are lowered as direct correlations (issue 12, rough): cheap to compile, still
checked against the reference correlation, and only where they cost no more operations."""

from __future__ import annotations

import random
import time

import numpy as np
import scipy.ndimage as nd

from kalg.targets.cpu import build
from kalg.targets.cpu.plan import DIRECT_OVER, direct_cost, direct_taps


def _random(side: int, seed: int, semiring: str = "") -> str:
    rng = random.Random(seed)
    lo = 0 if semiring else -3
    rows = "; ".join(" ".join(str(rng.randint(lo, 3)) for _ in range(side)) for _ in range(side))
    head = f"semiring {semiring}\n" if semiring else ""
    return f"{head}kernel r = [{rows}]{'' if semiring else ' / 8'}\n"


def test_a_random_15x15_kernel_compiles_its_pipeline_in_seconds_not_a_minute(tmp_path,
                                                                           monkeypatch):
    # Regression: `kalg run` of a random 15x15 kernel spent 64 s of CPU compiling a Halide
    # pipeline of 317 passes (one Func each); lowered as the direct correlation (one Func per
    # row of taps) it compiles in about a second, and runs faster
    monkeypatch.setenv("KALG_CACHE_DIR", str(tmp_path))
    f = build(_random(15, 1))
    assert f.plan.ops() > DIRECT_OVER
    assert direct_taps(f.plan) is not None
    start = time.process_time()
    image = np.random.default_rng(3).uniform(-1, 1, (40, 37)).astype(np.float32)
    out = f(image)  # compiles, then checks against the reference correlation on two images
    assert time.process_time() - start < 20
    kernel = np.array([[float(c or 0) for c in row]
                       for row in f.plan.kernels["A"].to_rows(centred=True)])
    want = nd.correlate(image.astype(np.float64), kernel, mode="nearest")
    assert np.max(np.abs(out - want)) < 1e-4


def test_a_large_min_plus_kernel_tap_by_tap_is_lowered_directly_and_exactly(tmp_path,
                                                                          monkeypatch):
    monkeypatch.setenv("KALG_CACHE_DIR", str(tmp_path))
    f = build(_random(13, 2, "minplus"))
    assert direct_taps(f.plan) is not None
    image = np.random.default_rng(4).integers(0, 50, (21, 18)).astype(np.float32)
    k = f.plan.kernels["A"]
    structure = np.array([[np.inf if c is None else float(c) for c in row]
                          for row in k.to_rows(centred=True)])
    want = nd.grey_erosion(image, structure=-structure, mode="nearest")
    assert np.array_equal(f(image), want)


def test_plans_cheaper_than_the_direct_sum_keep_their_passes():
    # a random 11x11 kernel's plan: over the threshold (about 114 operations per pixel) but
    # cheaper than the direct sum (about 169): its passes are lowered
    f = build(_random(11, 1))
    assert f.plan.ops() > DIRECT_OVER
    assert direct_cost(f.plan.kernels["A"]) > f.plan.ops()
    assert direct_taps(f.plan) is None
