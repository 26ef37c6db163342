"""`kalg bench --target cuda`: throughput of kalg's cuda pipelines against CuPy
(`cupyx.scipy.ndimage`) and PyTorch (`conv2d` with the same weights: cuDNN), with the one-time
costs in columns of their own.

One 3840x2160 float32 image, border constant 0 (what `conv2d`'s padding reads, so all three
compute the same values and `max diff` compares them everywhere). The rows are the cpu bench's
(`kalg.targets.cpu.bench.rows`: boxes, binomials, the Sobel and Kirsch banks, LoG, a random
5x5, min-plus chamfer, binary dilations) and CNN layers: constant 3x3 weights over several
input channels, each output the sum over the inputs (one fused kalg pipeline against one
`conv2d` call, or one `correlate` call per input and output with CuPy).

Two steps, so that the GPU machine needs neither Halide nor the search:

* `prepare(row, directory)` (any machine, no GPU): the search (`search s`), the cuda library
  linked for the device (`compile s`), and the kernels as plain data (`Prepared`).
* `measure(prepared, ...)` (a CUDA device; numpy, and CuPy and PyTorch where installed): the
  library loaded through ctypes (`library.CudaPipeline`), its first call (module load and PTX
  JIT: `first call s`) and the median of `repeats` timed calls with the image and outputs on
  the device; the same for CuPy's and PyTorch's natural calls (their first calls compile or
  autotune). cuDNN runs in float32 (TF32 off) with `cudnn.benchmark` on.

`scripts/gpu_check.sh` runs the two steps on two machines; `main` runs both here.
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from kalg.targets.cpu.borders import Border
from kalg.targets.table import markdown_table, median_seconds

SHAPE = (2160, 3840)
BORDER = Border("constant")
LAYERS = ((4, 4), (3, 8))
"""CNN layers measured: (input channels, output channels), 3x3 integer weights over 16 (a
first layer, RGB to 8 maps, and a 4 to 4 one; an 8 to 8 layer took 4 minutes to search and 4.5
to compile here, for 904 ops/pixel, and runs each value as a pass over the image)."""


class ManifestEntry:
    """A prepared row as it is written to and read from manifest.json (a dataclass with a
    `border` pair, which JSON turns into a list)."""

    def to_json(self) -> dict:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict) -> Any:
        data = dict(data)
        data["border"] = tuple(data["border"])
        return cls(**data)


@dataclass
class Prepared(ManifestEntry):
    """A row (or an example) ready to run on a GPU: the library and the kernels as data."""

    name: str
    kind: str
    library: str
    inputs: list[str]
    outputs: list[str]
    semiring: str
    kernels: dict[str, dict[str, list]]
    """output -> input ('' for one input) -> the kernel as a centred north-up array (rows)."""
    border: tuple[str, float] = ("constant", 0.0)
    ops: int = 0
    search_s: float = 0.0
    compile_s: float = 0.0
    schedule: str = ""
    extra: dict[str, Any] = field(default_factory=dict)
    """What a library's natural call needs: 'size' (box), 'vector' (separable)."""


def layer_row(inputs: int, outputs: int, seed: int = 11) -> Any:
    """A constant 3x3 layer over `inputs` channels to `outputs` channels, integer weights in
    -4..4 over 16 (never a zero kernel), as a kalg filter over several inputs."""
    from kalg.targets.cpu.bench import Row, _matrix
    regs = [chr(ord("A") + i) for i in range(inputs + outputs)]
    ins, outs = regs[:inputs], regs[inputs:]
    rng = np.random.default_rng(seed)
    weights = rng.integers(-4, 5, (outputs, inputs, 3, 3))
    weights[:, :, 1, 1] += (np.abs(weights).sum(axis=(2, 3)) == 0)  # no zero kernel
    terms = [" + ".join(f"{_matrix(weights[o, c])} / 16 * {ins[c]}" for c in range(inputs))
             for o in range(outputs)]
    body = ", ".join(f"{r}: {t}" for r, t in zip(outs, terms, strict=True))
    source = (f"target scamp5_wide {{ registers: A..{regs[-1]}, input: {' '.join(ins)} }}\n"
              f"filter layer = [{body}]")
    return Row(f"CNN layer {inputs}->{outputs} 3x3", source, "layer", (weights / 16,))


