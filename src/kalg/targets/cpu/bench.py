"""`kalg bench --target cpu`: throughput of kalg's Halide pipelines against OpenCV and scipy.

One run, one machine, one 3840x2160 float32 image (replicated borders): for each row, kalg's
filter (`build`; search and cold compile timed on their own), then OpenCV's natural call for it
(`filter2D`; `sepFilter2D` for separable kernels; `boxFilter` for boxes; `erode`/`dilate` for
flat morphology; one call per output for banks) and scipy.ndimage's (`correlate`,
`uniform_filter`, `grey_erosion`, `binary_dilation`). Throughput is megapixels per second of the
median of `repeats` timed calls after one warm-up; every kalg result is compared with OpenCV's
(or scipy's) before its row is printed. OpenCV is an optional dependency (the `bench` extra).
Banks have one more ratio, "vs OpenCV, out=": both writing into outputs the caller allocated
once (kalg's `out=`, OpenCV's `dst=`), as a video loop would; with fresh outputs every call a
bank's throughput is bound by the page faults of writing them.

The rows are kernels written in .kalg (`ROWS`): boxes 3x3..31x31 (normalised), binomial
Gaussians 3x3..9x9, the Sobel pair as one bank, Laplacian-of-Gaussian 5x5 and 9x9 (integer
approximations), the eight Kirsch compass kernels as one bank, a random 5x5 kernel, a min-plus
chamfer distance pass, binary dilations 3x3 and 15x15.
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from kalg.algebra.kernel import BOOLEAN, Kernel
from kalg.diagnostics import UsageError, VerificationError
from kalg.targets.cpu.borders import Border
from kalg.targets.cpu.runner import build
from kalg.targets.table import markdown_table

SHAPE = (2160, 3840)
BORDER = Border("replicate")
REGS = "ABCDEFGH"


def _matrix(a) -> str:
    return "[" + "; ".join(" ".join(str(int(v)) for v in row) for row in np.asarray(a)) + "]"


def _binomial(n: int) -> np.ndarray:
    row = np.array([1])
    for _ in range(n - 1):
        row = np.convolve(row, [1, 1])
    return row


def _log(n: int, sigma: float) -> np.ndarray:
    r = n // 2
    y, x = np.mgrid[-r:r + 1, -r:r + 1]
    q = (x * x + y * y) / (2 * sigma * sigma)
    k = (q - 1) * np.exp(-q)
    k = np.rint(k / np.abs(k).max() * 16).astype(int)
    k[r, r] -= k.sum()  # zero sum, as a Laplacian
    return k


def _kirsch() -> list[np.ndarray]:
    ring = [(0, 0), (0, 1), (0, 2), (1, 2), (2, 2), (2, 1), (2, 0), (1, 0)]
    out = []
    for rot in range(8):
        k = np.full((3, 3), -3)
        k[1, 1] = 0
        for i in range(3):
            k[ring[(rot + i) % 8]] = 5
        out.append(k)
    return out


def _bank(name: str, kernels: list[np.ndarray]) -> str:
    regs = REGS[:len(kernels)]
    outs = ", ".join(f"{r}: {_matrix(k)}" for r, k in zip(regs, kernels, strict=True))
    return f"target scamp5_wide {{ registers: A..{regs[-1]} }}\nfilter {name} = [{outs}]"


@dataclass(frozen=True)
class Row:
    name: str
    source: str
    kind: str  # box | separable | general | bank | chamfer | binary
    arrays: tuple = ()


def rows() -> list[Row]:
    """The benchmark rows, in order."""
    out = [Row(f"box {n}x{n}", f"kernel box{n} = {_matrix(np.ones((n, n)))} / {n * n}", "box",
               (np.ones((n, n)) / (n * n),)) for n in (3, 5, 9, 15, 31)]
    for n in (3, 5, 7, 9):
        b = _binomial(n)
        k = np.outer(b, b)
        out.append(Row(f"binomial {n}x{n}", f"kernel g{n} = {_matrix(k)} / {k.sum()}",
                       "separable", (b / b.sum(),)))
    sx = np.array([[1, 0, -1], [2, 0, -2], [1, 0, -1]])
    out.append(Row("Sobel pair (bank)", _bank("sobel", [sx, sx.T]), "bank", (sx, sx.T)))
    for n, sigma in ((5, 0.8), (9, 1.4)):
        k = _log(n, sigma)
        out.append(Row(f"LoG {n}x{n}", f"kernel log{n} = {_matrix(k)}", "general", (k,)))
    kirsch = _kirsch()
    out.append(Row("Kirsch compass x8 (bank)", _bank("compass", kirsch), "bank", tuple(kirsch)))
    rnd = np.random.default_rng(5).integers(-9, 10, (5, 5))
    out.append(Row("random 5x5", f"kernel rnd = {_matrix(rnd)} / 16", "general", (rnd / 16,)))
    out.append(Row("chamfer 5x5 (min-plus)", "kernel chamfer = [. 11 . 11 .; 11 7 5 7 11; "
                   ". 5 0 5 .; 11 7 5 7 11; . 11 . 11 .] with semiring minplus", "chamfer"))
    for n in (3, 15):
        out.append(Row(f"binary dilation {n}x{n}",
                       f"kernel dil{n} = {_matrix(np.ones((n, n)))} with semiring boolean",
                       "binary", (np.ones((n, n), np.uint8),)))
    return out


def _opencv(row: Row, kernels: dict[str, Kernel]) -> Callable | None:
    try:
        import cv2
    except ImportError:
        return None
    rb = cv2.BORDER_REPLICATE
    if row.kind == "box":
        n = row.arrays[0].shape[0]
        return lambda im: cv2.boxFilter(im, -1, (n, n), normalize=True, borderType=rb)
    if row.kind == "separable":
        v = row.arrays[0].astype(np.float32)
        return lambda im: cv2.sepFilter2D(im, -1, v, v, borderType=rb)
    if row.kind == "binary":
        se = row.arrays[0]
        return lambda im: cv2.dilate(im, se, borderType=cv2.BORDER_CONSTANT, borderValue=0)
    if row.kind == "chamfer":
        return None  # OpenCV's erode takes flat structuring elements only
    ks = [k.to_array().astype(np.float32) for _, k in sorted(kernels.items())]
    if len(ks) == 1:
        return lambda im: cv2.filter2D(im, -1, ks[0], borderType=rb)
    return lambda im: {n: cv2.filter2D(im, -1, k, borderType=rb)
                       for n, k in zip(sorted(kernels), ks, strict=True)}


def _into_ratio(row: Row, f, kernels: dict[str, Kernel], image: np.ndarray, repeats: int,
                out, out_cv) -> float | None:
    """For a bank: OpenCV's time over kalg's, both writing into outputs allocated once; every
    result equal to the same call's fresh one (`out`, `out_cv`). None for other rows."""
    if row.kind != "bank":
        return None
    (t_in, got), (t_cv_in, got_cv) = _interleaved(_into_outputs(f, kernels, image), image,
                                                  repeats)
    if _agree(got, out) or _agree(got_cv, out_cv):  # the same calls into other memory
        raise VerificationError(f"{row.name}: results written with out=/dst= differ from the "
                                f"same calls' fresh outputs")
    return t_cv_in / t_in


