"""A linked cuda pipeline (`halide.link_cuda`) loaded and called through ctypes: no Halide, no
search, so a library prepared on a machine without a GPU runs where Halide is not installed
(`scripts/gpu_check.py`), and `CudaFilter` calls the same code.

The library exports `kalg_filter(halide_buffer_t *input..., halide_buffer_t *output...)` and
Halide's CUDA runtime, which runs in the device's primary context (the hooks linked with it), so
device pointers from CuPy or PyTorch are valid in it.
"""

from __future__ import annotations

import ctypes
from pathlib import Path

import numpy as np

from kalg.targets.cpu.abi import HOST_DIRTY, Buffer, device_buffer, host_buffer


class CudaPipeline:
    """`load(path, inputs, outputs)`: the pipeline with `inputs` input channels and `outputs`
    outputs (C-contiguous 2-D float32 arrays, uint8 0/1 for Boolean kernels).

    `run(images, outs)` on numpy arrays: the images copied to the device, the outputs back, the
    device memory freed. `run_device(images, outs)` on device arrays, as (pointer, shape, dtype)
    triples, used in place. `resident(images, outs)`: kept on the device for timing."""

    def __init__(self, path: Path | str, inputs: int, outputs: int) -> None:
        self.lib = ctypes.CDLL(str(path))
        self.inputs, self.outputs = inputs, outputs
        self.fn = self.lib.kalg_filter
        self.fn.argtypes = [ctypes.POINTER(Buffer)] * (inputs + outputs)
        self.fn.restype = ctypes.c_int
        for name in ("halide_copy_to_host", "halide_device_free", "halide_device_sync"):
            f = getattr(self.lib, name)
            f.argtypes, f.restype = [ctypes.c_void_p, ctypes.POINTER(Buffer)], ctypes.c_int
        self.lib.halide_cuda_device_interface.restype = ctypes.c_void_p
        self.interface = self.lib.halide_cuda_device_interface()

    def call(self, buffers: list) -> None:
        """The pipeline on (buffer, dims) pairs, inputs then outputs."""
        _status(self.fn(*(ctypes.byref(b) for b, _ in buffers)), "pipeline")

    def host(self, name: str, buffer: Buffer) -> None:
        """Halide runtime call `name` (copy_to_host, device_sync) on one buffer."""
        _status(getattr(self.lib, f"halide_{name}")(None, ctypes.byref(buffer)), name)

    def run(self, images: list[np.ndarray], outs: list[np.ndarray]) -> None:
        buffers = [host_buffer(a) for a in [*images, *outs]]
        for b, _ in buffers[:len(images)]:
            b.flags = HOST_DIRTY  # copy to the device
        try:
            self.call(buffers)
            for b, _ in buffers[len(images):]:
                self.host("copy_to_host", b)
        finally:
            for b, _ in buffers:
                self.lib.halide_device_free(None, ctypes.byref(b))

    def run_device(self, images: list[tuple], outs: list[tuple]) -> None:
        """`images`, `outs`: (device pointer, (h, w), dtype) of C-contiguous device arrays;
        returns once the outputs are written."""
        buffers = [device_buffer(*a, self.interface) for a in [*images, *outs]]
        self.call(buffers)
        for b, _ in buffers[len(images):]:
            self.host("device_sync", b)

    def run_cupy(self, planes: list, dtype: object) -> list:
        """The pipeline on CuPy `planes` (C-contiguous, of one shape), used in place: its
        outputs as new CuPy arrays of that shape and `dtype`."""
        import cupy  # present: the planes are its arrays
        outs = [cupy.empty(planes[0].shape, dtype) for _ in range(self.outputs)]
        self.run_device([pointer(p) for p in planes], [pointer(o) for o in outs])
        return outs

    def resident(self, images: list[np.ndarray], outs: list[np.ndarray]) -> Resident:
        return Resident(self, images, outs)


class Resident:
    """Images and outputs kept on the device between calls (for timing): `run()` runs the
    pipeline and waits for it, `fetch()` copies the outputs back to `outs`, `free()` frees the
    device memory. Made by one run (the images copied then)."""

    def __init__(self, pipeline: CudaPipeline, images: list[np.ndarray],
                 outs: list[np.ndarray]) -> None:
        self.pipeline, self.outs, self.n = pipeline, outs, len(images)
        self.buffers = [host_buffer(a) for a in [*images, *outs]]
        for b, _ in self.buffers[:self.n]:
            b.flags = HOST_DIRTY
        self.run()

    def run(self) -> None:
        self.pipeline.call(self.buffers)
        for b, _ in self.buffers[self.n:]:
            self.pipeline.host("device_sync", b)

    def fetch(self) -> list[np.ndarray]:
        for b, _ in self.buffers[self.n:]:
            self.pipeline.host("copy_to_host", b)
        return self.outs

    def free(self) -> None:
        for b, _ in self.buffers:
            self.pipeline.lib.halide_device_free(None, ctypes.byref(b))


def on_device(image: object) -> bool:
    """Whether `image` (or its first plane: a list's, a dict's) is a CuPy array."""
    first = (next(iter(image.values()), None) if isinstance(image, dict)
             else image[0] if isinstance(image, list | tuple) and image else image)
    return type(first).__module__.split(".")[0] == "cupy"


def pointer(a: object) -> tuple[int, tuple[int, int], np.dtype]:
    """A CuPy array as `run_device` takes it: (device pointer, shape, dtype)."""
    return a.data.ptr, tuple(a.shape), np.dtype(a.dtype)


def _status(code: int, what: str) -> None:
    if code != 0:
        raise RuntimeError(f"the cuda {what} failed with Halide status {code}")


__all__ = ["CudaPipeline", "Resident", "on_device", "pointer"]