def rows() -> list[Any]:
    """The benchmark rows, in order: the cpu bench's, then the CNN layers."""
    from kalg.targets.cpu.bench import rows as cpu_rows
    return cpu_rows() + [layer_row(i, o) for i, o in LAYERS]


def prepare(name: str, source: str, kind: str, directory: Path,
            capability: tuple[int, int] | None, border: Border | None = BORDER,
            arrays: tuple = ()) -> Prepared:
    """Search and link `source` (.kalg text or a path) into `directory` for a device of
    `capability` (None: any), with `border` (None: the definition's, else replicate)."""
    from kalg.targets.cpu import halide
    from kalg.targets.cpu.borders import DEFAULT, parse_border
    from kalg.targets.cpu.runner import load_definition, plan_definition

    definition = load_definition(source)
    start = time.perf_counter()
    plan = plan_definition(definition)
    search = time.perf_counter() - start
    if border is None:
        border = parse_border(definition.border) if definition.border else DEFAULT
    start = time.perf_counter()
    slug = "".join(ch if ch.isalnum() else "_" for ch in name)
    path, _ = halide.link_cuda(plan, border, capability, directory / f"{slug}.so")
    compile_s = time.perf_counter() - start
    _, _, schedule = halide.gpu_pipeline(plan, border)
    parts = plan.channels or {out: {"": k} for out, k in plan.kernels.items()}
    radius = max(k.radius() for ins in parts.values() for k in ins.values())
    kernels = {out: {c: k.to_array(radius).tolist() for c, k in ins.items()}
               for out, ins in parts.items()}
    extra: dict[str, Any] = {}
    if kind == "box":
        extra["size"] = int(arrays[0].shape[0])
    elif kind == "separable":
        extra["vector"] = [float(v) for v in arrays[0]]
    return Prepared(name, kind, path.name, list(plan.inputs), list(plan.outputs),
                    plan.semiring.name, kernels, (border.mode, border.value), plan.ops(),
                    round(search, 2), round(compile_s, 2), schedule, extra)


# ---------------------------------------------------------------------------- on the GPU
def images_for(p: Prepared, shape: tuple[int, int], seed: int = 0) -> list[np.ndarray]:
    """Random C-contiguous input planes (float32 in [0, 1), uint8 0/1 for Boolean)."""
    rng = np.random.default_rng(seed)
    if p.semiring == "boolean":
        return [(rng.random(shape) < 0.05).astype(np.uint8) for _ in p.inputs or [""]]
    return [rng.random(shape, dtype=np.float32) for _ in p.inputs or [""]]


def load(p: Prepared, directory: Path) -> Any:
    from kalg.targets.cuda.library import CudaPipeline
    return CudaPipeline(directory / p.library, len(p.inputs or [""]), len(p.outputs))


def measure(p: Prepared, directory: Path, repeats: int = 10,
            shape: tuple[int, int] = SHAPE) -> dict:
    """One row on CUDA device 0 (see the module docstring)."""
    images = images_for(p, shape)
    mp = shape[0] * shape[1] / 1e6
    kalg = time_library(load(p, directory), images, p.outputs, repeats)
    return table_row(p, mp, kalg, {"cuDNN": timed(_torch_call(p, images), repeats),
                                   "CuPy": timed(_cupy_call(p, images), repeats)})


def table_row(p: Any, mp: float, kalg: tuple, libraries: dict[str, tuple]) -> dict:
    """A bench row: kalg's (median s, first call s, outputs) against each library's `timed`
    triple (Nones where it did not run), the difference taken against the first that ran."""
    t_kalg, first, got = kalg
    ran = [out for _, _, out in libraries.values() if out is not None]
    row = {"row": p.name, "ops/pixel": p.ops, "kalg MP/s": mp / t_kalg}
    row |= {f"{n} MP/s": mp / t if t else None for n, (t, _, _) in libraries.items()}
    row |= {f"vs {n}": t / t_kalg if t else None for n, (t, _, _) in libraries.items()}
    row |= {"search s": p.search_s, "compile s": p.compile_s, "first call s": first}
    row |= {f"{n} first s": f for n, (_, f, _) in libraries.items()}
    return row | {"max diff": largest_difference(got, ran[0] if ran else None),
                  "schedule": p.schedule}


