"""Power-of-two approximation of real kernels: exact `Kernel` → dyadic `Kernel` + the error made.

SCAMP-5 has no multiplier; it adds, subtracts and halves. A coefficient it can realise exactly
is therefore *dyadic* (an integer over a power of two). Like AUKE (Debrunner et al., TACO 2019,
§2.1: each coefficient as a sum of signed powers of two down to 2^-D) and Cain (Stow et al.,
LCPC 2020, §3.1: each coefficient as the nearest whole number of atoms worth 2^-D), kalg rounds
every coefficient to the nearest multiple of 2^-D, for a depth D. The error this introduces on
one coefficient is at most 2^-(D+1); kalg reports the largest one, exactly.

`pow2_digits` writes a dyadic coefficient in canonical signed-digit (non-adjacent) form, the
fewest signed powers of two that sum to it, which is what a multiply-free program adds up.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from fractions import Fraction

from kalg.algebra.kernel import REAL, Kernel
from kalg.diagnostics import KalgSemanticError

DEFAULT_MAX_DEPTH = 16
"""Deepest depth tried when only a maximum error is given (an error of at most 2^-17)."""
MAX_DEPTH = 32
"""Deepest depth a .kalg file may ask for: 2^-32 is far below SCAMP-5's analogue noise."""


class ApproximationError(KalgSemanticError):
    """No depth within the allowed maximum meets the requested maximum error."""


def round_to_depth(value: Fraction | int, depth: int) -> Fraction:
    """The multiple of 2^-depth nearest to `value`; halves round away from zero.

    Rounding halves away from zero keeps the approximation odd-symmetric:
    round_to_depth(-v, d) == -round_to_depth(v, d).

    >>> round_to_depth(Fraction(1, 3), 2)
    Fraction(1, 4)
    >>> round_to_depth(Fraction(-3, 8), 2)
    Fraction(-1, 2)
    """
    if depth < 0:
        raise ValueError(f"depth must be >= 0, got {depth}")
    scaled = Fraction(value) * 2**depth
    whole, rest = divmod(abs(scaled), 1)
    whole += 1 if rest >= Fraction(1, 2) else 0
    return Fraction(whole if scaled >= 0 else -whole, 2**depth)


def depth_error(kernel: Kernel, depth: int) -> Fraction:
    """Largest |c - round_to_depth(c, depth)| over the kernel's coefficients."""
    return max((abs(Fraction(c) - round_to_depth(c, depth)) for _, c in kernel.entries),
               default=Fraction(0))


def choose_depth(kernel: Kernel, depth: int, max_error: Fraction | None = None) -> int:
    """The depth to approximate at: `depth` itself without `max_error`, else the smallest
    depth d <= `depth` whose error is at most `max_error` (ApproximationError if none is)."""
    _require_real(kernel)
    if max_error is None:
        return depth
    for d in range(depth + 1):
        if depth_error(kernel, d) <= max_error:
            return d
    raise ApproximationError(
        f"no approximation depth up to {depth} keeps every coefficient within max_error "
        f"{max_error} (depth {depth} leaves an error of {depth_error(kernel, depth)})",
        hint="raise the depth or the max_error")


def approximate(kernel: Kernel, depth: int, max_error: Fraction | None = None,
                ) -> tuple[Kernel, Fraction]:
    """Round every coefficient to a multiple of 2^-d; return the new kernel and its error.

    d is `choose_depth(kernel, depth, max_error)`. The domain is kept: an entry that rounds to
    zero stays an entry (it still belongs to the kernel's footprint).

    >>> k, err = approximate(Kernel.from_rows([[1, 1, 1]]).scale(Fraction(1, 3)), 3)
    >>> k.taps, err
    ({(-1, 0): Fraction(3, 8), (0, 0): Fraction(3, 8), (1, 0): Fraction(3, 8)}, Fraction(1, 24))
    """
    d = choose_depth(kernel, depth, max_error)
    rounded = Kernel(tuple((o, REAL.coerce(round_to_depth(c, d))) for o, c in kernel.entries),
                     REAL)
    return rounded, depth_error(kernel, d)


