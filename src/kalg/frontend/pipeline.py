"""A `pipeline` block → its `dataflow.Graph`, every mistake a located error.

Inside a pipeline every expression is an image: `+ - *` act pixel by pixel, a number is a
constant image, `a / c` divides by a constant, `a ^ n` is the n-fold pixel product. The one
exception is the first argument of `conv(kernel, image)`: kernel algebra, evaluated by
`kalg.frontend.evaluate` (there `*` composes kernels), so a convolution and a product of images
cannot be confused. A kernel's name outside `conv` is an error that says so.

Stages are defined in order: a name used before its `let` is an error (a cycle is reported as
one), as are a stage named twice, an unknown function, a wrong number of arguments and a kernel
that is not real.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from kalg.algebra.kernel import REAL, Kernel
from kalg.dataflow.graph import Builder, Graph
from kalg.diagnostics import KalgSemanticError, Span
from kalg.frontend import ast
from kalg.frontend.evaluate import FUNCTION_NAMES, MONOMIALS, Scope, evaluate

IMAGE_FUNCTIONS = {"conv": 2, "abs": 1, "sqrt": 1, "min": 2, "max": 2, "select": 3, "clamp": 3,
                   "shift": 3, "fixpoint": 3}
"""The functions of images and how many arguments each takes."""

MAX_POWER = 8
"""Largest n in `image ^ n` (a chain of n - 1 products)."""


@dataclass
class _Context:
    kernels: Mapping[str, Kernel]
    stages: dict[str, int]
    later: dict[str, ast.PipelineStage]
    builder: Builder
    filters: frozenset[str] = frozenset()
    current: str = ""
    uses: dict[str, set[str]] = field(default_factory=dict)


def define_pipeline(statement: ast.PipelineDef, kernels: Mapping[str, Kernel],
                    filters: frozenset[str], border: str | None) -> Graph:
    """The graph of `statement`; `kernels` are the file's earlier kernel definitions."""
    builder = Builder()
    stages: dict[str, int] = {}
    for index, (name, span) in enumerate(statement.parameters):
        _new_name(name, span, stages, kernels, statement)
        stages[name] = builder.add("input", (), index, name, span)
    later = {s.name: s for s in statement.stages}
    context = _Context(kernels, stages, later, builder, filters)
    outputs: dict[str, int] = {}
    for stage in statement.stages:
        _new_name(stage.name, stage.span, stages, kernels, statement)
        context.current = stage.name
        value = _image(stage.expr, context)
        stages[stage.name] = value
        later.pop(stage.name)
        if stage.kind == "out":
            outputs[stage.name] = value
    if not outputs:
        raise KalgSemanticError(f"pipeline {statement.name!r} has no 'out NAME = ...' stage: "
                                "nothing to compute", statement.name_span)
    for name, v in outputs.items():
        if builder.constant(v) is not None:
            stage = next(s for s in statement.stages if s.name == name)
            raise KalgSemanticError(f"output {name!r} is a constant, not an image",
                                    stage.span)
    return Graph(statement.name, tuple(n for n, _ in statement.parameters),
                 tuple(builder.nodes), outputs, border or "replicate")


def _new_name(name: str, span: Span, stages: dict[str, int], kernels: Mapping[str, Kernel],
              statement: ast.PipelineDef) -> None:
    if name in stages:
        raise KalgSemanticError(f"{name!r} is already a stage or input of pipeline "
                                f"{statement.name!r}", span)
    if name in kernels or name in MONOMIALS:
        raise KalgSemanticError(f"{name!r} is a kernel: a stage names an image, so choose "
                                "another name", span)
    if name in IMAGE_FUNCTIONS:
        raise KalgSemanticError(f"{name!r} is a function: choose another name", span)


# ----------------------------------------------------------------------- image expressions
def _image(expr: ast.Expr, c: _Context) -> int:
    return _IMAGE[type(expr)](expr, c)


def _number(node: ast.Number, c: _Context) -> int:
    return c.builder.const(node.value)


def _name(node: ast.Name, c: _Context) -> int:
    if (v := c.stages.get(node.name)) is not None:
        return v
    if node.name in c.kernels or node.name in MONOMIALS:
        raise KalgSemanticError(
            f"{node.name!r} is a kernel, not an image: apply it with conv({node.name}, IMAGE) "
            "('*' between images multiplies pixels; kernels compose only inside conv's first "
            "argument)", node.span)
    if node.name in c.filters:
        raise KalgSemanticError(f"{node.name!r} is a filter: a pipeline applies kernels, one "
                                "per conv(kernel, image)", node.span)
    if (stage := c.later.get(node.name)) is not None:
        raise _before_definition(node, stage, c)
    close = difflib.get_close_matches(node.name, list(c.stages), n=1)
    hint = (f"did you mean {close[0]!r}? " if close else "") + \
        f"the images here are: {', '.join(c.stages)}"
    raise KalgSemanticError(f"unknown image {node.name!r}", node.span, hint=hint)


