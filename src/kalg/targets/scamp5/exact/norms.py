"""Lower bounds from shift-invariant norms, for the exact search (`codegen.exhaustive`).

For a fixed small kernel h, N_h(v) = the sum of |coefficients| of the convolution h * v is a
norm on kernels that every SCAMP-5 macro respects the way the plain size (h = 1) does:
convolution commutes with shifts and sums, so N_h(shift(v)) = N_h(v), N_h(-v) = N_h(v),
N_h(v / 2) = N_h(v) / 2 and N_h(a + b) <= N_h(a) + N_h(b). Every macro writes sums of at most
three terms +-shift(operand) or +-shift(operand) / 2, so on N_h values the macros are dominated
by the moves of `exhaustive.tap_steps` (write at most the three largest together, or twice the
largest, or copy), and `tap_steps` of the registers' N_h values against N_h(target) is a lower
bound on the instructions still needed, for every h. Different h see different structure: a
target whose differences (h = 1 - x) are large needs many instructions from values whose
differences are small even when their plain sizes are not.

The same holds for the seminorms G_z(v) = |v(z)|, the kernel's polynomial sum n X^dx Y^dy
evaluated at a point z = (X, Y) of the torus |X| = |Y| = 1 (`torus`): a shift multiplies v(z)
by a number of modulus 1, so G_z(shift(v)) = G_z(v), and G_z is absolutely homogeneous and
subadditive. They see frequencies: a target large at some z where the values held are small
needs many instructions (on depth 6 of emboss, a target with small coefficients, they prune
29 % of the three-left states the norms N_h leave). The points are the 12th roots of unity in
each coordinate (`TORUS`), one of each conjugate pair (|v(conj z)| = |v(z)| for real v).
They are evaluated in floating point and rounded up with a margin far above the rounding
error, so a measured value is never below the true one.

`NormBound(target).needs_more(values, left)` is True when, for some h of `FAMILY` or point z,
that bound exceeds `left` (then no program finishes in `left` instructions: a proof). Values
are measured in units of N_h(target) / `UNITS` (G_z(target) / `UNITS`), rounded up (a larger
value can only lower the bound), the target as exactly `UNITS`.
"""

from __future__ import annotations

from itertools import combinations, product

import numpy as np

Taps = tuple[tuple[int, int, int], ...]

UNITS = 64
"""Resolution of the norms in `tap_steps` (the target is this many units): fine enough that
a halved value counts for less than a whole one, coarse enough that `tap_steps`' cache hits."""


def _times(p: dict, q: dict) -> dict:
    out: dict[tuple[int, int], int] = {}
    for (a, b), c in p.items():
        for (d, e), f in q.items():
            out[(a + d, b + e)] = out.get((a + d, b + e), 0) + c * f
    return {k: v for k, v in out.items() if v}


def _family() -> tuple[dict[tuple[int, int], int], ...]:
    """The kernels h: the identity (the plain size); 1 +- shift for every offset with
    |dx|, |dy| <= 2 up to sign; products of two different unit ones (1 +- x)(1 +- y) ... and
    squares; the 5-tap cross and the 3x3 box. Fixed, not chosen per target."""
    one = {(0, 0): 1}
    offsets = [(1, 0), (0, 1), (1, 1), (1, -1), (2, 0), (0, 2), (2, 1), (1, 2), (2, -1),
               (1, -2), (2, 2), (2, -2)]
    family = [one]
    family += [{(0, 0): 1, d: s} for d in offsets for s in (1, -1)]
    unit = offsets[:4]
    family += [_times({(0, 0): 1, d1: s1}, {(0, 0): 1, d2: s2})
               for d1, d2 in combinations(unit, 2) for s1, s2 in product((1, -1), repeat=2)]
    family += [_times({(0, 0): 1, d: s}, {(0, 0): 1, d: s}) for d in unit for s in (1, -1)]
    family.append({(0, 0): 1, (1, 0): 1, (0, 1): 1, (-1, 0): 1, (0, -1): 1})
    family.append({(a, b): 1 for a in (-1, 0, 1) for b in (-1, 0, 1)})
    return tuple(family)