def _into_outputs(f, kernels: dict[str, Kernel], image: np.ndarray) -> list[Callable]:
    """A bank's kalg call and OpenCV's, each writing into outputs allocated once (`out=`,
    `dst=`)."""
    import cv2
    outs = {n: np.empty_like(image) for n in f.outputs}
    dsts = {n: np.empty_like(image) for n in kernels}
    ks = {n: k.to_array().astype(np.float32) for n, k in kernels.items()}

    def opencv(im):
        for n, k in ks.items():
            cv2.filter2D(im, -1, k, dst=dsts[n], borderType=cv2.BORDER_REPLICATE)
        return dsts
    return [lambda im: f(im, out=outs), opencv]


def _scipy(row: Row, kernels: dict[str, Kernel]) -> Callable:
    import scipy.ndimage as nd
    if row.kind == "box":
        n = row.arrays[0].shape[0]
        return lambda im: nd.uniform_filter(im, n, mode="nearest")
    if row.kind == "binary":
        se = row.arrays[0].astype(bool)
        return lambda im: nd.binary_dilation(im, structure=se)
    if row.kind == "chamfer":
        k = kernels["A"].to_array()
        fp, st = np.isfinite(k), -np.where(np.isfinite(k), k, 0)
        return lambda im: nd.grey_erosion(im, footprint=fp, structure=st, mode="nearest")
    if row.kind == "separable":
        v = row.arrays[0]
        return lambda im: nd.correlate1d(nd.correlate1d(im, v, 0, mode="nearest"), v, 1,
                                         mode="nearest")
    ks = {n: k.to_array().astype(np.float32) for n, k in kernels.items()}
    return lambda im: {n: nd.correlate(im, k, mode="nearest") for n, k in ks.items()}


def _time(fn: Callable, image: np.ndarray, repeats: int) -> tuple[float, object]:
    out = fn(image)
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn(image)
        times.append(time.perf_counter() - start)
    return statistics.median(times), out


def _interleaved(fns: list[Callable], image: np.ndarray, repeats: int,
                 ) -> list[tuple[float, object]]:
    """Each function's median time and result, timed in `repeats` rounds that call every
    function once (after one warm-up call each): a load that comes and goes on a shared
    machine falls on all of them alike, so their ratio is the measurement."""
    outs = [fn(image) for fn in fns]
    times: list[list[float]] = [[] for _ in fns]
    for _ in range(repeats):
        for k, fn in enumerate(fns):
            start = time.perf_counter()
            fn(image)
            times[k].append(time.perf_counter() - start)
    return [(statistics.median(t), out) for t, out in zip(times, outs, strict=True)]


def _agree(a, b) -> float:
    """Largest difference between two results (dicts compared per output)."""
    if isinstance(a, dict):
        bs = b if isinstance(b, dict) else {n: b for n in a}
        return max(_agree(a[n], bs[n]) for n in a)
    if isinstance(b, dict):
        b = next(iter(b.values()))
    return float(np.max(np.abs(np.asarray(a, np.float64) - np.asarray(b, np.float64))))


