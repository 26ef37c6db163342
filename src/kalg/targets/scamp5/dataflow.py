"""What a pipeline asks of SCAMP-5, checked before any search: a located error naming the
first stage the device cannot run.

SCAMP-5's analogue array adds, subtracts, negates, halves and moves (docs/scamp5-isa.md), and
its vendor library has an absolute-value macro (`abs`, built from `where`/`all` flag writes);
it has no multiplier, no square root and no comparison into a register. So a product of two
images, sqrt, min, max, comparisons, select and clamp are errors here; `conv`, sums,
differences, negation, division by a power of two and `abs` are what the device could run.
Compiling even those stages into one SCAMP-5 program is not done yet (docs/pipelines.md says
what remains), so a pipeline on SCAMP-5 is always an error, located at the first stage.
"""

from __future__ import annotations

from fractions import Fraction

from kalg.dataflow.graph import Graph
from kalg.diagnostics import KalgSemanticError, Span

_IMPOSSIBLE = {
    "sqrt": "a square root",
    "min": "min (a pixel-wise minimum)",
    "max": "max (a pixel-wise maximum)",
    "compare": "a comparison",
    "select": "select",
    "clamp": "clamp",
}


def check_scamp5(graph: Graph, target: str = "scamp5", span: Span | None = None) -> None:
    """Raise a KalgSemanticError at the first stage of `graph` that `target` cannot run, or,
    if every stage is one the device has, at the pipeline: not compiled for SCAMP-5 yet."""
    for i in graph.live():
        n = graph.nodes[i]
        if (why := _why_not(graph, n)) is not None:
            stage = f"stage {n.name!r}" if n.name else "this stage"
            raise KalgSemanticError(f"{stage}: {why} cannot run on {target} (its analogue "
                                    "array adds, subtracts, halves and takes abs; it has no "
                                    "multiplier)", n.span,
                                    hint="compile this pipeline with --target cpu")
    raise KalgSemanticError(
        f"pipeline {graph.name!r}: pipelines compile for the cpu target only; on {target} "
        "its stages (convolutions, sums, differences, halvings, abs) are each possible,"
        " but kalg does not yet join "
        "them into one program", span, hint="use --target cpu (docs/pipelines.md)")


def _why_not(graph: Graph, n) -> str | None:
    if n.op in _IMPOSSIBLE:
        return _IMPOSSIBLE[n.op]
    constants = [graph.nodes[a].param for a in n.args if graph.nodes[a].op == "const"]
    if n.op == "mul" and not constants:
        return "a product of two images"
    if n.op == "mul" and not _power_of_two(constants[0]):
        return f"scaling by {constants[0]} (only halving and sign changes)"
    if n.op == "div" and not _power_of_two(1 / Fraction(constants[0])):
        return f"division by {constants[0]} (only by powers of two)"
    if n.op in ("add", "sub") and constants:
        return "adding a constant image"
    return None


def _power_of_two(c: Fraction) -> bool:
    c = abs(Fraction(c))
    return (c != 0 and c.numerator & (c.numerator - 1) == 0 and c.denominator == 1) or (
        c.numerator == 1 and c.denominator & (c.denominator - 1) == 0)


__all__ = ["check_scamp5"]