FAMILY = _family()


TORUS = 12
"""The torus points z = (w^a, w^b), w = exp(2 pi i / TORUS), one of each pair {z, conj z}."""


def _points() -> np.ndarray:
    pairs = sorted({min((a, b), ((-a) % TORUS, (-b) % TORUS))
                    for a in range(TORUS) for b in range(TORUS)})
    return np.array(pairs, dtype=np.int64)


POINTS = _points()
_ROOTS = np.exp(2j * np.pi * np.arange(TORUS) / TORUS)


def torus(taps: Taps) -> np.ndarray:
    """G_z of the kernel taps / 2^e for every point z of `POINTS`, times 2^e, whatever e (the
    numerators' polynomial: floating point, error below 1e-12 * the sum of |numerators|)."""
    return np.abs(evaluate(taps))


def evaluate(taps: Taps) -> np.ndarray:
    """The polynomial sum n X^x Y^y of the taps at every point of `POINTS` (complex)."""
    if not taps:
        return np.zeros(len(POINTS), dtype=complex)
    xy = np.array([(x, y) for x, y, _ in taps], dtype=np.int64)
    n = np.array([c for _, _, c in taps], dtype=np.float64)
    return _ROOTS[(POINTS @ xy.T) % TORUS] @ n


def monomials(p: int, q: int, dx: int, dy: int) -> np.ndarray:
    """p / 2^q X^dx Y^dy at every point of `POINTS` (complex): a macro's term."""
    return p / (1 << q) * _ROOTS[(POINTS @ np.array([dx, dy])) % TORUS]


STRONG = 6
"""How many torus points `within_two` tests (those where the target is largest)."""


MARGIN = 1e-9
"""Relative margin added to a floating-point G_z before it is rounded up (the evaluation's
error is below 1e-12 of the sum of the numerators' magnitudes, so a value is never measured
below its true size)."""


def norms(e: int, taps: Taps) -> np.ndarray:
    """N_h of the kernel taps / 2^e for every h of `FAMILY`, times 2^e (exact integers)."""
    v: dict[tuple[int, int], int] = {}
    for x, y, n in taps:
        v[(x, y)] = v.get((x, y), 0) + n
    return np.array([sum(map(abs, _times(v, h).values())) for h in FAMILY], dtype=np.int64)


HEADROOM = 1 << 40
"""Largest sum of a target's numerators |n| whose norm tables fit int64 with room to spare:
N_h is at most 4 times that sum, and `units` multiplies by UNITS (2^6) and shifts by the
difference of two exponents; 2^40 leaves 2^23 for these."""


def fits(size: int) -> bool:
    """Whether a target whose numerators' magnitudes sum to `size` is small enough for
    `NormBound`'s int64 tables (a larger one, such as a 31x31 binomial whose numerators sum to
    2^60, is searched without the norm bounds: fewer prunings, the search still exact)."""
    return size < HEADROOM


