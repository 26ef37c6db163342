"""Exact kernel values: finite partial maps from 2-D offsets to coefficients in a semiring.

Conventions (../shared/docs/scamp5-isa.md, Stow & Kelly 2022 §2):

* an offset ``(x, y)`` has x growing east and y growing north;
* applying kernel K to image I is a *correlation*: ``out(p) = ⊕_o K(o) ⊗ I(p + o)``;
* written as a matrix, the first row is the northernmost (largest y), columns run west to east;
* "no entry" (a missing offset) differs from an entry equal to zero: it changes the kernel's
  domain, and so the footprint a program must read, but never a value.

Coefficients are exact: ``int`` or ``fractions.Fraction`` in the real semiring, numbers or ±inf
in min-plus and max-plus, ``bool`` in the Boolean semiring. Floats appear only in `apply`.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np

from kalg.diagnostics import SemiringError

Offset = tuple[int, int]
Coef = Any  # int | Fraction in the real semiring; float('inf') allowed in min/max-plus; bool


@dataclass(frozen=True, slots=True, eq=False)
class Semiring:
    """A commutative semiring (⊕, ⊗, zero, one); `neg` is None where ⊕ has no inverse."""

    name: str
    zero: Coef
    one: Coef
    add: Callable[[Coef, Coef], Coef]
    mul: Callable[[Coef, Coef], Coef]
    neg: Callable[[Coef], Coef] | None

    def __repr__(self) -> str:
        return f"Semiring({self.name})"

    def coerce(self, value: Coef) -> Coef:
        """Normalise a coefficient: Fractions with denominator 1 become ints; bools stay bools."""
        if self is BOOLEAN:
            return bool(value)
        if isinstance(value, Fraction) and value.denominator == 1:
            return int(value)
        if isinstance(value, float) and not math.isinf(value):
            raise TypeError(f"inexact coefficient {value!r}: use int or Fraction")
        return value


def _min_plus_mul(a: Coef, b: Coef) -> Coef:
    return a + b


REAL = Semiring("real", 0, 1, operator.add, operator.mul, operator.neg)
"""Ordinary arithmetic (+, ×): the semiring of linear filters."""
MINPLUS = Semiring("minplus", math.inf, 0, min, _min_plus_mul, None)
"""(min, +): shortest paths, grey-scale erosion."""
MAXPLUS = Semiring("maxplus", -math.inf, 0, max, _min_plus_mul, None)
"""(max, +): grey-scale dilation."""
BOOLEAN = Semiring("boolean", False, True, operator.or_, operator.and_, None)
"""(or, and): binary dilation; what SCAMP-5's one-bit digital registers compute."""

SEMIRINGS: dict[str, Semiring] = {s.name: s for s in (REAL, MINPLUS, MAXPLUS, BOOLEAN)}


