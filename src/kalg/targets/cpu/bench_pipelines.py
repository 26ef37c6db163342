"""The pipeline rows of `kalg bench --target cpu`: kalg's fused pipelines against the OpenCV
calls a user chains, and against kalg's own pipeline unfused.

Each row is an example of examples/ (`ROWS`) on the bench's 3840x2160 float32 image with
replicated borders. Three timings, each the median of `repeats` calls after a warm-up: kalg with
the schedule its search chose (`pipelines.SEARCH`, measured on this machine), the same pipeline
with the `root` schedule (every stage and pass stored over the whole image, stage by stage: no
fusion), and the OpenCV calls. Both kalg results are compared with OpenCV's before the row is
printed (`max diff`).
"""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np

from kalg import resources
from kalg.targets.cpu.pipelines import build_pipeline
from kalg.targets.table import markdown_table, median_seconds

ROWS = ("harris", "shi_tomasi", "gradient_magnitude", "dog", "unsharp")
"""The examples measured, in order."""


def opencv_chains() -> dict[str, Callable[[np.ndarray], np.ndarray]]:
    """Each row's OpenCV calls, as a user would chain them (all with BORDER_REPLICATE)."""
    import cv2
    r = cv2.BORDER_REPLICATE

    def gradient(im):
        g = cv2.GaussianBlur(im, (5, 5), 0, borderType=r)
        return cv2.magnitude(cv2.Sobel(g, cv2.CV_32F, 1, 0, borderType=r),
                             cv2.Sobel(g, cv2.CV_32F, 0, 1, borderType=r))

    def unsharp(im):
        blurred = cv2.GaussianBlur(im, (5, 5), 0, borderType=r)
        sharpened = cv2.addWeighted(im, 1.5, blurred, -0.5, 0)
        low = cv2.compare(cv2.absdiff(im, blurred), 0.05, cv2.CMP_LT)
        return cv2.copyTo(im, low, sharpened)

    return {"harris": lambda im: cv2.cornerHarris(im, 3, 3, 0.04, borderType=r),
            "shi_tomasi": lambda im: cv2.cornerMinEigenVal(im, 3, 3, borderType=r),
            "gradient_magnitude": gradient,
            "dog": lambda im: cv2.subtract(cv2.GaussianBlur(im, (3, 3), 0, borderType=r),
                                           cv2.GaussianBlur(im, (7, 7), 0, borderType=r)),
            "unsharp": unsharp}


def measure(name: str, image: np.ndarray, repeats: int) -> dict:
    """One row: kalg fused (searched schedule), kalg unfused (`root`), OpenCV."""
    from kalg.frontend import load_file
    definition = load_file(resources.examples_dir() / f"{name}.kalg").definition()
    start = time.perf_counter()
    f = build_pipeline(definition)
    border = f.border
    schedule = f.schedule(border)  # the search (compiles and times each candidate)
    search = time.perf_counter() - start
    images = [np.ascontiguousarray(image)]
    fused = median_seconds(lambda: f.run(images, border), repeats)
    unfused = median_seconds(lambda: f.run(images, border, "root"), repeats)
    cv = opencv_chains()[name]
    t_cv = median_seconds(lambda: cv(image), repeats)
    want = cv(image).astype(np.float64)
    diff = max(float(np.max(np.abs(f.run(images, border, s)[0] - want)))
               for s in (schedule, "root"))
    mp = image.size / 1e6
    return {"row": name, "ops/pixel": f.plan.ops(), "schedule": schedule,
            "kalg MP/s": mp / fused, "unfused MP/s": mp / unfused, "OpenCV MP/s": mp / t_cv,
            "vs OpenCV": t_cv / fused, "vs unfused": unfused / fused,
            "search+compile s": search, "max diff": diff,
            "candidates ms": ", ".join(f"{k} {v * 1e3:.1f}"
                                       for k, v in f.timings.get(border, {}).items())}


COLUMNS = ("row", "ops/pixel", "schedule", "kalg MP/s", "unfused MP/s", "OpenCV MP/s",
           "vs OpenCV", "vs unfused", "search+compile s", "max diff", "candidates ms")


def format_table(results: list[dict]) -> str:
    return markdown_table(results, COLUMNS)


__all__ = ["ROWS", "format_table", "measure", "opencv_chains"]
