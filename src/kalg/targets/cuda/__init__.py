"""The cuda target: the cpu target's plans (separable passes, running windows, passes shared
across a bank's outputs, semirings, filters over several inputs) lowered by Halide for a CUDA
GPU. The algorithm is the cpu's own (`kalg.targets.cpu.halide.Lowering.algorithm`); only the
schedule differs (`gpu_pipeline`: tiles of threads, values read at moves staged in shared
memory, column windows one thread per column and strip).

* `driver`: `kalg optimize --target cuda` (the passes; `-o F.a`/`-o F.o` the CUDA library or
  object and its header, compiled without a GPU) and `kalg.compile(..., target="cuda")`.
* `device`: whether a CUDA device is present (asked of the driver, never by crashing).
* `runner`: `build(definition, border) -> CudaFilter`, the callable users get (a GPU needed).
* `pipelines`: a `pipeline` block (issue 28's graph) as one fused GPU pipeline
  (`CudaGraphPipeline`: the cpu's graph algorithm under `halide.gpu_graph_pipeline`).
* `bench`: `kalg bench --target cuda` against CuPy and PyTorch (cuDNN) (a GPU needed).

`TARGET` is this target in the shape of `kalg.targets.Target`: the cpu's cost model, lowering
(plans) and verifier, with its own runner and entry points.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kalg.targets.cpu import CpuTarget

if TYPE_CHECKING:
    from kalg.targets.cuda.pipelines import CudaGraphPipeline
    from kalg.targets.cuda.runner import CudaFilter


def build(definition: Any, border: str | Any | None = None, name: str | None = None,
          ) -> CudaFilter | CudaGraphPipeline:
    """`kalg.targets.cpu.build`'s contract, run on CUDA device 0: `f(image, border=None)` on
    numpy arrays (copied to the device and back), or on CuPy arrays (used in place; the
    result is CuPy arrays). NoCudaDevice where there is no device. Each border's pipeline is
    checked on the device against the reference correlation before its first result. A
    `pipeline` definition gives a `CudaGraphPipeline` with the same call, checked against the
    pipeline's numpy reference."""
    from kalg.targets.cuda.runner import build as _build
    return _build(definition, border, name)


class CudaTarget(CpuTarget):
    """The cuda target in the shape of `kalg.targets.Target` (the cpu's plans)."""

    name = "cuda"

    def runner(self, artefact, **options):
        from kalg.targets.cuda.runner import CudaFilter
        return CudaFilter(artefact, **options)

    def optimize(self, text, path, settings, output=None):
        from kalg.targets.cuda import driver
        return driver.optimize(text, path, settings, output)

    def compile(self, text, path, settings, **runtime):
        from kalg.targets.cuda import driver
        return driver.compile(text, path, settings, **runtime)


TARGET = CudaTarget()

__all__ = ["TARGET", "CudaTarget", "build"]