class NormBound:
    """The norm bounds for one target (see the module)."""

    def __init__(self, target_e: int, target_taps: Taps, registers: int, steps) -> None:
        """`steps` is `exhaustive.tap_steps` (passed in: this module does not import the
        search)."""
        exact = norms(target_e, target_taps)
        self.useful = np.flatnonzero(exact > 0)
        self.target = exact[self.useful]
        self.target_e = target_e
        size = float(sum(abs(n) for _, _, n in target_taps))
        waves = torus(target_taps) / (1 << target_e)
        # points where the target is tiny measure nothing (and would magnify rounding errors)
        self.waves = np.flatnonzero(waves > 1e-3 * size / (1 << target_e))
        # the target's own rounding error (relative, below 1e-9 at these points) is covered
        # by measuring it slightly low: the values' units can then only come out high
        self.target_waves = waves[self.waves] * (1 - 1e-6)
        # the points where the target is largest (the input measures 1 at every point):
        # the ones `within_two` tests, a few being as strong there as all and far cheaper
        order = np.argsort(-self.target_waves, kind="stable")[:STRONG]
        self.strong = np.sort(order)
        self.registers = registers
        self.steps = steps
        self.cache: dict = {}

    def units(self, key, e: int, taps: Taps) -> np.ndarray:
        """A value's N_h in units of N_h(target) / UNITS, rounded up, per useful h (cached
        by the caller's id `key`)."""
        found = self.cache.get(key)
        if found is None:
            raw = norms(e, taps)[self.useful]
            # raw / 2^e / (target / 2^te) * UNITS, rounded up, in integers
            num = raw * UNITS << max(0, self.target_e - e)
            den = self.target << max(0, e - self.target_e)
            exact = np.minimum(-(-num // den), UNITS)
            found = self.cache[key] = np.concatenate((exact, self._waves(e, taps)))
        return found

    def _waves(self, e: int, taps: Taps) -> np.ndarray:
        """A value's G_z in units of G_z(target) / UNITS, rounded up with the margin, per
        useful point."""
        size = float(sum(abs(n) for _, _, n in taps)) / (1 << e)
        raw = torus(taps)[self.waves] / (1 << e)
        scaled = (raw + MARGIN * (size + 1)) * (UNITS / self.target_waves)
        return np.minimum(np.ceil(scaled), UNITS).astype(np.int64)

    def scaled(self, e: int, taps: Taps) -> tuple[np.ndarray, np.ndarray]:
        """The value v(z) / |target(z)| * UNITS at the `strong` points (complex, floating
        point: what `within_two` combines linearly), and a bound on its error (far above
        the evaluation's, which is below 1e-12 of the sum of the numerators' magnitudes)."""
        scale = UNITS / self.target_waves[self.strong] / (1 << e)
        size = float(sum(abs(n) for _, _, n in taps))
        return evaluate(taps)[self.waves[self.strong]] * scale, MARGIN * (size + 1) * scale

    def within_two(self, held: np.ndarray, made: np.ndarray, err: np.ndarray) -> np.ndarray:
        """For each row of `made` (a value w, as `scaled` gives it, one column per useful
        `strong` point, with `err` bounding its floating-point error): whether the
        registers' `held` units (the `units` rows' torus part at the `strong` points) and w
        could still make the target in two instructions, by the torus seminorms. After w,
        one instruction writes at most m1 = max(the three largest together, twice the
        largest) and the next at most max(m1 + the two largest others, 2 m1) (the moves of
        `exhaustive.tap_steps`, a copy never growing the largest): the target (UNITS) must
        be reachable at every point. w's units are rounded up with a margin far above the
        floating-point error (a larger w only lets more through)."""
        if not len(self.waves) or not len(made):
            return np.ones(len(made), dtype=bool)
        w = np.abs(made)
        w = np.ceil(w + err + MARGIN * (w + UNITS))
        top = np.sort(held, axis=0)[::-1][:3]  # (3 or fewer, points)
        top = np.concatenate((top, np.zeros((3 - len(top), top.shape[1]))), axis=0)
        # the three largest of held + w, per w and point
        a, b, c = top[0][None, :], top[1][None, :], top[2][None, :]
        s1 = np.maximum(a, w)
        s2 = np.maximum(np.minimum(a, w), b)
        s3 = np.maximum(np.minimum(b, w), c)
        m1 = np.maximum(s1 + s2 + s3, 2 * s1)
        m2 = np.maximum(m1 + s1 + s2, 2 * m1)
        return (m2 >= UNITS).all(axis=1)

    def needs_more(self, values: list[np.ndarray], left: int) -> bool:
        """Whether some h proves that more than `left` instructions are needed from registers
        holding values with these `units` (the other registers empty)."""
        if not values or not len(self.useful) + len(self.waves):
            return False
        table = np.sort(np.array(values), axis=0)[::-1]
        top = table[0]
        # One instruction at most triples the largest value: an h whose largest value is
        # below UNITS / 3^left needs more than `left` at once; the others are tried with
        # `tap_steps`, smallest largest value first.
        if (top * 3 ** left < UNITS).any():
            return True
        pad = (0,) * (self.registers - len(values))
        for i in np.argsort(top, kind="stable").tolist():
            if top[i] >= UNITS:
                break
            if self.steps((*table[:, i].tolist(), *pad), UNITS) > left:
                return True
        return False