def time_library(pipeline: Any, images: list[np.ndarray], outputs: list[str], repeats: int,
                 ) -> tuple[float, float, dict[str, np.ndarray]]:
    """A linked kalg library (`library.CudaPipeline`) with its data on the device: (median
    seconds, first call seconds with the copies, module load and PTX JIT, outputs by name)."""
    outs = [np.empty_like(images[0]) for _ in outputs]
    start = time.perf_counter()
    resident = pipeline.resident(images, outs)
    first = time.perf_counter() - start
    seconds = median_seconds(resident.run, repeats)
    got = dict(zip(outputs, resident.fetch(), strict=True))
    resident.free()
    return seconds, first, got


def largest_difference(got: dict[str, np.ndarray], ref: dict | None) -> float | None:
    """The largest |kalg - library| over every output, or None without a library."""
    if ref is None:
        return None
    return max(float(np.max(np.abs(got[o].astype(np.float64) - ref[o]))) for o in got)


def timed(call: tuple | None, repeats: int) -> tuple[float | None, float | None, dict | None]:
    """(median seconds, first call seconds, outputs as numpy) of (run, sync, fetch), or Nones."""
    if call is None:
        return None, None, None
    run, sync, fetch = call
    start = time.perf_counter()
    out = run()
    sync()
    first = time.perf_counter() - start

    def timed() -> None:
        run()
        sync()
    return median_seconds(timed, repeats), first, fetch(out)


def _weights(p: Prepared) -> np.ndarray:
    """The real kernels as conv2d weights [outputs, inputs, kh, kw] (zero where an output
    does not read an input)."""
    keys = p.inputs or [""]
    size = len(next(iter(next(iter(p.kernels.values())).values())))
    w = np.zeros((len(p.outputs), len(keys), size, size), np.float32)
    for o, out in enumerate(p.outputs):
        for c, key in enumerate(keys):
            if key in p.kernels[out]:
                w[o, c] = np.asarray(p.kernels[out][key], np.float32)
    return w


def _torch_call(p: Prepared, images: list[np.ndarray]) -> tuple | None:
    """PyTorch's conv2d with the plan's weights (real kernels only), or None."""
    if p.semiring != "real":
        return None
    try:
        import torch
        import torch.nn.functional as F
    except ImportError:
        return None
    if not torch.cuda.is_available():
        return None
    torch.backends.cudnn.benchmark = True
    torch.backends.cudnn.allow_tf32 = False  # float32, as kalg computes
    w = torch.from_numpy(_weights(p)).cuda()
    x = torch.from_numpy(np.stack(images))[None].cuda()
    pad = w.shape[-1] // 2

    def fetch(out: Any) -> dict:
        a = out[0].cpu().numpy().astype(np.float64)
        return {name: a[o] for o, name in enumerate(p.outputs)}
    return (lambda: F.conv2d(x, w, padding=pad)), torch.cuda.synchronize, fetch


def _cupy_call(p: Prepared, images: list[np.ndarray]) -> tuple | None:
    """cupyx.scipy.ndimage's natural call for the row (`_cupy_run`) as (run, sync, fetch), or
    None without CuPy."""
    try:
        import cupy as cp
        import cupyx.scipy.ndimage as nd
    except ImportError:
        return None
    xs = [cp.asarray(a if p.semiring != "boolean" else a.astype(bool)) for a in images]
    run = _cupy_run(p, xs, cp, nd)
    if run is None:
        return None

    def sync() -> None:
        cp.cuda.Device().synchronize()

    def fetch(out: dict) -> dict:
        return {name: cp.asnumpy(a).astype(np.float64) for name, a in out.items()}
    return run, sync, fetch