def _before_definition(node: ast.Name, stage: ast.PipelineStage, c: _Context,
                       ) -> KalgSemanticError:
    """A stage used above its definition: a cycle if that definition needs the current one."""
    path = _path(stage.name, c.current, c.later, set())
    if path is not None:
        cycle = " -> ".join([c.current, *path])
        return KalgSemanticError(f"a cycle: {cycle} (a pipeline's stages form no loop)",
                                 node.span)
    return KalgSemanticError(
        f"{node.name!r} is used before its definition on line {stage.span.line}: stages are "
        "defined in order, so move it above", node.span)


def _path(start: str, goal: str, later: Mapping[str, ast.PipelineStage],
          seen: set[str]) -> list[str] | None:
    """Stage names from `start` to `goal` through the names later stages read, if any."""
    if start == goal:
        return [start]
    if start in seen or start not in later:
        return None
    seen.add(start)
    for name in sorted(_names(later[start].expr)):
        if (rest := _path(name, goal, later, seen)) is not None:
            return [start, *rest]
    return None


def _names(expr: ast.Expr) -> set[str]:
    if isinstance(expr, ast.Name):
        return {expr.name}
    children = [getattr(expr, f) for f in ("left", "right", "operand", "base")
                if hasattr(expr, f)]
    children += list(getattr(expr, "arguments", ()))
    return set().union(*(_names(e) for e in children)) if children else set()


def _binary(op: str) -> Callable[[ast.Expr, _Context], int]:
    def lower(node, c: _Context) -> int:
        a, b = _image(node.left, c), _image(node.right, c)
        return c.builder.add(op, (a, b), name=c.current, span=node.span)
    return lower


def _div(node: ast.Div, c: _Context) -> int:
    a, b = _image(node.left, c), _image(node.right, c)
    if (value := c.builder.constant(b)) is None:
        raise KalgSemanticError("a pipeline divides only by a constant (a number), not by an "
                                "image", node.span)
    if value == 0:
        raise KalgSemanticError("division by zero", node.span)
    return c.builder.add("div", (a, b), name=c.current, span=node.span)


def _neg(node: ast.Neg, c: _Context) -> int:
    return c.builder.add("neg", (_image(node.operand, c),), name=c.current, span=node.span)


def _pow(node: ast.Pow, c: _Context) -> int:
    if not 1 <= node.exponent <= MAX_POWER:
        raise KalgSemanticError(f"an image's power is a pixel product: 1 to {MAX_POWER} "
                                f"factors, not {node.exponent}", node.span)
    base = _image(node.base, c)
    value = base
    for _ in range(node.exponent - 1):
        value = c.builder.add("mul", (value, base), name=c.current, span=node.span)
    return value


def _compare(node: ast.Compare, c: _Context) -> int:
    a, b = _image(node.left, c), _image(node.right, c)
    return c.builder.add("compare", (a, b), node.op, name=c.current, span=node.span)


def _matrix(node: ast.Matrix, c: _Context) -> int:
    raise KalgSemanticError("a matrix is a kernel, not an image: apply it with "
                            "conv([...], IMAGE)", node.span)


def _call(node: ast.Call, c: _Context) -> int:
    if (arity := IMAGE_FUNCTIONS.get(node.function)) is None:
        raise _unknown_function(node)
    if len(node.arguments) != arity:
        raise KalgSemanticError(
            f"{node.function} takes {arity} argument{'s' * (arity > 1)} "
            f"({_SIGNATURES[node.function]}), not {len(node.arguments)}", node.span)
    if node.function == "conv":
        return _conv(node, c)
    if node.function == "shift":
        return _shift(node, c)
    if node.function == "fixpoint":
        return _fixpoint(node, c)
    args = tuple(_image(a, c) for a in node.arguments)
    return c.builder.add(node.function, args, name=c.current, span=node.span)


_SIGNATURES = {"conv": "kernel, image", "abs": "image", "sqrt": "image", "min": "a, b",
               "max": "a, b", "select": "mask, a, b", "clamp": "image, low, high",
               "shift": "image, dx, dy", "fixpoint": "initial image, next image, bound"}

