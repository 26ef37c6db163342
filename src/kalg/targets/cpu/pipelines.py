"""`build_pipeline(definition) -> CpuPipeline`: a `pipeline` block as a callable on images.

The graph's linear blocks are planned and verified exactly (`graph_plan`); the whole graph
is lowered to ONE Halide pipeline (`halide.compile_graph`) with a schedule chosen by a small
deterministic search: each schedule of `SEARCH` is compiled and timed on one fixed image of
`SEARCH_SHAPE`, in that order, and the fastest kept (the first on a tie). The choice is cached
on disk beside the compiled pipelines, keyed by the graph and its plan, the border, the Halide
target and the number of cores (`schedule_key`): measurement decides only the schedule, never
a result - every schedule computes the same values, and the pipeline is checked against the
numpy reference (`dataflow.reference`) on random images before its first result, exactly where
float32 evaluation is exact, else within float32 rounding.

A graph with a fixpoint (`FixpointPipeline`) is cut at its first fixpoint
(`kalg.dataflow.fixpoint.split`) into three graphs without one, each compiled as above:
`before` runs once, `body` is realised again and again on its previous output until that
output no longer changes (at most the fixpoint's bound: then a KalgError naming the stage), and
`after` (cut again when it holds another fixpoint) gives the outputs. The whole is checked once
more against the pipeline's reference, which iterates the same way in numpy, on random images
before its first result (where the reference reaches no fixpoint within the bound on one, the
pipeline must not either).
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from functools import cached_property
from typing import Any

import numpy as np

from kalg.dataflow import reference
from kalg.dataflow.fixpoint import split
from kalg.dataflow.graph import Graph
from kalg.diagnostics import KalgError, KalgSemanticError, VerificationError
from kalg.targets.cpu.borders import Border, parse_border
from kalg.targets.cpu.graph_plan import GraphPlan, plan_graph

SEARCH = ("fused", "fused-16", "lean", "lean-16")
"""The schedules the search measures (`halide.SCHEDULES`), in order of preference on a tie."""

SEARCH_SHAPE = (1080, 1920)
"""The image (rows, columns) every candidate schedule is timed on: a frame of HD video."""

SEARCH_REPEATS = 5
"""Timed runs per candidate after one warm-up; the median counts."""

CHECK_SHAPES = ((23, 19), (3, 2), (40, 70))
"""Random images every compiled pipeline is checked on before its first use."""


class PipelineCall:
    """The call of a compiled pipeline (`graph`, `border`, `run`, `_planes`): `f(image,
    border=None)` as `CpuPipeline` documents it."""

    @property
    def outputs(self) -> list[str]:
        return list(self.graph.outputs)

    def __call__(self, image: Any, border: Border | str | None = None,
                 ) -> np.ndarray | dict[str, np.ndarray]:
        b = self.border if border is None else (
            border if isinstance(border, Border) else parse_border(border))
        outs = self.run(self._planes(image), b)
        if len(outs) == 1:
            return outs[0]
        return dict(zip(self.graph.outputs, outs, strict=True))


class CpuPipeline(PipelineCall):
    """A pipeline compiled for the cpu: `f(image, border=None)`.

    `image`: a 2-D array for a pipeline of one input; for several, a sequence of 2-D arrays
    or a mapping from input name to array (or an HxWxC array, channel c the c-th input).
    Returns a float32 array of the image's shape, or a dict by output name when the pipeline
    has several outputs. `schedule` fixes the Halide schedule (`halide.SCHEDULES`) instead of
    the search.
    """

    def __init__(self, plan: GraphPlan, border: Border | str, schedule: str | None = None,
                 ) -> None:
        self.plan = plan
        self.graph = plan.graph
        self.name = plan.graph.name
        self.border = border if isinstance(border, Border) else parse_border(border)
        self.fixed = schedule
        self.schedules: dict[Border, str] = {}
        self.timings: dict[Border, dict[str, float]] = {}
        self._compiled: dict[tuple[Border, str], Any] = {}
        self.compile_seconds: dict[Border, float] = {}
        self.sources: dict[Border, str] = {}
        self.search_seconds = 0.0


    def run(self, images: list[np.ndarray], border: Border,
            schedule: str | None = None) -> list[np.ndarray]:
        """The outputs for float32 C-contiguous `images` (one per input), with the chosen
        schedule (or `schedule`)."""
        compiled = self.compiled(border, schedule)
        outs = [np.empty_like(images[0]) for _ in self.graph.outputs]
        if images[0].size:
            compiled(images, outs)
        return outs

    def schedule(self, border: Border) -> str:
        """The schedule for `border`: the fixed one, else the search's (cached on disk)."""
        if self.fixed is not None:
            return self.fixed
        if border not in self.schedules:
            self.schedules[border] = self._search(border)
        return self.schedules[border]

    def compiled(self, border: Border, schedule: str | None = None) -> Any:
        """The compiled pipeline, compiled (or loaded) and checked on first use."""
        name = schedule or self.schedule(border)
        if (border, name) not in self._compiled:
            from kalg.targets.cpu import halide  # the only module that imports Halide
            c = halide.compile_graph(self.plan, border, name)
            self._compiled[border, name] = c.run
            self.compile_seconds[border] = self.compile_seconds.get(border, 0.0) + c.seconds
            self.sources[border] = c.source
            self._check(border, name)
        return self._compiled[border, name]

    # -- input
    def _planes(self, image: Any) -> list[np.ndarray]:
        n = len(self.graph.inputs)
        if n == 1:
            a = np.asarray(image)
            if a.ndim != 2:
                raise KalgError(f"pipeline '{self.name}' takes a 2-D image (one channel); this "
                                f"one has shape {a.shape}")
            planes = [a]
        else:
            from kalg.targets.cpu.runner import channel_planes
            planes = channel_planes(image, self.graph.inputs, self.name)
        return [np.array(p, dtype=np.float32, order="C", copy=True) for p in planes]

    # -- verification
    def _check(self, border: Border, schedule: str) -> None:
        rng = np.random.default_rng(1)
        for k, shape in enumerate(CHECK_SHAPES):
            images = [(rng.integers(-8, 9, shape) if k % 2 else rng.uniform(-1, 1, shape))
                      for _ in self.graph.inputs]
            planes = [np.asarray(i, dtype=np.float32) for i in images]
            got = self.run(planes, border, schedule)
            want = reference.evaluate(self.graph, planes, border)
            single = reference.evaluate(self.graph, planes, border, np.float32)
            for name, out in zip(self.graph.outputs, got, strict=True):
                tol = tolerance(want[name], single[name])
                if not np.all(np.abs(out - want[name]) <= tol):
                    bad = int(np.sum(~(np.abs(out - want[name]) <= tol)))
                    raise VerificationError(
                        f"the Halide pipeline '{self.name}' (schedule {schedule}) differs from "
                        f"the reference for output {name} at {bad} of {out.size} pixels "
                        f"({shape[0]}x{shape[1]} image, border {border})", self.plan.describe())

    # -- schedule search
    def _search(self, border: Border) -> str:
        start = time.perf_counter()
        path = _schedule_path(self.plan, border)
        if path is not None and path.exists():
            try:
                chosen = json.loads(path.read_text())
                if chosen.get("schedule") in SEARCH:
                    self.timings[border] = chosen.get("seconds", {})
                    return chosen["schedule"]
            except (OSError, ValueError):
                pass
        image = np.random.default_rng(0).random(SEARCH_SHAPE, dtype=np.float32)
        images = [image] * len(self.graph.inputs)
        seconds = {name: _median_time(self, images, border, name) for name in SEARCH}
        best = min(SEARCH, key=lambda name: seconds[name])  # min keeps the first on a tie
        self.timings[border] = seconds
        self.search_seconds += time.perf_counter() - start
        if path is not None:
            try:
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(json.dumps({"schedule": best, "seconds": seconds}))
            except OSError:
                pass
        return best


