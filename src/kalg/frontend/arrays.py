"""Arrays of exact numbers as .kalg text: `kalg_text`, the front end's door for kernels given as
arrays (`kalg.compile([[1, 2, 1]], divisor=4)`) rather than written in a file.

Every entry is written exactly; floats only where an approximation will round them.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from decimal import Decimal
from fractions import Fraction
from numbers import Integral, Rational
from typing import Any

import numpy as np

from kalg.diagnostics import KalgError
from kalg.targets.scamp5.registers import SIMULATED_REGISTERS

__all__ = ["kalg_text"]


def kalg_text(source: Any, *, divisor: Any = None, approx: Any = None,
              origin: tuple[int, int] | None = None, name: str | None = None,
              free_names: bool = False) -> str:
    """The .kalg text of an array (`kernel`) or a register → array mapping (`filter`), with
    every entry written exactly (`free_names`: a filter's outputs are any names, as on the cpu
    target, not registers). Raises KalgError for floats without `approx`, ragged or
    non-2-D arrays, and entries that are not numbers.

    >>> print(kalg_text([[1, 2, 1]], divisor=4), end="")
    kernel array = [1 2 1] / 4
    >>> print(kalg_text({"A": [[1, 0, -1]], "B": [[-1], [0], [1]]}), end="")
    filter array = [A: [1 0 -1], B: [-1; 0; 1]]
    """
    floats_ok = approx is not None
    register = _name if free_names else _register
    tail = (f" / {_number(divisor, True, 'divisor')}" if divisor is not None else "")
    setting = f" with approx {_approx_text(approx)}" if approx is not None else ""
    if isinstance(source, Mapping):
        if not source:
            raise KalgError("a filter needs at least one output register")
        parts = [f"{register(reg)}: {_matrix(arr, floats_ok, origin)}{tail}"
                 for reg, arr in source.items()]
        return f"filter {name or 'array'} = [{', '.join(parts)}]{setting}\n"
    return f"kernel {name or 'array'} = {_matrix(source, floats_ok, origin)}{tail}{setting}\n"


def _name(name: object) -> str:
    if not isinstance(name, str) or not re.fullmatch(r"[A-Za-z_][A-Za-z_0-9]*", name):
        raise KalgError(f"a filter's outputs are names such as 'edges' or 'A', not {name!r}")
    return name


def _register(reg: object) -> str:
    if not isinstance(reg, str) or reg.upper() not in SIMULATED_REGISTERS:
        raise KalgError(f"a filter's outputs are registers such as 'A' or 'B', not {reg!r}")
    return reg.upper()


def _matrix(array: Any, floats_ok: bool, origin: tuple[int, int] | None) -> str:
    rows = array.tolist() if isinstance(array, np.ndarray) else array
    if (not isinstance(rows, Sequence) or isinstance(rows, str) or not rows
            or not all(isinstance(r, Sequence) and not isinstance(r, str) for r in rows)):
        raise KalgError("a kernel array must be 2-D: a list of rows (north first), e.g. "
                        "[[1, 2, 1]] or a 2-D numpy array")
    width = len(rows[0])
    if width == 0 or any(len(r) != width for r in rows):
        raise KalgError(f"a kernel array must be rectangular and non-empty; row lengths "
                        f"{[len(r) for r in rows]}")
    text = "[" + "; ".join(" ".join(_entry(v, floats_ok) for v in r) for r in rows) + "]"
    if origin is not None:
        return f"{text} @ ({int(origin[0])}, {int(origin[1])})"
    if len(rows) % 2 == 0 or width % 2 == 0:
        raise KalgError(f"a {len(rows)}x{width} array has no centre: give origin=(row, col), "
                        "the 0-based cell of offset (0, 0)")
    return text


def _entry(value: Any, floats_ok: bool) -> str:
    return "." if value is None else _number(value, floats_ok, "entry")


def _number(value: Any, floats_ok: bool, what: str) -> str:
    """An exact .kalg literal for `value`; floats only when an approximation will round them
    (written as their shortest decimal: 1/9 → 0.1111111111111111, then rounded)."""
    if isinstance(value, bool | np.bool_):
        raise KalgError(f"a kernel {what} must be a number, not {value!r}")
    if isinstance(value, Integral | np.integer):
        return str(int(value))
    if isinstance(value, Rational):
        f = Fraction(value)
        return str(f.numerator) if f.denominator == 1 else f"{f.numerator}/{f.denominator}"
    if isinstance(value, str):
        try:
            Fraction(value.strip())
        except (ValueError, ZeroDivisionError):
            raise KalgError(f"kernel {what} {value!r} is not an exact number (write e.g. '3', "
                            "'-0.25' or '3/4')") from None
        return value.strip().replace(" ", "")
    if isinstance(value, Decimal):
        return _decimal(value)
    if isinstance(value, float | np.floating):
        if not math.isfinite(float(value)):  # before Fraction(value), which cannot take it
            raise KalgError(f"kernel {what} {float(value)!r} is not finite")
        if not floats_ok:
            stored = Fraction(float(value))
            why = (f"which is not exact ({float(value)!r} is stored as {stored})"
                   if stored.denominator > 1 << 16 else
                   f"and kalg takes floats only to round them (most are not the number "
                   f"written: 0.1 is stored as {Fraction(0.1)})")
            raise KalgError(
                f"kernel {what} {float(value)!r} is a float, {why}: give exact numbers (ints, "
                "fractions.Fraction, or strings such as '0.25' or '1/9') with divisor=..., or "
                "approx=DEPTH to round it to a multiple of 2^-DEPTH")
        return _decimal(Decimal(repr(float(value))))
    raise KalgError(f"kernel {what} {value!r} is not a number")


def _decimal(value: Decimal) -> str:
    text = format(value, "f")
    return text.rstrip("0").rstrip(".") if "." in text else text


def _approx_text(approx: Any) -> str:
    """`approx` as the text after 'with approx': a depth, or a mapping with depth/max_error."""
    if isinstance(approx, Integral) and not isinstance(approx, bool) and approx >= 0:
        return f"depth {int(approx)}"
    if isinstance(approx, Mapping) and set(approx) <= {"depth", "max_error"} and approx:
        parts = []
        if "depth" in approx:
            parts.append(f"depth {int(approx['depth'])}")
        if "max_error" in approx:
            parts.append(f"max_error {_number(approx['max_error'], True, 'max_error')}")
        return " ".join(parts)
    raise KalgError(f"approx must be a depth (an integer >= 0) or "
                    f"{{'depth': D, 'max_error': E}}, not {approx!r}")
