"""A pipeline with a fixpoint on the cpu: `FixpointPipeline`, the call of a `CpuPipeline`.

The graph is cut at its first fixpoint (`kalg.dataflow.fixpoint.split`) into three graphs
without one, each compiled as one fused Halide pipeline (`CpuPipeline`, checked against its
own reference before first use): `before` runs once, `body` is realised again and again on
its previous output until that output no longer changes (at most the fixpoint's bound: then a
KalgError naming the stage), and `after` (cut again when it holds another fixpoint) gives the
outputs. The whole is checked once more against the pipeline's reference, which iterates the
same way in numpy, on random images before its first result (where the reference reaches no
fixpoint within the bound on one, the pipeline must not either).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from kalg.dataflow import reference
from kalg.dataflow.fixpoint import split
from kalg.dataflow.graph import Graph
from kalg.diagnostics import KalgError, VerificationError
from kalg.targets.cpu.borders import Border, parse_border
from kalg.targets.cpu.graph_plan import plan_graph
from kalg.targets.cpu.pipelines import CHECK_SHAPES, CpuPipeline, PipelineCall, tolerance


class FixpointPipeline(PipelineCall):
    """`f(image, border=None)` as `CpuPipeline`'s, for a graph with fixpoints."""

    def __init__(self, graph: Graph, border: Border | str, schedule: str | None = None) -> None:
        self.graph, self.name = graph, graph.name
        self.border = border if isinstance(border, Border) else parse_border(border)
        self.cut = split(graph)
        self.before = CpuPipeline(plan_graph(self.cut.before), self.border, schedule)
        self.body = CpuPipeline(plan_graph(self.cut.body), self.border, schedule)
        self.after = build_graph(self.cut.after, self.border, schedule)
        self.plan = plan_graph(graph)
        self.search_seconds = 0.0
        self.compile_seconds: dict[Border, float] = {}
        self.sources: dict[Border, str] = {}
        self.iterations = 0
        """Iterations of the body in the last run."""
        self._checked: set[Border] = set()

    def _planes(self, image: Any) -> list[np.ndarray]:
        return self.before._planes(image)  # the same inputs

    def run(self, images: list[np.ndarray], border: Border,
            schedule: str | None = None) -> list[np.ndarray]:
        """The outputs for float32 C-contiguous `images`, checked on first use per border."""
        if border not in self._checked:
            self._checked.add(border)
            self._check(border, schedule)
        return self._run(images, border, schedule)

    def _run(self, images: list[np.ndarray], border: Border,
             schedule: str | None) -> list[np.ndarray]:
        state, *free = self.before.run(images, border, schedule)
        for count in range(1, self.cut.bound + 1):
            (following,) = self.body.run([state, *free], border, schedule)
            if np.array_equal(following, state, equal_nan=True):
                self.iterations = count
                return self.after.run([*images, state], border, schedule)
            state = following
        raise reference.fixpoint_error(self.graph.nodes[self.cut.node], self.cut.bound)

    def _check(self, border: Border, schedule: str | None) -> None:
        rng = np.random.default_rng(2)
        for k, shape in enumerate(CHECK_SHAPES):
            planes = [np.asarray(rng.integers(-8, 9, shape) if k % 2
                                 else rng.uniform(-1, 1, shape), dtype=np.float32)
                      for _ in self.graph.inputs]
            try:
                want = reference.evaluate(self.graph, planes, border)
            except KalgError:  # no fixpoint within the bound here: the pipeline must say so too
                self._diverges(planes, border, schedule, shape)
                continue
            got = self._run(planes, border, schedule)
            single = reference.evaluate(self.graph, planes, border, np.float32)
            for name, out in zip(self.outputs, got, strict=True):
                if not np.all(np.abs(out - want[name]) <= tolerance(want[name], single[name])):
                    raise VerificationError(
                        f"the cpu pipeline '{self.name}' with its fixpoint differs from the "
                        f"reference for output {name} ({shape[0]}x{shape[1]} image, border "
                        f"{border})", self.plan.describe())


    def _diverges(self, planes: list[np.ndarray], border: Border, schedule: str | None,
                  shape: tuple[int, int]) -> None:
        try:
            self._run(planes, border, schedule)
        except KalgError:
            return
        raise VerificationError(f"the cpu pipeline '{self.name}' reached a fixpoint where the "
                                f"reference reaches none within the bound ({shape[0]}x"
                                f"{shape[1]} image, border {border})", self.plan.describe())


def build_graph(graph: Graph, border: Border, schedule: str | None,
                ) -> CpuPipeline | FixpointPipeline:
    """The cpu pipeline of `graph`: one Halide pipeline, or a `FixpointPipeline`."""
    if graph.fixpoints():
        return FixpointPipeline(graph, border, schedule)
    return CpuPipeline(plan_graph(graph), border, schedule)


__all__ = ["FixpointPipeline", "build_graph"]
