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

`NormBound(target).needs_more(values, left)` is True when, for some h of `FAMILY`, that bound
exceeds `left` (then no program finishes in `left` instructions: a proof). Values are measured
in units of N_h(target) / `UNITS`, rounded up (a larger value can only lower the bound), the
target as exactly `UNITS`.
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


def norms(e: int, taps: Taps) -> np.ndarray:
    """N_h of the kernel taps / 2^e for every h of `FAMILY`, times 2^e (exact integers)."""
    out = np.zeros(len(FAMILY), dtype=np.int64)
    for i, h in enumerate(FAMILY):
        acc: dict[tuple[int, int], int] = {}
        for x, y, n in taps:
            for (a, b), c in h.items():
                acc[(x + a, y + b)] = acc.get((x + a, y + b), 0) + n * c
        out[i] = sum(abs(v) for v in acc.values())
    return out


class NormBound:
    """The norm bounds for one target (see the module)."""

    def __init__(self, target_e: int, target_taps: Taps, registers: int, steps) -> None:
        """`steps` is `exhaustive.tap_steps` (passed in: this module does not import the
        search)."""
        exact = norms(target_e, target_taps)
        self.useful = np.flatnonzero(exact > 0)
        self.target = exact[self.useful]
        self.target_e = target_e
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
            found = self.cache[key] = np.minimum(-(-num // den), UNITS)
        return found

    def needs_more(self, values: list[np.ndarray], left: int) -> bool:
        """Whether some h proves that more than `left` instructions are needed from registers
        holding values with these `units` (the other registers empty)."""
        if not values or not len(self.useful):
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
