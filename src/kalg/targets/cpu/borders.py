"""Image borders: what a filter reads outside the image.

A border extends the image to the whole plane; a filter's output at every pixel is the kernel
correlated with the extended image (so a decomposition into passes gives the same result as the
kernel, whatever the border). The modes, with their names elsewhere:

| kalg         | rule (image abcdefgh)      | OpenCV               | scipy.ndimage | numpy.pad  |
|--------------|----------------------------|----------------------|---------------|------------|
| constant [v] | vvvv abcdefgh vvvv         | BORDER_CONSTANT      | constant cval | constant   |
| replicate    | aaaa abcdefgh hhhh         | BORDER_REPLICATE     | nearest       | edge       |
| reflect      | dcba abcdefgh hgfe         | BORDER_REFLECT       | reflect       | symmetric  |
| reflect101   | edcb abcdefgh gfed         | BORDER_REFLECT_101   | mirror        | reflect    |
| wrap         | efgh abcdefgh abcd         | BORDER_WRAP          | wrap          | wrap       |

Reflections repeat (periodically) when the border is wider than the image, as in scipy and
numpy. This module is pure Python/numpy: `kalg.targets.cpu.halide` maps a `Border` to Halide's
boundary conditions.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from kalg.diagnostics import KalgError

MODES = ("constant", "replicate", "reflect", "reflect101", "wrap")

ALIASES = {"zero": "constant", "nearest": "replicate", "edge": "replicate",
           "symmetric": "reflect", "mirror": "reflect101", "reflect_101": "reflect101",
           "periodic": "wrap"}
"""Other names users know the modes by (scipy's and numpy's); the table above says which."""

SCIPY = {"constant": "constant", "replicate": "nearest", "reflect": "reflect",
         "reflect101": "mirror", "wrap": "wrap"}
NUMPY = {"constant": "constant", "replicate": "edge", "reflect": "symmetric",
         "reflect101": "reflect", "wrap": "wrap"}


@dataclass(frozen=True, slots=True)
class Border:
    """A border mode and, for `constant`, the value outside the image."""

    mode: str = "replicate"
    value: float = 0.0

    def __str__(self) -> str:
        if self.mode == "constant" and self.value != 0:
            return f"constant {self.value:g}"
        return self.mode

    def pad(self, image: np.ndarray, top: int, bottom: int, left: int, right: int) -> np.ndarray:
        """`image` extended by the given numbers of rows and columns on each side."""
        widths = ((top, bottom), (left, right))
        if self.mode == "constant":
            return np.pad(image, widths, mode="constant", constant_values=self.value)
        if self.mode == "reflect101" and min(image.shape) == 1:
            # numpy cannot reflect a one-pixel axis without its edge; every reflection of a
            # single pixel is that pixel (as in scipy's 'mirror').
            return _pad_axes(image, widths)
        return np.pad(image, widths, mode=NUMPY[self.mode])

    def scipy_kwargs(self) -> dict[str, object]:
        """Keyword arguments of scipy.ndimage filters for this border."""
        return {"mode": SCIPY[self.mode], "cval": self.value}


def _pad_axes(image: np.ndarray, widths: tuple) -> np.ndarray:
    out = image
    for axis, (lo, hi) in enumerate(widths):
        mode = "edge" if out.shape[axis] == 1 else "reflect"
        pad = [(0, 0), (0, 0)]
        pad[axis] = (lo, hi)
        out = np.pad(out, pad, mode=mode)
    return out


DEFAULT = Border("replicate")


def parse_border(spec: object) -> Border:
    """'replicate', 'reflect101', 'constant', 'constant 0.5' or 'constant:0.5' (and the aliases
    in `ALIASES`), a (mode, value) pair such as ('constant', 7), or a Border → Border; anything
    else, or a value that is not a finite number, is a KalgError listing the modes."""
    if isinstance(spec, Border):
        return spec
    if isinstance(spec, tuple | list) and 1 <= len(spec) <= 2 and isinstance(spec[0], str):
        text = " ".join(str(part) for part in spec)
    elif isinstance(spec, str):
        text = spec
    else:
        raise KalgError(f"a border is a mode name ({', '.join(MODES)}), 'constant V' or a pair "
                        f"('constant', V), not {spec!r}")
    words = text.replace(":", " ").replace("=", " ").split()
    mode = ALIASES.get(words[0].lower(), words[0].lower()) if words else ""
    if mode not in MODES or len(words) > 2 or (len(words) == 2 and mode != "constant"):
        raise KalgError(f"unknown border {text!r}: expected one of {', '.join(MODES)} "
                        "(for a value other than 0: 'constant V', or 'constant:V' on the "
                        "command line)")
    if len(words) == 1:
        return Border(mode)
    try:
        value = float(words[1])
    except ValueError:
        raise KalgError(f"border value {words[1]!r} is not a number") from None
    if not math.isfinite(value):
        raise KalgError(f"border value {words[1]!r} is not a finite number")
    return Border(mode, value)


__all__ = ["ALIASES", "DEFAULT", "MODES", "Border", "parse_border"]