@dataclass(frozen=True, slots=True)
class Kernel:
    """An immutable kernel. `entries` is sorted by offset; use the constructors, not this field."""

    entries: tuple[tuple[Offset, Coef], ...]
    semiring: Semiring = REAL

    # ----------------------------------------------------------------- construction
    @staticmethod
    def of(taps: Mapping[Offset, Coef] | Iterable[tuple[Offset, Coef]], semiring: Semiring = REAL,
           ) -> Kernel:
        """Build a kernel from offset → coefficient pairs (later duplicates are ⊕-combined)."""
        acc: dict[Offset, Coef] = {}
        items = taps.items() if isinstance(taps, Mapping) else taps
        for (x, y), c in items:
            c = semiring.coerce(c)
            off = (int(x), int(y))
            acc[off] = semiring.add(acc[off], c) if off in acc else c
        return Kernel(tuple(sorted(acc.items())), semiring)

    @staticmethod
    def unit(dx: int = 0, dy: int = 0, value: Coef = None, semiring: Semiring = REAL) -> Kernel:
        """The single-entry kernel holding `value` (default: the semiring's one) at (dx, dy)."""
        return Kernel.of({(dx, dy): semiring.one if value is None else value}, semiring)

    @staticmethod
    def empty(semiring: Semiring = REAL) -> Kernel:
        """The kernel with no entries: the identity of `+`."""
        return Kernel((), semiring)

    @staticmethod
    def from_rows(rows: Sequence[Sequence[Coef | None]], origin: tuple[int, int] | None = None,
                  semiring: Semiring = REAL) -> Kernel:
        """Build from a north-up matrix; `None` is "no entry".

        `origin` is the (row, column) index of offset (0, 0); by default the centre, which needs
        odd height and width.

        >>> Kernel.from_rows([[1, None, -1]]).taps
        {(-1, 0): 1, (1, 0): -1}
        """
        height, width = len(rows), len(rows[0]) if rows else 0
        if any(len(r) != width for r in rows):
            raise ValueError("ragged matrix: every row needs the same number of entries")
        if origin is None:
            if height % 2 == 0 or width % 2 == 0:
                raise ValueError(f"a {height}x{width} matrix has no centre: give an origin")
            origin = (height // 2, width // 2)
        r0, c0 = origin
        return Kernel.of(
            (((c - c0, r0 - r), v) for r, row in enumerate(rows) for c, v in enumerate(row)
             if v is not None),
            semiring,
        )

    # ----------------------------------------------------------------- views
    @property
    def taps(self) -> dict[Offset, Coef]:
        """Offset → coefficient, in sorted offset order."""
        return dict(self.entries)

    @property
    def domain(self) -> frozenset[Offset]:
        return frozenset(o for o, _ in self.entries)

    def __len__(self) -> int:
        return len(self.entries)

    def bounds(self) -> tuple[int, int, int, int]:
        """(min x, max x, min y, max y) of the domain; (0, 0, 0, 0) for the empty kernel."""
        if not self.entries:
            return (0, 0, 0, 0)
        xs = [x for (x, _), _ in self.entries]
        ys = [y for (_, y), _ in self.entries]
        return (min(xs), max(xs), min(ys), max(ys))

    def radius(self) -> int:
        """Largest |x| or |y| in the domain (how far an application reads)."""
        return max((max(abs(x), abs(y)) for (x, y), _ in self.entries), default=0)

    def trimmed(self) -> Kernel:
        """The same values without explicit zero entries (the semiring's zero)."""
        z = self.semiring.zero
        return Kernel(tuple((o, c) for o, c in self.entries if c != z), self.semiring)

    def same_values(self, other: Kernel) -> bool:
        """Equal as functions (a zero entry equals no entry); ignores the domains."""
        return self.semiring is other.semiring and self.trimmed() == other.trimmed()

    def is_dyadic(self) -> bool:
        """Every coefficient is an integer divided by a power of two."""
        return all(_is_dyadic(c) for _, c in self.entries)

    # ----------------------------------------------------------------- algebra
    def _same_semiring(self, other: Kernel, what: str) -> Semiring:
        if self.semiring is not other.semiring:
            raise SemiringError(
                f"cannot {what} a {self.semiring.name} kernel and a {other.semiring.name} kernel")
        return self.semiring

    def __add__(self, other: Kernel) -> Kernel:
        """Pointwise ⊕ on the union of the domains."""
        s = self._same_semiring(other, "add")
        return Kernel.of(list(self.entries) + list(other.entries), s)

    def __neg__(self) -> Kernel:
        neg = self._negation("negate")
        return Kernel(tuple((o, neg(c)) for o, c in self.entries), self.semiring)

    def __sub__(self, other: Kernel) -> Kernel:
        self._same_semiring(other, "subtract")
        self._negation("subtract")
        return self + (-other)

    def _negation(self, what: str) -> Callable[[Coef], Coef]:
        if self.semiring.neg is None:
            raise SemiringError(f"cannot {what} in the {self.semiring.name} semiring: "
                                "it has no additive inverse")
        return self.semiring.neg

    def scale(self, factor: Coef) -> Kernel:
        """⊗ every entry by a scalar (in min-plus, "scaling" adds the scalar)."""
        s = self.semiring
        f = s.coerce(factor)
        return Kernel(tuple((o, s.coerce(s.mul(c, f))) for o, c in self.entries), s)

    def compose(self, other: Kernel) -> Kernel:
        """Composition (convolution of kernels): ⊕ of copies of self shifted by each entry of other.

        Applying the composition equals applying `other` and then `self` (or the other way round:
        composition commutes).
        """
        s = self._same_semiring(other, "compose")
        if s is not REAL:
            return Kernel.of(
                (((x1 + x2, y1 + y2), s.mul(c1, c2))
                 for (x1, y1), c1 in self.entries for (x2, y2), c2 in other.entries),
                s,
            )
        # Plain arithmetic, summed in place and normalised once per entry (`Kernel.of` would
        # normalise every product: most of the front end's time on a large power such as a
        # 3x3 box to the 40th, whose 81x81 result takes 770,000 products). The entries are
        # exact, so the order of the sums does not matter.
        acc: dict[Offset, Coef] = {}
        get = acc.get
        for (x1, y1), c1 in self.entries:
            for (x2, y2), c2 in other.entries:
                off = (x1 + x2, y1 + y2)
                acc[off] = get(off, 0) + c1 * c2
        return Kernel(tuple(sorted((o, s.coerce(c)) for o, c in acc.items())), s)

    def __mul__(self, other: Kernel | Coef) -> Kernel:
        """`k * j` composes two kernels; `k * n` scales by a scalar."""
        return self.compose(other) if isinstance(other, Kernel) else self.scale(other)

    def __rmul__(self, other: Coef) -> Kernel:
        return self.scale(other)

    def power(self, n: int) -> Kernel:
        """n-fold composition of the kernel with itself (n >= 0)."""
        if n < 0:
            raise ValueError(f"power {n}: a kernel has no compositional inverse in general")
        out = Kernel.unit(semiring=self.semiring)
        for _ in range(n):
            out = out.compose(self)
        return out

    def shift(self, dx: int, dy: int) -> Kernel:
        """Move every entry by (dx, dy): composition with the unit kernel at (dx, dy)."""
        return Kernel(tuple(((x + dx, y + dy), c) for (x, y), c in self.entries), self.semiring)

    def _remap(self, f: Callable[[int, int], Offset]) -> Kernel:
        return Kernel.of(((f(x, y), c) for (x, y), c in self.entries), self.semiring)

    def flip(self) -> Kernel:
        """Point reflection (x, y) → (−x, −y): turns a correlation into a convolution."""
        return self._remap(lambda x, y: (-x, -y))

    def mirror_x(self) -> Kernel:
        """Mirror west ↔ east: (x, y) → (−x, y)."""
        return self._remap(lambda x, y: (-x, y))

    def mirror_y(self) -> Kernel:
        """Mirror north ↔ south: (x, y) → (x, −y)."""
        return self._remap(lambda x, y: (x, -y))

    def transpose(self) -> Kernel:
        """Matrix transpose of the north-up matrix: (x, y) → (−y, −x).

        >>> Kernel.from_rows([[1, 0, -1], [2, 0, -2], [1, 0, -1]]).transpose().to_rows()
        [[1, 2, 1], [0, 0, 0], [-1, -2, -1]]
        """
        return self._remap(lambda x, y: (-y, -x))

    # ----------------------------------------------------------------- dense forms
    def to_rows(self, centred: bool = True, fill: Coef = None) -> list[list[Coef]]:
        """North-up matrix; `fill` (default None) marks offsets outside the domain.

        With `centred`, the matrix is the smallest odd square centred on (0, 0) that holds the
        domain, so the centre entry is the origin.
        """
        x0, x1, y0, y1 = self.bounds()
        if centred:
            r = self.radius()
            x0, x1, y0, y1 = -r, r, -r, r
        taps = self.taps
        return [[taps.get((x, y), fill) for x in range(x0, x1 + 1)] for y in range(y1, y0 - 1, -1)]

    def to_array(self, radius: int | None = None, dtype: Any = float) -> np.ndarray:
        """Dense centred (2r+1)² north-up array; no entry reads as the semiring's zero."""
        r = self.radius() if radius is None else radius
        if r < self.radius():
            raise ValueError(f"radius {r} is smaller than the kernel's radius {self.radius()}")
        zero = self.semiring.zero
        arr = np.full((2 * r + 1, 2 * r + 1), zero, dtype=dtype)
        for (x, y), c in self.entries:
            arr[r - y, r + x] = c if dtype is object else float(c)
        return arr

    @staticmethod
    def from_array(arr: np.ndarray, semiring: Semiring = REAL) -> Kernel:
        """Inverse of `to_array` for odd square arrays of ints/Fractions (every cell an entry).

        Floats are read exactly (Fraction(0.1) is the binary value); ±inf stays infinite, for
        min-plus and max-plus arrays.
        """
        rows = [[semiring.coerce(_exact(v)) for v in row] for row in arr.tolist()]
        return Kernel.from_rows(rows, semiring=semiring)

    # ----------------------------------------------------------------- application
    def apply(self, image: np.ndarray) -> np.ndarray:
        """Correlate an image (or a batch, shape ``(..., H, W)``) with this kernel.

        Row 0 of the array is the north edge. Outside the image reads as the semiring's zero
        (zero fill for real kernels), matching ``scipy.ndimage.correlate(mode="constant")``.
        """
        s = self.semiring
        img = np.asarray(image, dtype=bool if s is BOOLEAN else float)
        r = self.radius()
        pad = [(0, 0)] * (img.ndim - 2) + [(r, r), (r, r)]
        padded = np.pad(img, pad, constant_values=s.zero)
        h, w = img.shape[-2:]
        out = np.full(img.shape, s.zero, dtype=img.dtype)
        for (x, y), c in self.entries:
            view = padded[..., r - y: r - y + h, r + x: r + x + w]
            term = np.logical_and(view, c) if s is BOOLEAN else (
                view * float(c) if s is REAL else view + float(c))
            out = np_add(s)(out, term)
        return out

    def __str__(self) -> str:
        rows = (" ".join("." if v is None else str(v) for v in row) for row in self.to_rows())
        return "[" + "; ".join(rows) + "]"


def np_add(s: Semiring) -> Callable[[np.ndarray, np.ndarray], np.ndarray]:
    """The semiring's ⊕ on numpy arrays, elementwise."""
    return {"real": np.add, "minplus": np.minimum, "maxplus": np.maximum,
            "boolean": np.logical_or}[s.name]


def _exact(value: Coef) -> Coef:
    if isinstance(value, Fraction | int | bool) or (isinstance(value, float) and math.isinf(value)):
        return value
    return Fraction(value)


def _is_dyadic(c: Coef) -> bool:
    return dyadic_coefficient(c) is not None


# ----------------------------------------------------------------- dyadic arithmetic
Dyadic = tuple[int, dict[Offset, int]]
"""A real kernel whose coefficients are integers over powers of two, as (e, offset → n): the
coefficient at each offset is n / 2**e. Exact, like `Kernel`, but its arithmetic is on
integers: the symbolic simulator and a decomposition's kernels (hundreds of values of
hundreds of taps each, for a large kernel) add and halve Fractions by the hundred thousand,
several times slower. Build with `to_dyadic`, combine with `dyadic_combination`, read back
with `from_dyadic`."""


def dyadic_coefficient(c: Coef) -> tuple[int, int] | None:
    """A coefficient as (n, e) with c = n / 2**e, or None if it is no such number."""
    if isinstance(c, int):  # bool too: the real semiring reads it as 0 or 1
        return int(c), 0
    if isinstance(c, Fraction):
        d = c.denominator
        if d & (d - 1) == 0:
            return c.numerator, d.bit_length() - 1
    return None


def to_dyadic(k: Kernel) -> Dyadic | None:
    """`k` (real) as a `Dyadic`, or None if a coefficient is not an integer over a power of
    two (or `k` is not real). Explicit zero entries are kept: they are the kernel's domain."""
    if k.semiring is not REAL:
        return None
    parts = []
    for o, c in k.entries:
        if (nc := dyadic_coefficient(c)) is None:
            return None
        parts.append((o, nc))
    e = max((p[1] for _, p in parts), default=0)
    return e, {o: n << (e - f) for o, (n, f) in parts}


def dyadic_combination(terms: Iterable[tuple[int, int, Dyadic, int, int]]) -> Dyadic:
    """Σ (n / 2**f) · value moved by (dx, dy), for each (n, f, value, dx, dy) of `terms`: the
    union of the moved domains (an entry that cancels stays, as a zero, as `Kernel.__add__`
    keeps it). A moved value holds, at offset o + (dx, dy), what it held at o (`Kernel.shift`)."""
    terms = list(terms)
    e = max((f + v[0] for _, f, v, _, _ in terms), default=0)
    acc: dict[Offset, int] = {}
    get = acc.get
    for n, f, (ev, entries), dx, dy in terms:
        m = n << (e - f - ev)
        if dx or dy:
            for (x, y), c in entries.items():
                o = (x + dx, y + dy)
                acc[o] = get(o, 0) + c * m
        else:
            for o, c in entries.items():
                acc[o] = get(o, 0) + c * m
    return e, acc


def from_dyadic(value: Dyadic, trim: bool = False) -> Kernel:
    """The real `Kernel` of a `Dyadic` (`trim`: without its zero entries). Its coefficients
    are ints where whole, else Fractions in lowest terms, as `Semiring.coerce` leaves them."""
    e, entries = value
    d = 1 << e
    out = []
    for o in sorted(entries):
        n = entries[o]
        if n == 0 and trim:
            continue
        out.append((o, n >> e if n % d == 0 else Fraction(n, d)))
    return Kernel(tuple(out), REAL)