def run_bench(selected: list[str] | None = None, repeats: int = 5,
              progress: Callable[[str], None] = lambda m: None) -> list[dict]:
    """Measure every row (or those whose name contains one of `selected`; a name that matches
    no row is a UsageError listing the rows, before anything is measured)."""
    from kalg.targets.cpu.bench_pipelines import ROWS as PIPELINES
    names = [row.name for row in rows()] + list(PIPELINES)
    if unmatched := [s for s in selected or () if not any(s in name for name in names)]:
        raise UsageError(f"no row of the cpu bench matches {', '.join(map(repr, unmatched))}; "
                         f"the rows are {', '.join(names)}")
    rng = np.random.default_rng(0)
    real = rng.random(SHAPE, dtype=np.float32)
    binary = (rng.random(SHAPE) < 0.05).astype(np.uint8)
    results = []
    mp = SHAPE[0] * SHAPE[1] / 1e6
    with tempfile.TemporaryDirectory() as cache:  # a cold cache: the compile time is real
        old = os.environ.get("KALG_CACHE_DIR")
        os.environ["KALG_CACHE_DIR"] = cache
        try:
            for row in rows():
                if selected and not any(s in row.name for s in selected):
                    continue
                progress(f"bench: {row.name}")
                results.append(_measure(row, real, binary, repeats, mp))
            results += _pipelines(selected, real, repeats, progress)
        finally:
            if old is None:
                os.environ.pop("KALG_CACHE_DIR", None)
            else:
                os.environ["KALG_CACHE_DIR"] = old
    return results


def _pipelines(selected: list[str] | None, image: np.ndarray, repeats: int,
               progress: Callable[[str], None]) -> list[dict]:
    """The pipeline rows (`bench_pipelines`), marked with "pipeline": True; none without
    OpenCV, which they are measured against."""
    from kalg.targets.cpu.bench_pipelines import ROWS, measure
    try:
        import cv2  # noqa: F401
    except ImportError:
        return []
    out = []
    for name in ROWS:
        if selected and not any(s in name for s in selected):
            continue
        progress(f"bench: pipeline {name}")
        out.append(measure(name, image, repeats) | {"pipeline": True})
    return out


def _measure(row: Row, real: np.ndarray, binary: np.ndarray, repeats: int, mp: float) -> dict:
    start = time.perf_counter()
    f = build(row.source, BORDER)
    search = time.perf_counter() - start
    kernels = f.plan.kernels
    image = binary if f.plan.semiring is BOOLEAN else real
    f(image[:64, :64])  # choose the schedule (cold cache: compile, check, time candidates)
    compile_s = sum(f.compile_seconds.values())
    cv = _opencv(row, kernels)
    (t_kalg, out), (t_cv, out_cv) = (_interleaved([f, cv], image, repeats) if cv
                                     else [_time(f, image, repeats), (None, None)])
    t_sp, out_sp = _time(_scipy(row, kernels), image, max(1, repeats // 3))
    ref = out_cv if out_cv is not None else out_sp
    into = _into_ratio(row, f, kernels, image, repeats, out, out_cv) if cv else None
    return {"row": row.name, "vs OpenCV, out=": into, "ops/pixel": f.plan.ops(),
            "search s": round(search, 2),
            "compile s": round(compile_s, 2), "kalg MP/s": mp / t_kalg,
            "OpenCV MP/s": mp / t_cv if t_cv else None, "scipy MP/s": mp / t_sp,
            "vs OpenCV": t_cv / t_kalg if t_cv else None, "vs scipy": t_sp / t_kalg,
            "max diff": _agree(out, ref),
            "schedule": "/".join(sorted({c.name for c in f.choices.values()}))}


COLUMNS = ("row", "ops/pixel", "kalg MP/s", "OpenCV MP/s", "scipy MP/s", "vs OpenCV",
           "vs OpenCV, out=", "vs scipy", "search s", "compile s", "max diff", "schedule")


def format_table(results: list[dict]) -> str:
    return markdown_table(results, COLUMNS)


def main(selected: list[str] | None = None, repeats: int = 5) -> int:
    """Run the cpu bench and print the Markdown table to stdout (progress on stderr)."""
    from kalg.targets.cpu import bench_pipelines
    results = run_bench(selected, repeats, lambda m: print(f"kalg: {m}", file=sys.stderr,
                                                            flush=True))
    kernels = [r for r in results if not r.get("pipeline")]
    pipelines = [r for r in results if r.get("pipeline")]
    sys.stdout.write(f"image {SHAPE[1]}x{SHAPE[0]} float32, border {BORDER}, "
                     f"{os.cpu_count()} cores\n\n")
    if kernels:
        sys.stdout.write(format_table(kernels))
    if pipelines:
        sys.stdout.write("\npipelines (kalg fused, kalg unfused, the OpenCV calls):\n\n"
                         + bench_pipelines.format_table(pipelines))
    return 0


__all__ = ["format_table", "main", "rows", "run_bench"]
