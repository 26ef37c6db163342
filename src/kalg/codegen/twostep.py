"""A fast necessary condition for "the target is two instructions away" (the exact search's
last two levels, `codegen.exhaustive`).

`TwoStep(first_forms, last_forms, target).possible(prints)` answers False only when no two
instructions can make the target from registers holding the values whose prints are given.
It works on an over-approximation of the instruction set, so a False is a proof and a True is
only a hint (the search then enumerates the instructions exactly):

* The last instruction F writes t = sum_i f_i * s_i, a form of at most three terms (f_i a
  coefficient times a shift, s_i a register's value). The instruction before it, G, writes
  values w; every value F can read is an old value (any register, not only the ones G left
  alone: a superset) or one of G's results. G's results are w = g(old values) for one of its
  forms g, and, for the division macros, also -w (the second half) or a copy of an old value.
  So for some nonempty set J of F's positions and signs sigma_j in {+1, -1},
  t = (sum_{j in J} sigma_j f_j) * w + sum_{i not in J} f_i * s_i, that is
  w = (t - rest) / D with D the signed sum: "needed" values. The condition is that some
  needed value is also a one-step value g(old values); when D is zero it is t == rest instead.
  Sources may repeat (also a superset: registers may hold equal values).
* Values are compared by prints, the kernel's polynomial evaluated at a fixed point modulo the
  prime 2^31 - 1 (small enough for numpy's int64 products). Equal kernels have equal prints, so
  an existing program is never missed; unequal kernels may collide, which costs only time.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import combinations, product

import numpy as np

P = (1 << 31) - 1
_X, _Y = 1_234_577, 987_654_323
_HALF = pow(2, -1, P)

Shape = tuple[tuple[int, int, int, int], ...]
"""A form without its sources: ((p, q, dx, dy), ...) meaning p / 2^q times a shift."""


def monomial(p: int, q: int, dx: int, dy: int) -> int:
    """The print of p / 2^q at offset (dx, dy)."""
    return p * pow(_HALF, q, P) * pow(_X, dx, P) * pow(_Y, dy, P) % P


def fingerprint(e: int, taps: Sequence[tuple[int, int, int]]) -> int:
    """The print of the kernel sum n * x^dx * y^dy over taps (dx, dy, n), divided by 2^e."""
    return sum(n * monomial(1, 0, x, y) for x, y, n in taps) * pow(_HALF, e, P) % P


def _tuples(n: int, k: int) -> np.ndarray:
    """Every k-tuple of indices below n (repetitions allowed), as a (n^k, k) array."""
    return np.array(list(product(range(n), repeat=k)), dtype=np.int64).reshape(-1, k)


class TwoStep:
    """The two-instruction test for one target and one instruction set (see the module)."""

    def __init__(self, first_forms: set[Shape], last_forms: set[Shape], target: int) -> None:
        self.target = target
        self.first = {k: np.array([[monomial(*t) for t in s] for s in sorted(first_forms)
                                   if len(s) == k], dtype=np.int64).reshape(-1, k)
                      for k in (1, 2, 3)}
        need: dict[int, list] = {0: [], 1: [], 2: []}
        rest: dict[int, list] = {0: [], 1: [], 2: []}
        for shape in sorted(last_forms):
            ms = [monomial(*t) for t in shape]
            for size in range(1, len(ms) + 1):
                for positions in combinations(range(len(ms)), size):
                    others = [m for i, m in enumerate(ms) if i not in positions]
                    for signs in product((1, -1), repeat=size):
                        d = sum(s * ms[i] for s, i in zip(signs, positions, strict=True)) % P
                        if d == 0:
                            rest[len(others)].append(others)
                            continue
                        inv = pow(d, -1, P)
                        need[len(others)].append([target * inv % P,
                                                  *(m * inv % P for m in others)])
        self.need = {r: np.array(sorted(set(map(tuple, rows))), dtype=np.int64).reshape(-1, r + 1)
                     for r, rows in need.items()}
        self.rest = {r: np.array(sorted(set(map(tuple, rows))), dtype=np.int64).reshape(-1, r)
                     for r, rows in rest.items() if r > 0}
        self.zero_rest = bool(rest[0])
        self.tuples: dict[tuple[int, int], np.ndarray] = {}
        self.cache: dict[tuple[int, ...], bool] = {}

    def _idx(self, n: int, k: int) -> np.ndarray:
        found = self.tuples.get((n, k))
        if found is None:
            found = self.tuples[(n, k)] = _tuples(n, k)
        return found

    @staticmethod
    def _combine(coefs: np.ndarray, values: np.ndarray, idx: np.ndarray) -> np.ndarray:
        """sum_i coefs[:, i] * values[idx[:, i]] mod P for every row of coefs and of idx."""
        total = np.zeros((coefs.shape[0], idx.shape[0]), dtype=np.int64)
        for i in range(coefs.shape[1]):
            total = (total + coefs[:, i, None] * values[idx[:, i]][None, :] % P) % P
        return total.ravel()

    def possible(self, prints: Sequence[int]) -> bool:
        """False only if no two instructions make the target from these values (prints mod P,
        see `fingerprint`); cached by the set of values."""
        key = tuple(sorted(set(prints)))
        found = self.cache.get(key)
        if found is None:
            found = self._possible(np.array(key, dtype=np.int64))
            if len(self.cache) >= 1_000_000:
                self.cache.clear()  # a pure cache
            self.cache[key] = found
        return found

    def _possible(self, values: np.ndarray) -> bool:
        n, t = len(values), self.target
        if self.zero_rest and t == 0:
            return True
        for r, coefs in self.rest.items():
            if len(coefs) and (self._combine(coefs, values, self._idx(n, r)) == t).any():
                return True
        one = np.concatenate([self._combine(g, values, self._idx(n, k))
                              for k, g in self.first.items() if len(g)])
        if (one == t).any():
            return True
        needed = []
        for r, rows in self.need.items():
            if not len(rows):
                continue
            if r == 0:
                needed.append(rows[:, 0])
                continue
            part = self._combine(rows[:, 1:], values, self._idx(n, r))
            base = np.repeat(rows[:, 0], len(self._idx(n, r)))
            needed.append((base - part) % P)
        return bool(np.isin(np.concatenate(needed), one).any())
