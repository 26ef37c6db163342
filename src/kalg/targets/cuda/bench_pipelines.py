"""Pipelines on a GPU (`scripts/gpu_check.py`): kalg's fused cuda pipelines checked against the
numpy reference and timed against the library calls a GPU user chains.

Two steps, as `kalg.targets.cuda.bench`'s, so that the GPU machine needs neither Halide nor the
search:

* `prepare(path, directory, capability)` (any machine, no GPU): the pipeline's plan
  (`plan_pipeline`: the search), its cuda library linked for the device (`halide.link_cuda`),
  the graph as plain data, and the reference checks: random images with the outputs of
  `dataflow.reference.evaluate` (float64) and their float32 tolerance, saved beside the library
  (`<name>.npz`), so that the check on the GPU is against the very reference every compiled
  pipeline is checked against.
* `check(p, directory)` and `measure(p, directory)` (a CUDA device; numpy, and CuPy and PyTorch
  where installed): the library through ctypes (`library.CudaPipeline`); the chains are the
  graph node by node (`chain`): `cupyx.scipy.ndimage.correlate` for each conv with the border's
  scipy mode and CuPy's elementwise operations, and PyTorch's `F.pad` and `conv2d` (cuDNN,
  TF32 off) with torch's operations where the border has a torch pad mode. Each conv is one
  library call, each pointwise node one kernel: what a user writes without kalg.

Nothing here imports Halide, egglog or lark at module level; `prepare` imports kalg's planner.
"""

from __future__ import annotations

import operator
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from kalg.targets.cpu.borders import SCIPY, Border
from kalg.targets.cuda.bench import ManifestEntry, table_row, time_library, timed
from kalg.targets.table import markdown_table

SHAPE = (2160, 3840)
"""The image the pipelines are timed on (rows, columns): the cuda bench's."""

CHECK_SHAPES = ((131, 97), (31, 17), (5, 3))
"""Random images each pipeline is checked on: several tiles of 32x8 and their tails, less than
a tile, smaller than most kernels."""

TORCH_PAD = {"constant": "constant", "replicate": "replicate", "reflect101": "reflect",
             "wrap": "circular"}
"""kalg's borders as `torch.nn.functional.pad` modes (torch has no half-sample reflection)."""

COMPARE = {"<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge,
           "==": operator.eq, "!=": operator.ne}


@dataclass
class PreparedPipeline(ManifestEntry):
    """A pipeline ready to run on a GPU: its library, its graph as data, its checks."""

    name: str
    library: str
    checks: str
    inputs: list[str]
    outputs: dict[str, int]
    """output name -> node."""
    nodes: list[list]
    """[op, args, param] in dependency order: a conv's param is its kernel as a centred
    north-up array (rows), a const's a float, a compare's its operator, an input's its index."""
    border: tuple[str, float]
    ops: int = 0
    search_s: float = 0.0
    compile_s: float = 0.0
    schedule: str = ""


def graph_nodes(graph: Any) -> list[list]:
    """The live nodes of a `dataflow.graph.Graph` as plain data (`PreparedPipeline.nodes`),
    numbered from 0 in dependency order (outputs renumbered with `renumber`)."""
    live = graph.live()
    index = {i: k for k, i in enumerate(live)}
    nodes = []
    for i in live:
        n = graph.nodes[i]
        param: Any = n.param
        if n.op == "conv":
            param = n.param.to_array(n.param.radius()).tolist()
        elif n.op == "const":
            param = float(n.param)
        elif n.op == "compare":
            param = str(n.param)
        nodes.append([n.op, [index[a] for a in n.args], param])
    return nodes


def prepare(path: Path, directory: Path, capability: tuple[int, int] | None,
            ) -> PreparedPipeline:
    """Plan, link and make the reference checks of the pipeline example at `path`."""
    from kalg.dataflow import reference
    from kalg.targets.cpu import halide
    from kalg.targets.cpu.borders import DEFAULT, parse_border
    from kalg.targets.cpu.pipelines import _tolerance, plan_pipeline
    from kalg.targets.cpu.runner import load_definition

    definition = load_definition(str(path))
    start = time.perf_counter()
    plan = plan_pipeline(definition)
    search = time.perf_counter() - start
    graph = plan.graph
    border = parse_border(graph.border) if graph.border else DEFAULT
    start = time.perf_counter()
    library, _ = halide.link_cuda(plan, border, capability, directory / f"{path.stem}.so")
    compile_s = time.perf_counter() - start
    _, _, schedule = halide.gpu_graph_pipeline(plan, border)
    rng = np.random.default_rng(7)
    arrays: dict[str, np.ndarray] = {}
    for k, shape in enumerate(CHECK_SHAPES):
        images = [rng.uniform(-1, 1, shape).astype(np.float32) for _ in graph.inputs]
        want = reference.evaluate(graph, images, border)
        single = reference.evaluate(graph, images, border, np.float32)
        for c, image in enumerate(images):
            arrays[f"{k}_image_{c}"] = image
        for name in graph.outputs:
            arrays[f"{k}_want_{name}"] = want[name]
            arrays[f"{k}_tol_{name}"] = np.asarray(_tolerance(want[name], single[name]))
    checks = directory / f"{path.stem}.npz"
    np.savez_compressed(checks, **arrays)
    live = {i: k for k, i in enumerate(graph.live())}
    return PreparedPipeline(
        path.stem, library.name, checks.name, list(graph.inputs),
        {name: live[v] for name, v in graph.outputs.items()}, graph_nodes(graph),
        (border.mode, border.value), plan.ops(), round(search, 2), round(compile_s, 2),
        schedule)


