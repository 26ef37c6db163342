"""`build(definition, border) -> CudaFilter`: a kalg definition as a callable on CUDA device 0.

A `CudaFilter` is a `CpuFilter` (the same verified plan, the same reference check before a
pipeline's first result, on the device) whose pipelines are the cuda lowering
(`halide.link_cuda`: the cpu algorithm with the GPU schedule, linked once into the disk cache,
called by `library.CudaPipeline`).
numpy images are copied to the device and the results back; CuPy arrays (float32, C-contiguous;
uint8 or bool for Boolean kernels) are used in place and the results are CuPy arrays.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from kalg.diagnostics import KalgError
from kalg.targets.cpu.borders import DEFAULT, Border
from kalg.targets.cpu.plan import CpuPlan
from kalg.targets.cpu.runner import (
    CpuFilter,
    _border,
    load_definition,
    plan_definition,
)
from kalg.targets.cuda.device import Device, require
from kalg.targets.cuda.library import CudaPipeline, on_device


class CudaFilter(CpuFilter):
    """A definition compiled for CUDA device 0: `f(image, border=None)` as `CpuFilter`'s, on
    numpy arrays or, without a copy, CuPy arrays. NoCudaDevice where there is no device."""

    def __init__(self, plan: CpuPlan, border: Border | str = DEFAULT, name: str = "",
                 device: Device | None = None) -> None:
        super().__init__(plan, border, name)
        self.device = device or require()
        self.pipelines: dict[Border, Any] = {}

    def compiled(self, border: Border) -> Any:
        """The cuda pipeline for `border`, built (or loaded) and checked on first use."""
        if border not in self._compiled:
            from kalg.targets.cpu import halide  # the only module that imports Halide
            start = time.perf_counter()
            try:
                path, source = halide.link_cuda(self.plan, border, self.device.capability)
                pipeline = CudaPipeline(path, len(self.plan.inputs or (None,)),
                                        len(self.plan.outputs))
            except (OSError, RuntimeError) as err:
                raise KalgError(f"cannot build the cuda pipeline: {err}") from None
            self.pipelines[border] = pipeline
            self._compiled[border] = pipeline.run
            self.compile_seconds[border] = time.perf_counter() - start
            self.sources[border] = source
            self._check(border)
        return self._compiled[border]

    def __call__(self, image: Any, border: Border | str | None = None) -> Any:
        if not on_device(image):
            return super().__call__(image, border)
        b = self.border if border is None else _border(border)
        self.compiled(b)
        planes = self._device_planes(image)
        outs = self.pipelines[b].run_cupy(planes, planes[0].dtype)
        result = [o.view(bool) for o in outs] if self.boolean else outs
        return result[0] if len(result) == 1 else dict(zip(self.plan.outputs, result,
                                                           strict=True))

    def _device_planes(self, image: Any) -> list[Any]:
        """The CuPy planes the pipeline reads, in place where they already are float32 (uint8
        for Boolean kernels) and C-contiguous; else converted on the device."""
        import cupy
        dtype = cupy.uint8 if self.boolean else cupy.float32
        if self.plan.inputs:
            planes = (list(image) if isinstance(image, list | tuple)
                      else [image[c] for c in self.plan.inputs] if isinstance(image, dict)
                      else [image[:, :, c] for c in range(image.shape[-1])])
            n = len(self.plan.inputs)
            if len(planes) != n or any(p.ndim != 2 for p in planes) or len(
                    {p.shape for p in planes}) != 1:
                raise KalgError(f"'{self.name}' reads {n} input channels "
                                f"({' '.join(self.plan.inputs)}): give {n} 2-D CuPy arrays of "
                                f"one shape or an HxWx{n} one")
        else:
            if image.ndim != 2:
                raise KalgError(f"a kalg filter takes a 2-D image (one channel); this one has "
                                f"shape {image.shape}")
            planes = [image]
        if self.boolean:
            planes = [p.view(cupy.uint8) if p.dtype == cupy.bool_ else p != 0 for p in planes]
        return [cupy.ascontiguousarray(p, dtype=dtype) for p in planes]

    def resident(self, image: Any, border: Border | str | None = None) -> Any:
        """`image` (numpy) copied to the device once, with outputs there: `run()` applies the
        filter on the device and waits, `fetch()` copies the outputs back, `free()` (for
        timing: `kalg bench --target cuda`)."""
        b = self.border if border is None else _border(border)
        self.compiled(b)
        img = self._input(image)
        images = img if isinstance(img, list) else [img]
        outs = [np.empty_like(images[0]) for _ in self.plan.outputs]
        return self.pipelines[b].resident(images, outs)


def build(definition: Any, border: Border | str | None = None, name: str | None = None,
          ) -> Any:
    """See `kalg.targets.cuda.build`. The device is asked for before the search. A `pipeline`
    definition gives a `CudaGraphPipeline` (`kalg.targets.cuda.pipelines`)."""
    found = require()
    d = load_definition(definition, name)
    if d.pipeline is not None:  # one fused pipeline under the GPU schedule
        from kalg.targets.cuda.pipelines import build_pipeline
        return build_pipeline(d, border, found)
    start = time.perf_counter()
    f = CudaFilter(plan_definition(d), border or d.border or DEFAULT, d.name, found)
    f.search_seconds = time.perf_counter() - start
    return f


__all__ = ["CudaFilter", "build"]
