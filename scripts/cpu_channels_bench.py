"""Throughput of channel filters on the cpu (kalg.targets.cpu) against OpenCV filter2D and
scipy.ndimage.correlate summed over the channels: a 3840x2160 image with one channel per input,
replicated borders, median of 5 calls (scipy: 1). kalg's time includes splitting the HxWxC
array into planes.

    PYTHONPATH=src python scripts/cpu_channels_bench.py colour_edges frame_pair cnn_layer
"""

from __future__ import annotations

import sys
import time

import cv2
import numpy as np
import scipy.ndimage as nd

from kalg.targets.cpu import build

SHAPE = (2160, 3840)


def median_seconds(call, n: int = 5) -> float:
    times = []
    for _ in range(n):
        start = time.perf_counter()
        call()
        times.append(time.perf_counter() - start)
    return sorted(times)[n // 2]


def summed(f, planes, one) -> dict[str, np.ndarray]:
    """Each output: `one(plane, kernel array)` summed over the inputs it reads."""
    return {o: sum(one(planes[i], parts[c].to_array().astype(np.float32))
                   for i, c in enumerate(f.plan.inputs) if c in parts)
            for o, parts in f.plan.channels.items()}


def opencv(plane, k):
    return cv2.filter2D(plane, -1, k, borderType=cv2.BORDER_REPLICATE)


def scipy(plane, k):
    return nd.correlate(plane, k, mode="nearest")


def row(example: str) -> str:
    f = build(f"examples/{example}.kalg", border="replicate")
    n = len(f.plan.inputs)
    image = np.random.default_rng(0).uniform(0, 1, (*SHAPE, n)).astype(np.float32)
    planes = [np.ascontiguousarray(image[:, :, c]) for c in range(n)]
    f(image)  # compile (or load) and check the pipeline
    t_kalg = median_seconds(lambda: f(image))
    t_cv = median_seconds(lambda: summed(f, planes, opencv))
    t_scipy = median_seconds(lambda: summed(f, planes, scipy), 1)
    got, want = f(image), summed(f, planes, opencv)
    diff = max(float(np.abs(got[o] - want[o]).max()) for o in want)
    mp = SHAPE[0] * SHAPE[1] / 1e6
    return (f"| {example} | {n} | {f.plan.ops()} | {mp / t_kalg:.0f} | {mp / t_cv:.0f} | "
            f"{mp / t_scipy:.0f} | {t_cv / t_kalg:.2f}x | {t_scipy / t_kalg:.2f}x | {diff:.1e} |")


def main(examples: list[str]) -> None:
    print("| example | inputs | ops/pixel | kalg MP/s | OpenCV MP/s | scipy MP/s | vs OpenCV "
          "| vs scipy | max diff |")
    print("|---|---|---|---|---|---|---|---|---|")
    for example in examples:
        print(row(example), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:] or ["colour_edges", "frame_pair", "cnn_layer"])
