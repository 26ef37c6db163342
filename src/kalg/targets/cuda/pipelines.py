"""`build_pipeline(definition, border) -> CudaGraphPipeline`: a `pipeline` block on CUDA device 0.

The graph is planned as on the cpu (`graph_plan.plan_graph`: the linear blocks verified exactly,
sharing their passes) and lowered by the cpu's algorithm (`GraphLowering.algorithm`) under the
GPU schedule (`halide.gpu_graph_pipeline`: tiles of threads, the stages fused per tile in shared
memory), linked once into the disk cache (`halide.link_cuda`) and called through ctypes
(`library.CudaPipeline`). There is one GPU schedule, so no schedule search. Before its first
result, each border's pipeline is checked on the device against the numpy reference
(`dataflow.reference`), as the cpu's pipelines are (`CpuPipeline._check`).
"""

from __future__ import annotations

import time
from typing import Any

from kalg.dataflow.graph import Graph
from kalg.diagnostics import KalgError
from kalg.targets.cpu.borders import Border, parse_border
from kalg.targets.cpu.graph_plan import GraphPlan, plan_graph
from kalg.targets.cpu.pipelines import CpuPipeline, FixpointPipeline, plan_pipeline
from kalg.targets.cuda.device import Device, require
from kalg.targets.cuda.library import CudaPipeline, on_device

SCHEDULE = "gpu"
"""The name the one GPU schedule is known by (in messages and the cache key)."""


class CudaGraphPipeline(CpuPipeline):
    """A pipeline compiled for CUDA device 0: `f(image, border=None)` as `CpuPipeline`'s, on
    numpy arrays (copied to the device and back) or, without a copy, CuPy arrays (float32,
    C-contiguous; the results are CuPy arrays). NoCudaDevice where there is no device."""

    def __init__(self, plan: GraphPlan, border: Border | str, device: Device | None = None,
                 ) -> None:
        super().__init__(plan, border, SCHEDULE)
        self.device = device or require()
        self.pipelines: dict[Border, CudaPipeline] = {}

    def compiled(self, border: Border, schedule: str | None = None) -> Any:
        """The cuda pipeline for `border`, built (or loaded) and checked on first use."""
        if (border, SCHEDULE) not in self._compiled:
            from kalg.targets.cpu import halide  # the only module that imports Halide
            start = time.perf_counter()
            try:
                path, source = halide.link_cuda(self.plan, border, self.device.capability)
                pipeline = CudaPipeline(path, len(self.graph.inputs), len(self.graph.outputs))
            except (OSError, RuntimeError) as err:
                raise KalgError(f"cannot build the cuda pipeline: {err}") from None
            self.pipelines[border] = pipeline
            self._compiled[border, SCHEDULE] = pipeline.run
            self.compile_seconds[border] = time.perf_counter() - start
            self.sources[border] = source
            self._check(border, SCHEDULE)
        return self._compiled[border, SCHEDULE]

    def __call__(self, image: Any, border: Border | str | None = None) -> Any:
        if not on_device(image):
            return super().__call__(image, border)
        b = self.border if border is None else parse_border(border)
        self.compiled(b)
        outs = self.pipelines[b].run_cupy(self._device_planes(image), "float32")
        return outs[0] if len(outs) == 1 else dict(zip(self.graph.outputs, outs, strict=True))

    def _device_planes(self, image: Any) -> list[Any]:
        """The CuPy planes the pipeline reads (float32, C-contiguous; converted on the device
        where they are not)."""
        import cupy
        names = self.graph.inputs
        if len(names) == 1:
            planes = [image]
        elif isinstance(image, dict):
            planes = [image[n] for n in names if n in image]
        elif isinstance(image, list | tuple):
            planes = list(image)
        else:
            planes = [image[:, :, c] for c in range(image.shape[-1])] if image.ndim == 3 else []
        if len(planes) != len(names) or any(p.ndim != 2 for p in planes) or len(
                {p.shape for p in planes}) != 1:
            raise KalgError(f"pipeline '{self.name}' reads {len(names)} image(s) "
                            f"({' '.join(names)}): give that many 2-D CuPy arrays of one shape"
                            + (f" or an HxWx{len(names)} one" if len(names) > 1 else ""))
        return [cupy.ascontiguousarray(p, dtype=cupy.float32) for p in planes]


class CudaFixpointPipeline(FixpointPipeline):
    """A pipeline with fixpoints on CUDA device 0 (numpy arrays): each part a cuda pipeline,
    the body's output compared with its input on the host after every iteration."""

    TARGET = "cuda"

    def __init__(self, graph: Graph, border: Border | str, device: Device) -> None:
        self.device = device
        super().__init__(graph, border, SCHEDULE)

    def _part(self, graph: Graph, schedule: str | None) -> Any:
        return build_graph(graph, self.border, self.device)


def build_graph(graph: Graph, border: Border, device: Device,
                ) -> CudaGraphPipeline | CudaFixpointPipeline:
    """The cuda pipeline of `graph`: one fused pipeline, or its parts around a fixpoint."""
    if graph.fixpoints():
        return CudaFixpointPipeline(graph, border, device)
    return CudaGraphPipeline(plan_graph(graph), border, device)


def build_pipeline(definition: Any, border: Border | str | None = None,
                   device: Device | None = None) -> CudaGraphPipeline | CudaFixpointPipeline:
    """The cuda pipeline of a `pipeline` definition (a `frontend.Definition`); `border`
    defaults to the definition's setting, else replicate. The device is asked for before the
    search (NoCudaDevice)."""
    found = device or require()
    start = time.perf_counter()
    given = border or definition.pipeline.border
    if definition.pipeline.fixpoints():  # parts run again and again
        return CudaFixpointPipeline(definition.pipeline, given, found)
    f = CudaGraphPipeline(plan_pipeline(definition), given, found)
    f.search_seconds = time.perf_counter() - start
    return f


__all__ = ["SCHEDULE", "CudaFixpointPipeline", "CudaGraphPipeline", "build_graph",
           "build_pipeline"]
