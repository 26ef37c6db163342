"""Is there a CUDA device here? Asked of the driver (libcuda) through ctypes, never by running a
pipeline, so that a machine without one (CI, most laptops) gets an answer, not a crash.

`probe()` returns a `Device` or the reason there is none; `require()` returns the `Device` or
raises `NoCudaDevice`, a KalgError that says so and names the target that runs instead.
"""

from __future__ import annotations

import ctypes
from dataclasses import dataclass

from kalg.diagnostics import KalgError

LIBRARIES = ("libcuda.so.1", "libcuda.so")
"""The CUDA driver library, as Halide's runtime loads it (Linux)."""

_CAPABILITY_MAJOR, _CAPABILITY_MINOR = 75, 76  # CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_*


@dataclass(frozen=True)
class Device:
    """CUDA device 0: its name and compute capability (major, minor)."""

    name: str
    capability: tuple[int, int]

    def __str__(self) -> str:
        return f"{self.name} (compute capability {self.capability[0]}.{self.capability[1]})"


class NoCudaDevice(KalgError):
    """The cuda target was asked to run where there is no CUDA device (exit status 1)."""

    def __init__(self, reason: str) -> None:
        super().__init__(f"no CUDA device is present ({reason}): the cuda target cannot run "
                         "here", hint="run it on the cpu instead: --target cpu (kalg.compile(..., "
                         "target=\"cpu\") from Python); 'kalg optimize FILE --target cuda -o "
                         "F.a' still compiles the CUDA library here")


def probe() -> Device | str:
    """CUDA device 0, or why there is none (no driver, no device, a driver error)."""
    lib = None
    for name in LIBRARIES:
        try:
            lib = ctypes.CDLL(name)
            break
        except OSError:
            continue
    if lib is None:
        return "the CUDA driver (libcuda.so.1) is not installed"
    try:
        if (err := lib.cuInit(0)) != 0:
            return f"the CUDA driver found no usable device (cuInit error {err})"
        count = ctypes.c_int(0)
        if lib.cuDeviceGetCount(ctypes.byref(count)) != 0 or count.value < 1:
            return "the CUDA driver reports no device"
        device = ctypes.c_int(0)
        if lib.cuDeviceGet(ctypes.byref(device), 0) != 0:
            return "the CUDA driver cannot open device 0"
        name = ctypes.create_string_buffer(256)
        lib.cuDeviceGetName(name, 256, device)
        major, minor = ctypes.c_int(0), ctypes.c_int(0)
        lib.cuDeviceGetAttribute(ctypes.byref(major), _CAPABILITY_MAJOR, device)
        lib.cuDeviceGetAttribute(ctypes.byref(minor), _CAPABILITY_MINOR, device)
    except AttributeError as err:  # a library of that name without the driver API
        return f"libcuda has no {err.name}: not a CUDA driver"
    return Device(name.value.decode(errors="replace") or "CUDA device 0",
                  (major.value, minor.value))


def require() -> Device:
    """CUDA device 0, or NoCudaDevice saying why not and what runs instead."""
    found = probe()
    if isinstance(found, str):
        raise NoCudaDevice(found)
    return found


__all__ = ["Device", "NoCudaDevice", "probe", "require"]