# ---------------------------------------------------------------------------- on the GPU
def load(p: PreparedPipeline, directory: Path) -> Any:
    from kalg.targets.cuda.library import CudaPipeline
    return CudaPipeline(directory / p.library, len(p.inputs), len(p.outputs))


def check(p: PreparedPipeline, directory: Path) -> list[str]:
    """Failures of one pipeline on the device (empty: every output within the reference's
    float32 tolerance on every check image, and, with CuPy, the same bits in place)."""
    pipeline = load(p, directory)
    data = np.load(directory / p.checks)
    failures = []
    for k, shape in enumerate(CHECK_SHAPES):
        images = [np.ascontiguousarray(data[f"{k}_image_{c}"]) for c in range(len(p.inputs))]
        outs = [np.empty_like(images[0]) for _ in p.outputs]
        pipeline.run(images, outs)
        for name, got in zip(p.outputs, outs, strict=True):
            diff = np.abs(got.astype(np.float64) - data[f"{k}_want_{name}"])
            tol = float(data[f"{k}_tol_{name}"])
            if not np.all(diff <= tol):
                failures.append(f"{p.name} {name} {shape}: max diff {float(np.max(diff)):.2e} "
                                f"> {tol:.1e} from the reference")
        failures += check_in_place(p, pipeline, images, outs)
    return failures


def check_in_place(p: Any, pipeline: Any, images: list, outs: list) -> list[str]:
    """With CuPy: `images` as device arrays, used without a copy by `pipeline`, give the bits
    of `outs` (the numpy path's outputs); the differences, each a line (`p`: a prepared
    pipeline or example, its name and outputs)."""
    try:
        import cupy as cp
    except ImportError:
        return []
    xs = [cp.asarray(a) for a in images]
    ys = [cp.empty_like(xs[0]) for _ in p.outputs]
    ptr = [(a.data.ptr, a.shape, np.dtype(a.dtype)) for a in [*xs, *ys]]
    pipeline.run_device(ptr[:len(xs)], ptr[len(xs):])
    return [f"{p.name} {name}: CuPy in place differs from the numpy path"
            for name, y, o in zip(p.outputs, ys, outs, strict=True)
            if not np.array_equal(cp.asnumpy(y), o)]


def chain(p: PreparedPipeline, images: list, library: dict) -> dict[str, Any]:
    """The graph node by node with `library`'s calls (`numpy_library`, `cupy_library`,
    `torch_library`): a conv is `library['conv'](image, kernel)`, a pointwise node the
    library's operation, a constant a Python float."""
    values: list[Any] = []
    for op, args, param in p.nodes:
        a = [values[i] for i in args]
        if op == "input":
            values.append(images[param])
        elif op == "const":
            values.append(param)
        elif op == "conv":
            values.append(library["conv"](a[0], param))
        elif op == "compare":
            values.append(library["float"](COMPARE[param](a[0], a[1])))
        else:
            values.append(library[op](*a))
    return {name: values[v] for name, v in p.outputs.items()}


def _elementwise(xp: Any) -> dict:
    """The pointwise nodes with numpy's or CuPy's functions (the reference's definitions)."""
    return {"add": operator.add, "sub": operator.sub, "mul": operator.mul,
            "div": operator.truediv, "neg": operator.neg, "abs": xp.abs,
            "sqrt": lambda a: xp.sqrt(xp.maximum(a, 0)), "min": xp.minimum, "max": xp.maximum,
            "select": lambda m, a, b: xp.where(m != 0, a, b),
            "clamp": lambda a, lo, hi: xp.minimum(xp.maximum(a, lo), hi)}


def numpy_library(border: Border, shape: tuple[int, ...]) -> dict:
    """numpy and scipy.ndimage in float64 on images of `shape`: the CPU's version of
    `cupy_library` (tested against kalg's reference without a GPU)."""
    import scipy.ndimage as nd
    kw = border.scipy_kwargs()
    return {**_elementwise(np), "float": lambda m: m.astype(np.float64),
            "conv": lambda x, k: nd.correlate(np.broadcast_to(x, shape).astype(np.float64),
                                              np.asarray(k, np.float64), **kw)}


def cupy_library(border: Border) -> dict:
    """CuPy's elementwise operations and `cupyx.scipy.ndimage.correlate` (float32)."""
    import cupy as cp
    import cupyx.scipy.ndimage as nd
    kw = {"mode": SCIPY[border.mode], "cval": border.value}
    return {**_elementwise(cp), "float": lambda m: m.astype(cp.float32),
            "conv": lambda x, k: nd.correlate(x, cp.asarray(k, cp.float32), **kw)}