def _median_time(f: CpuPipeline, images: list[np.ndarray], border: Border, name: str) -> float:
    from kalg.targets.table import median_seconds  # the first call compiles and checks
    return median_seconds(lambda: f.run(images, border, name), SEARCH_REPEATS)


def tolerance(want: np.ndarray, single: np.ndarray) -> np.ndarray | float:
    """0 where float32 evaluation is exact on this image (the reference in float32 equals it
    in float64 everywhere); else 8x the largest float32 rounding the reference shows, plus a few
    ulps of the largest magnitude."""
    difference = np.abs(single.astype(np.float64) - want)
    if not np.any(difference):
        return 0.0
    scale = max(1.0, float(np.max(np.abs(want))))
    return 8 * float(np.max(difference)) + 1e-6 * scale


def schedule_key(plan: GraphPlan, border: Border) -> str:
    """What a cached schedule choice depends on: the graph and its plan, the border, the
    machine (Halide's host target and the number of cores) and kalg's version."""
    from kalg import __version__
    from kalg.targets.cpu import halide
    text = "\n".join([f"kalg {__version__} halide {halide.halide_version()}",
                      f"target {halide.hl.get_host_target()} cores {os.cpu_count()}",
                      f"border {border}", f"search {' '.join(SEARCH)} {SEARCH_SHAPE}",
                      plan.describe()])
    return hashlib.sha256(text.encode()).hexdigest()