def pow2_digits(value: Fraction | int) -> list[tuple[int, int]]:
    """Canonical signed-digit form of a dyadic number: [(sign, exponent), ...], largest first.

    The sum of sign * 2**exponent equals `value`; no two exponents are adjacent, which makes
    the number of digits minimal. Zero has no digits.

    >>> pow2_digits(Fraction(3, 4))
    [(1, 0), (-1, -2)]
    >>> pow2_digits(7)
    [(1, 3), (-1, 0)]
    """
    value = Fraction(value)
    denominator = value.denominator
    if denominator & (denominator - 1):
        raise ValueError(f"{value} is not dyadic: approximate it first")
    numerator, exponent = value.numerator, -(denominator.bit_length() - 1)
    digits: list[tuple[int, int]] = []
    while numerator:
        if numerator % 2:
            digit = 2 - numerator % 4  # ±1, chosen so that the rest is divisible by 4
            digits.append((digit, exponent))
            numerator -= digit
        numerator //= 2
        exponent += 1
    return digits[::-1]


def _require_real(kernel: Kernel) -> None:
    if kernel.semiring is not REAL:
        raise ValueError(f"only real kernels are approximated, not {kernel.semiring.name} ones")


@dataclass(frozen=True, slots=True)
class ApproximationReport:
    """What rounding a kernel did to it, beyond its largest coefficient error: the L1 norm of
    the coefficient error (the largest error on an image of values in [-1, 1]) and the gain
    (DC) error, the sum of the coefficients - a flat image's brightness - against the exact
    sum (a 101x101 box rounded at depth 16 keeps every coefficient within 5e-6 and comes out
    6.6% too dark). All exact; `gain_relative` is None where the exact gain is 0."""

    largest: Fraction
    l1: Fraction
    gain: Fraction
    """The approximated kernel's sum of coefficients."""
    exact_gain: Fraction
    gain_relative: Fraction | None

    def describe(self) -> str:
        """'L1 error 0.0013, gain 0.9843 (exact 1, -1.57%)'."""
        gain = (f"{100 * float(self.gain_relative):+.3g}%" if self.gain_relative is not None
                else f"error {float(self.gain - self.exact_gain):.3g}")
        return (f"L1 error {float(self.l1):.3g}, gain (DC) {float(self.gain):.6g} against "
                f"{float(self.exact_gain):.6g} exact ({gain})")

    def as_dict(self) -> dict[str, float | None]:
        """Floats, for --json and --stats."""
        return {"largest_coefficient_error": float(self.largest), "l1_error": float(self.l1),
                "gain": float(self.gain), "exact_gain": float(self.exact_gain),
                "gain_relative_error": (None if self.gain_relative is None
                                        else float(self.gain_relative))}


def report(exact: Kernel | Iterable[Kernel], rounded: Kernel | Iterable[Kernel],
           ) -> ApproximationReport:
    """The errors of `rounded` against `exact` (one kernel each, or one per input of a filter
    over several inputs, in the same order: the gain is then the sum over them).

    >>> k = Kernel.from_rows([[1, 1, 1]]).scale(Fraction(1, 3))
    >>> r = report(k, approximate(k, 3)[0])
    >>> r.largest, r.l1, r.gain, r.gain_relative
    (Fraction(1, 24), Fraction(1, 8), Fraction(9, 8), Fraction(1, 8))
    """
    pairs = (list(zip(exact, rounded, strict=True)) if not isinstance(exact, Kernel)
             else [(exact, rounded)])
    largest = l1 = gain = exact_gain = Fraction(0)
    for e, r in pairs:
        got = dict(r.entries)
        for offset, c in e.entries:
            diff = abs(Fraction(got.get(offset, 0)) - Fraction(c))
            largest, l1 = max(largest, diff), l1 + diff
        gain += sum((Fraction(c) for _, c in r.entries), Fraction(0))
        exact_gain += sum((Fraction(c) for _, c in e.entries), Fraction(0))
    relative = (gain - exact_gain) / exact_gain if exact_gain else None
    return ApproximationReport(largest, l1, gain, exact_gain, relative)