def _cupy_run(p: Prepared, xs: list, cp: Any, nd: Any) -> Callable[[], dict] | None:
    """As `kalg.targets.cpu.bench._scipy`: uniform_filter for boxes, correlate1d twice for
    separable kernels, binary_dilation and grey_erosion for the semirings, else correlate per
    output and input (summed over the inputs)."""
    kw, out = {"mode": "constant", "cval": 0.0}, p.outputs[0]
    if p.kind == "box":
        return lambda: {out: nd.uniform_filter(xs[0], p.extra["size"], **kw)}
    if p.kind == "separable":
        v = cp.asarray(p.extra["vector"], cp.float32)
        return lambda: {out: nd.correlate1d(nd.correlate1d(xs[0], v, 0, **kw), v, 1, **kw)}
    if p.semiring == "boolean":
        se = cp.asarray(np.asarray(p.kernels[out][""])[::-1, ::-1] != 0)
        return lambda: {out: nd.binary_dilation(xs[0], structure=se)}
    if p.semiring == "minplus":
        k = np.asarray(p.kernels[out][""], np.float64)
        fp, st = cp.asarray(np.isfinite(k)), cp.asarray(-np.where(np.isfinite(k), k, 0))
        return lambda: {out: nd.grey_erosion(xs[0], footprint=fp, structure=st, **kw)}
    if p.semiring != "real":
        return None
    ws = _weights(p)
    pairs = [[(c, cp.asarray(ws[o, c])) for c in range(ws.shape[1]) if ws[o, c].any()]
             for o in range(ws.shape[0])]
    return lambda: {name: sum(nd.correlate(xs[c], k, **kw) for c, k in pairs[o])
                    for o, name in enumerate(p.outputs)}


COLUMNS = ("row", "ops/pixel", "kalg MP/s", "cuDNN MP/s", "CuPy MP/s", "vs cuDNN", "vs CuPy",
           "search s", "compile s", "first call s", "cuDNN first s", "CuPy first s", "max diff")


def format_table(results: list[dict]) -> str:
    """The Markdown table: throughput, then the one-time costs (search and compile: kalg's,
    on the machine that prepared the libraries; first calls: module load, PTX JIT, autotuning
    on the GPU)."""
    return markdown_table(results, COLUMNS)


def libraries() -> str:
    """Which comparison libraries this machine has (a missing one's columns read n/a)."""
    found = []
    for name in ("torch", "cupy"):
        try:
            module = __import__(name)
            found.append(f"{name} {module.__version__}")
        except ImportError:
            found.append(f"{name} not installed (its columns are n/a)")
    return ", ".join(found)


def main(selected: list[str] | None = None, repeats: int = 10) -> int:
    """Prepare and measure every row (or those whose name contains one of `selected`) here:
    NoCudaDevice (exit 1) where there is no CUDA device. The table goes to stdout."""
    from kalg.diagnostics import UsageError
    from kalg.targets.cuda.device import require

    found = require()
    chosen = [r for r in rows() if not selected or any(s in r.name for s in selected)]
    if selected and not chosen:
        raise UsageError(f"no row of the cuda bench matches {', '.join(map(repr, selected))}; "
                         f"the rows are {', '.join(r.name for r in rows())}")
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        for row in chosen:
            print(f"kalg: bench: {row.name}", file=sys.stderr, flush=True)
            p = prepare(row.name, row.source, row.kind, Path(tmp), found.capability,
                        BORDER, row.arrays)
            results.append(measure(p, Path(tmp), repeats))
    sys.stdout.write(header(str(found)) + format_table(results))
    return 0


def header(device: str) -> str:
    return (f"image {SHAPE[1]}x{SHAPE[0]} float32, border {BORDER}, {device}; "
            f"{libraries()}\n\n")


def save_manifest(prepared: list[Prepared], path: Path) -> None:
    path.write_text(json.dumps([p.to_json() for p in prepared], indent=1), encoding="utf-8")


def load_manifest(path: Path) -> list[Prepared]:
    return [Prepared.from_json(d) for d in json.loads(path.read_text(encoding="utf-8"))]


__all__ = ["ManifestEntry", "Prepared", "format_table", "largest_difference", "layer_row",
           "load_manifest", "main", "measure", "prepare", "rows", "save_manifest", "table_row",
           "time_library", "timed"]