def _schedule_path(plan: GraphPlan, border: Border):
    from kalg.targets.cpu.halide import cache_dir
    base = cache_dir()
    return None if base is None else base / f"kalg_schedule_{schedule_key(plan, border)[:32]}.json"


# ----------------------------------------------------------------------------- fixpoints
class FixpointPipeline(PipelineCall):
    """`f(image, border=None)` as `CpuPipeline`'s, for a graph with fixpoints: its parts
    (`dataflow.fixpoint.split`) each a pipeline of the target (`_part`), the body run until
    its output equals its input, the whole checked against the reference on first use."""

    TARGET = "cpu"

    def __init__(self, graph: Graph, border: Border | str, schedule: str | None = None) -> None:
        self.graph, self.name = graph, graph.name
        self.border = border if isinstance(border, Border) else parse_border(border)
        self.cut = split(graph)
        self.before, self.body, self.after = (
            self._part(g, schedule) for g in (self.cut.before, self.cut.body, self.cut.after))
        self.search_seconds = 0.0
        self.compile_seconds: dict[Border, float] = {}
        self.sources: dict[Border, str] = {}
        self.iterations = 0
        """Iterations of the body in the last run."""
        self._checked: set[Border] = set()

    @cached_property
    def plan(self) -> GraphPlan:
        """The whole graph's plan, for its description (messages, --stats): made when asked,
        since the parts are planned already and a plan is an e-graph search."""
        return plan_graph(self.graph)

    def _part(self, graph: Graph, schedule: str | None) -> Any:
        """The pipeline of one part (a target's: the cpu's here); a part may hold fixpoints."""
        return build_graph(graph, self.border, schedule)

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
                        f"the {self.TARGET} pipeline '{self.name}' with its fixpoint differs from "
                        "the "
                        f"reference for output {name} ({shape[0]}x{shape[1]} image, border "
                        f"{border})", self.plan.describe())


    def _diverges(self, planes: list[np.ndarray], border: Border, schedule: str | None,
                  shape: tuple[int, int]) -> None:
        try:
            self._run(planes, border, schedule)
        except KalgError:
            return
        raise VerificationError(f"the {self.TARGET} pipeline '{self.name}' reached a fixpoint "
                                "where the "
                                f"reference reaches none within the bound ({shape[0]}x"
                                f"{shape[1]} image, border {border})", self.plan.describe())


def build_graph(graph: Graph, border: Border, schedule: str | None,
                ) -> CpuPipeline | FixpointPipeline:
    """The cpu pipeline of `graph`: one Halide pipeline, or a `FixpointPipeline`."""
    if graph.fixpoints():
        return FixpointPipeline(graph, border, schedule)
    return CpuPipeline(plan_graph(graph), border, schedule)


def build_pipeline(definition: Any, border: Border | str | None = None,
                   schedule: str | None = None) -> CpuPipeline:
    """The cpu pipeline of a `pipeline` definition (a `frontend.Definition`); `border`
    defaults to the definition's setting, else replicate."""
    from kalg.targets.cpu.halide import SCHEDULES
    if schedule is not None and schedule not in SCHEDULES:
        raise KalgError(f"unknown schedule {schedule!r}: expected one of "
                        f"{', '.join(SCHEDULES)}")
    start = time.perf_counter()
    if definition.pipeline.fixpoints():  # parts realised again and again
        return FixpointPipeline(definition.pipeline, border or definition.pipeline.border,
                                schedule)
    f = CpuPipeline(plan_pipeline(definition), border or definition.pipeline.border, schedule)
    f.search_seconds = time.perf_counter() - start
    return f


def plan_pipeline(definition: Any, limits: Any = None) -> GraphPlan:
    """The verified plan of a `pipeline` definition's graph (`graph_plan.plan_graph`, under
    `limits` or its defaults), a semantic error located at the definition. No Halide."""
    try:
        return plan_graph(definition.pipeline, *(() if limits is None else (limits,)))
    except KalgSemanticError as err:
        raise KalgSemanticError(f"'{definition.name}': {err.message}",
                                err.span or definition.span, err.hint) from None


__all__ = ["SEARCH", "CpuPipeline", "FixpointPipeline", "PipelineCall", "build_graph",
           "build_pipeline", "plan_pipeline", "schedule_key", "tolerance"]
