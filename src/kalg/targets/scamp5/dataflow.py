"""What a pipeline asks of SCAMP-5, checked before any search: a located error naming the
first stage the device cannot run.

SCAMP-5's analogue array adds, subtracts, negates, halves and moves (docs/scamp5-isa.md), and
its vendor library has an absolute-value macro (`abs`, built from `where`/`all` flag writes);
it has no multiplier, no square root and no comparison into a register. So a product of two
images, sqrt, min, max, comparisons, select and clamp are errors here; `conv`, sums,
differences, negation, scaling by constants and `abs` compile into one program
(`kalg.targets.scamp5.graph_program`), which reads one image.
"""

from __future__ import annotations

from kalg.dataflow.graph import Graph
from kalg.diagnostics import KalgSemanticError, Span

_IMPOSSIBLE = {
    "sqrt": "a square root",
    "min": "min (a pixel-wise minimum)",
    "max": "max (a pixel-wise maximum)",
    "compare": "a comparison",
    "select": "select",
    "clamp": "clamp",
    "fixpoint": "a fixpoint (a stage repeated until it no longer changes)",
}


def check_scamp5(graph: Graph, target: str = "scamp5", span: Span | None = None) -> None:
    """Raise a KalgSemanticError at the first stage of `graph` that `target` cannot run, or at
    the pipeline when it reads more than one image."""
    for i in graph.live():
        n = graph.nodes[i]
        if (why := _why_not(graph, n)) is not None:
            stage = f"stage {n.name!r}" if n.name else "this stage"
            raise KalgSemanticError(f"{stage}: {why} cannot run on {target} (its analogue "
                                    "array adds, subtracts, halves and takes abs: no "
                                    "multiplier, comparison or loop)", n.span,
                                    hint="compile this pipeline with --target cpu")
    if len(graph.inputs) > 1:
        raise KalgSemanticError(
            f"pipeline {graph.name!r} reads {len(graph.inputs)} images: on {target} a pipeline "
            "reads one (the image the array captures)", span,
            hint="compile this pipeline with --target cpu")


def _why_not(graph: Graph, n) -> str | None:
    if n.op in _IMPOSSIBLE:
        return _IMPOSSIBLE[n.op]
    constants = [graph.nodes[a].param for a in n.args if graph.nodes[a].op == "const"]
    if n.op == "mul" and not constants:
        return "a product of two images"
    if n.op in ("add", "sub") and constants:
        return "adding a constant image"
    return None


__all__ = ["check_scamp5"]
