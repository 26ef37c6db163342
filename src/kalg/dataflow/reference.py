"""The reference evaluator: a pipeline graph on numpy images, node by node.

Every compiled pipeline is checked against it before its first result. It computes in float64
by default (or in any numpy float type: float32 evaluation measures how far float32 rounding
alone can move a result, which is the tolerance of the check). A `conv` extends its operand by
the border (`borders.Border`) and correlates, as OpenCV's filter2D does with that border.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from kalg.algebra.kernel import Kernel
from kalg.dataflow.graph import Graph, compare
from kalg.diagnostics import KalgError
from kalg.targets.cpu.borders import Border, parse_border


def evaluate(graph: Graph, images: Sequence[np.ndarray], border: Border | None = None,
             dtype: type = np.float64) -> dict[str, np.ndarray]:
    """Every output of `graph` (name → array of the images' shape) for the input `images`;
    `border` None: the graph's own."""
    border = parse_border(graph.border) if border is None else border
    shape = np.shape(images[0])
    values: dict[int, np.ndarray] = {}
    bodies = {f: graph.body(f) for f in graph.fixpoints()}
    inside = {i for body in bodies.values() for i in body}
    for i in graph.live():
        n = graph.nodes[i]
        if i in inside or n.op == "loop":
            continue  # evaluated by its fixpoint, once per iteration
        if n.op == "fixpoint":
            values[i] = _fixpoint(graph, i, bodies[i], values, images, border, shape, dtype)
            continue
        args = [values[a] for a in n.args]
        values[i] = _node(n.op, n.param, args, images, border, shape, dtype)
    return {name: np.broadcast_to(values[v], shape).astype(dtype)
            for name, v in graph.outputs.items()}


def _fixpoint(graph: Graph, i: int, body: list[int], values: dict, images, border: Border,
              shape: tuple, dtype: type) -> np.ndarray:
    """Iterate the body from the initial value until an iterate equals the one before (NaN
    equal to NaN); KalgError when `bound` iterations leave it changing."""
    n = graph.nodes[i]
    loop, bound = n.param
    value = np.broadcast_to(values[n.args[0]], shape).astype(dtype)
    for _ in range(bound):
        values[loop] = value
        for j in body:
            m = graph.nodes[j]
            values[j] = _node(m.op, m.param, [values[a] for a in m.args], images, border, shape,
                              dtype)
        new = np.broadcast_to(values[n.args[1]], shape).astype(dtype)
        if np.array_equal(new, value, equal_nan=True):
            return value
        value = new
    raise fixpoint_error(n, bound)


def fixpoint_error(n, bound: int) -> KalgError:
    """The error of a fixpoint that still changes after `bound` iterations."""
    stage = f"stage {n.name!r}" if n.name else "a fixpoint"
    return KalgError(f"{stage} still changes after {bound} iterations (its bound): no fixpoint "
                     "within the bound on this image", n.span,
                     hint="raise the bound (fixpoint's third argument)")


def _node(op: str, param: object, args: list[np.ndarray], images: Sequence[np.ndarray],
          border: Border, shape: tuple, dtype: type) -> np.ndarray:
    if op == "input":
        return np.asarray(images[param], dtype=dtype)
    if op == "const":
        return dtype(float(param))
    if op == "conv":
        return correlate(param, np.broadcast_to(args[0], shape), border, dtype)
    if op == "shift":
        return shifted(np.broadcast_to(args[0], shape), *param)
    if op == "compare":
        return compare(str(param), args[0], args[1]).astype(dtype)
    if op == "select":
        return np.where(args[0] != 0, args[1], args[2]).astype(dtype)
    return _POINTWISE[op](*args)


_POINTWISE = {
    "add": np.add,
    "sub": np.subtract,
    "mul": np.multiply,
    "div": np.divide,
    "neg": np.negative,
    "abs": np.abs,
    "sqrt": lambda a: np.sqrt(np.maximum(a, 0)),  # of max(a, 0): never NaN
    "min": np.minimum,
    "max": np.maximum,
    "clamp": lambda a, lo, hi: np.minimum(np.maximum(a, lo), hi),
}


def shifted(image: np.ndarray, dx: int, dy: int) -> np.ndarray:
    """`image` read at p + (dx, dy) (dx columns east, dy rows north), 0 outside it."""
    h, w = image.shape
    out = np.zeros_like(image)
    rows = slice(max(0, dy), min(h, h + dy))
    cols = slice(max(0, -dx), min(w, w - dx))
    out[rows, cols] = image[max(0, -dy):min(h, h - dy), max(0, dx):min(w, w + dx)]
    return out


def correlate(kernel: Kernel, image: np.ndarray, border: Border,
              dtype: type = np.float64) -> np.ndarray:
    """`kernel` correlated with `image` extended by `border`, in `dtype`."""
    r = kernel.radius()
    h, w = image.shape
    padded = border.pad(np.asarray(image, dtype=dtype), r, r, r, r)
    out = np.zeros((h, w), dtype=dtype)
    for (x, y), c in kernel.entries:
        out += padded[r - y: r - y + h, r + x: r + x + w] * dtype(float(c))
    return out


__all__ = ["correlate", "evaluate", "fixpoint_error", "shifted"]