MAX_ITERATIONS = 1_000_000
"""Largest bound of a fixpoint."""


def _fixpoint(node: ast.Call, c: _Context) -> int:
    """fixpoint(init, next, bound): the stage's name inside `next` is the previous iterate;
    iterated from `init` until it no longer changes, at most `bound` times."""
    init_expr, body_expr, bound_expr = node.arguments
    bound = c.builder.constant(_image(bound_expr, c))
    if bound is None or bound.denominator != 1 or not 1 <= bound <= MAX_ITERATIONS:
        raise KalgSemanticError(f"a fixpoint's bound is a whole number of iterations from 1 to "
                                f"{MAX_ITERATIONS}", bound_expr.span)
    if c.current in c.stages:
        raise KalgSemanticError("one fixpoint per stage: name the inner one as a stage of its "
                                "own", node.span)
    init = _image(init_expr, c)
    loop = c.builder.add("loop", (), c.current, name=c.current, span=node.span)
    c.stages[c.current] = loop
    try:
        body = _image(body_expr, c)
    finally:
        del c.stages[c.current]
    return c.builder.add("fixpoint", (init, body), (loop, int(bound)), name=c.current,
                         span=node.span)

MAX_SHIFT = 64
"""Largest |dx| or |dy| of `shift`."""


def _shift(node: ast.Call, c: _Context) -> int:
    """shift(a, dx, dy): a read dx columns east and dy rows north (the kernel offsets'
    convention), 0 outside the image."""
    image_expr, *steps = node.arguments
    offset = []
    for step in steps:
        value = c.builder.constant(_image(step, c))
        if value is None or value.denominator != 1 or abs(value) > MAX_SHIFT:
            raise KalgSemanticError(f"shift's offsets are whole numbers from -{MAX_SHIFT} to "
                                    f"{MAX_SHIFT} (columns east, rows north)", step.span)
        offset.append(int(value))
    image = _image(image_expr, c)
    if c.builder.constant(image) is not None:
        raise KalgSemanticError("shift moves an image, not a constant", image_expr.span)
    if offset == [0, 0]:
        return image
    return c.builder.add("shift", (image,), tuple(offset), name=c.current, span=node.span)


def _unknown_function(node: ast.Call) -> KalgSemanticError:
    if node.function in FUNCTION_NAMES:
        return KalgSemanticError(
            f"{node.function} is a function of kernels: use it inside conv's kernel argument, "
            f"e.g. conv({node.function}(k), img)", node.span)
    names = sorted(IMAGE_FUNCTIONS)
    close = difflib.get_close_matches(node.function, names, n=1)
    hint = f"did you mean {close[0]!r}? " if close else ""
    return KalgSemanticError(f"unknown function {node.function!r} in a pipeline", node.span,
                             hint=f"{hint}the functions of images are: {', '.join(names)}")


def _conv(node: ast.Call, c: _Context) -> int:
    kernel_expr, image_expr = node.arguments
    for name in sorted(_names(kernel_expr) & set(c.stages)):
        raise KalgSemanticError(
            f"{name!r} is an image (a stage of this pipeline): conv's first argument is a "
            "kernel; the image it applies to comes second", kernel_expr.span)
    kernel = evaluate(kernel_expr, Scope(c.kernels, c.filters), REAL)
    if kernel.semiring is not REAL:
        raise KalgSemanticError(f"a pipeline applies real kernels; this one is "
                                f"{kernel.semiring.name}", kernel_expr.span)
    if not kernel.trimmed().entries:
        raise KalgSemanticError("this kernel has no non-zero entry: its image is 0",
                                kernel_expr.span)
    image = _image(image_expr, c)
    if c.builder.constant(image) is not None:
        raise KalgSemanticError("conv applies a kernel to an image, not to a constant",
                                image_expr.span)
    return c.builder.add("conv", (image,), kernel.trimmed(), name=c.current, span=node.span)


_IMAGE: dict[type, Callable[..., int]] = {
    ast.Number: _number,
    ast.Name: _name,
    ast.Matrix: _matrix,
    ast.Add: _binary("add"),
    ast.Sub: _binary("sub"),
    ast.Mul: _binary("mul"),
    ast.Div: _div,
    ast.Neg: _neg,
    ast.Pow: _pow,
    ast.Call: _call,
    ast.Compare: _compare,
}


__all__ = ["IMAGE_FUNCTIONS", "define_pipeline"]
