"""Halide's calling convention through ctypes: `halide_buffer_t` (HalideRuntime.h) for numpy
arrays and for device pointers. No Halide here: a compiled pipeline (a shared library) is called
with these where Halide itself is not installed (the cuda target's prepared libraries on a GPU
machine, `kalg.targets.cuda.library`)."""

from __future__ import annotations

import ctypes

import numpy as np


class Dim(ctypes.Structure):
    _fields_ = [("min", ctypes.c_int32), ("extent", ctypes.c_int32),
                ("stride", ctypes.c_int32), ("flags", ctypes.c_uint32)]


class HalideType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class Buffer(ctypes.Structure):
    """halide_buffer_t (HalideRuntime.h)."""

    _fields_ = [("device", ctypes.c_uint64), ("device_interface", ctypes.c_void_p),
                ("host", ctypes.c_void_p), ("flags", ctypes.c_uint64), ("type", HalideType),
                ("dimensions", ctypes.c_int32), ("dim", ctypes.POINTER(Dim)),
                ("padding", ctypes.c_void_p)]


TYPES = {np.dtype(np.float32): (2, 32), np.dtype(np.uint8): (1, 8)}
"""The element types kalg's pipelines take: Halide type code and bits."""

HOST_DIRTY = 1
"""halide_buffer_flag_host_dirty: the host data is newer (copy it to the device)."""


def host_buffer(a: np.ndarray) -> tuple[Buffer, object]:
    """A 2-D array's buffer (x = column) and the dimensions it points to (keep both alive)."""
    h, w = a.shape
    s0, s1 = (s // a.itemsize for s in a.strides)
    dims = (Dim * 2)(Dim(0, w, s1, 0), Dim(0, h, s0, 0))
    code, bits = TYPES[a.dtype]
    return Buffer(0, None, a.ctypes.data, 0, HalideType(code, bits, 1), 2, dims, None), dims


def device_buffer(pointer: int, shape: tuple[int, int], dtype: np.dtype, interface: int,
                  ) -> tuple[Buffer, object]:
    """A C-contiguous 2-D device array's buffer (no host memory) on `interface`."""
    h, w = shape
    dims = (Dim * 2)(Dim(0, w, 1, 0), Dim(0, h, w, 0))
    code, bits = TYPES[np.dtype(dtype)]
    return Buffer(pointer, interface, None, 0, HalideType(code, bits, 1), 2, dims, None), dims


__all__ = ["HOST_DIRTY", "TYPES", "Buffer", "Dim", "HalideType", "device_buffer",
           "host_buffer"]