def torch_library(border: Border) -> dict | None:
    """PyTorch on CUDA: `F.pad` with the border's mode and `conv2d` (cuDNN, float32, TF32
    off) for convs, torch's operations for the rest; None without torch, a device, or a torch
    pad mode for the border."""
    try:
        import torch
        import torch.nn.functional as F
    except ImportError:
        return None
    if not torch.cuda.is_available() or border.mode not in TORCH_PAD:
        return None
    torch.backends.cudnn.benchmark = True
    torch.backends.cudnn.allow_tf32 = False
    weights: dict[int, Any] = {}

    def conv(x: Any, k: list) -> Any:
        if id(k) not in weights:
            weights[id(k)] = torch.tensor(k, dtype=torch.float32, device="cuda")[None, None]
        w = weights[id(k)]
        r = w.shape[-1] // 2
        pad = (F.pad(x[None, None], (r, r, r, r), mode="constant", value=border.value)
               if border.mode == "constant" else
               F.pad(x[None, None], (r, r, r, r), mode=TORCH_PAD[border.mode]))
        return F.conv2d(pad, w)[0, 0]
    return {"add": operator.add, "sub": operator.sub, "mul": operator.mul,
            "div": operator.truediv, "neg": operator.neg, "abs": torch.abs,
            "sqrt": lambda a: torch.sqrt(torch.clamp(a, min=0)),
            "min": lambda a, b: torch.minimum(*_tensors(torch, a, b)),
            "max": lambda a, b: torch.maximum(*_tensors(torch, a, b)),
            "select": lambda m, a, b: torch.where(m != 0, *_tensors(torch, a, b)),
            "clamp": lambda a, lo, hi: torch.clamp(a, lo, hi),
            "float": lambda m: m.float(), "conv": conv}


def _tensors(torch: Any, *values: Any) -> list:
    """Python floats (constants) as tensors where torch's binary functions need them."""
    like = next(v for v in values if not isinstance(v, float))
    return [torch.full_like(like, v) if isinstance(v, float) else v for v in values]


def numpy_reference(p: PreparedPipeline, images: list[np.ndarray]) -> dict[str, np.ndarray]:
    """`chain` with `numpy_library`, every output of the images' shape, in float64."""
    shape = np.shape(images[0])
    border = Border(p.border[0], float(p.border[1]))
    out = chain(p, [np.asarray(i, np.float64) for i in images], numpy_library(border, shape))
    return {name: np.broadcast_to(v, shape).astype(np.float64) for name, v in out.items()}


def measure(p: PreparedPipeline, directory: Path, repeats: int = 10,
            shape: tuple[int, int] = SHAPE) -> dict:
    """One pipeline on CUDA device 0: kalg's fused pipeline (data on the device), the CuPy
    chain and the PyTorch chain; throughput, first calls, and the largest difference from
    the CuPy chain (else PyTorch's)."""
    rng = np.random.default_rng(0)
    images = [rng.random(shape, dtype=np.float32) for _ in p.inputs]
    mp = shape[0] * shape[1] / 1e6
    kalg = time_library(load(p, directory), images, list(p.outputs), repeats)
    border = Border(p.border[0], float(p.border[1]))
    return table_row(p, mp, kalg, {
        "CuPy": timed(_chain_call(p, images, "cupy", border), repeats),
        "PyTorch": timed(_chain_call(p, images, "torch", border), repeats)})


def _chain_call(p: PreparedPipeline, images: list[np.ndarray], name: str, border: Border,
                ) -> tuple | None:
    """The chain with CuPy's or PyTorch's calls on device arrays as (run, sync, fetch) for
    `bench.timed` (fetch: the outputs as float64 numpy), or None where the library (or a pad
    mode for the border) is missing."""
    if name == "cupy":
        try:
            import cupy as xp
        except ImportError:
            return None
        library: dict | None = cupy_library(border)
        xs = [xp.asarray(a) for a in images]

        def sync() -> None:
            xp.cuda.Device().synchronize()

        def host(a: Any) -> np.ndarray:
            return xp.asnumpy(xp.broadcast_to(a, xs[0].shape)).astype(np.float64)
    else:
        library = torch_library(border)
        if library is None:
            return None
        import torch
        xs = [torch.from_numpy(a).cuda() for a in images]
        sync = torch.cuda.synchronize

        def host(a: Any) -> np.ndarray:
            return np.broadcast_to(a.cpu().numpy(), images[0].shape).astype(np.float64)
    return (lambda: chain(p, xs, library), sync,
            lambda out: {k: host(v) for k, v in out.items()})


COLUMNS = ("row", "ops/pixel", "kalg MP/s", "CuPy MP/s", "PyTorch MP/s", "vs CuPy",
           "vs PyTorch", "search s", "compile s", "first call s", "CuPy first s",
           "PyTorch first s", "max diff")


def format_table(results: list[dict]) -> str:
    return markdown_table(results, COLUMNS)


__all__ = ["CHECK_SHAPES", "COLUMNS", "PreparedPipeline", "chain", "check", "check_in_place",
           "cupy_library",
           "format_table", "graph_nodes", "measure", "numpy_library", "numpy_reference",
           "prepare", "torch_library"]
