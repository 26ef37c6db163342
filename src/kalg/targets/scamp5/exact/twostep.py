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

import functools
from collections.abc import Sequence
from itertools import combinations, product
from typing import NamedTuple

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


class _Table:
    """Rows of linear forms sum_i c_i * v[a_i] (at most three terms) over every choice of the
    source indices a_i among n values, evaluated by gathering from the table of products
    c * v (one outer product and three gathers per evaluation)."""

    def __init__(self, rows: list[tuple[int, ...]]) -> None:
        self.coefs = sorted({c for row in rows for c in row})
        where = {c: i for i, c in enumerate(self.coefs)}
        self.rows = [tuple(where[c] for c in row) for row in rows]
        self.array = np.array(self.coefs, dtype=np.int64)
        self.gathers: dict[int, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}
        self.with_gathers: dict[int, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}

    def _gathers(self, n: int) -> tuple[np.ndarray, np.ndarray]:
        """(row of each result, (3, results) positions in the flattened product table)."""
        found = self.gathers.get(n)
        if found is None:
            zero = len(self.coefs) * n
            rows, cols = [], []
            for r, row in enumerate(self.rows):
                for sources in product(range(n), repeat=len(row)):
                    rows.append(r)
                    cols.append([c * n + a for c, a in zip(row, sources, strict=True)]
                                + [zero] * (3 - len(row)))
            found = self.gathers[n] = (np.array(rows, dtype=np.int64),
                                       np.array(cols, dtype=np.int64).reshape(-1, 3).T.copy())
        return found

    def evaluate(self, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(row index, value mod P) of every row over every choice of sources."""
        rows, cols = self._gathers(len(values))
        table = np.append((self.array[:, None] * values[None, :] % P).ravel(), 0)
        return rows, (table[cols[0]] + table[cols[1]] + table[cols[2]]) % P

    def _with_gathers(self, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """For n held values and one more value w (index n): the source choices that read w at
        least once, as (row of each, (3, results) positions of the terms not reading w in the
        product table of the n held values, the summed coefficient of the terms reading w)."""
        found = self.with_gathers.get(n)
        if found is None:
            zero = len(self.coefs) * n
            rows, cols, slopes = [], [], []
            for r, row in enumerate(self.rows):
                for sources in product(range(n + 1), repeat=len(row)):
                    if n not in sources:
                        continue
                    rows.append(r)
                    cols.append([c * n + a if a < n else zero
                                 for c, a in zip(row, sources, strict=True)]
                                + [zero] * (3 - len(row)))
                    slopes.append(sum(self.coefs[c] for c, a in zip(row, sources, strict=True)
                                      if a == n) % P)
            found = self.with_gathers[n] = (
                np.array(rows, dtype=np.int64),
                np.array(cols, dtype=np.int64).reshape(-1, 3).T.copy(),
                np.array(slopes, dtype=np.int64))
        return found

    def evaluate_with(self, values: np.ndarray, extra: np.ndarray
                      ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The rows over the source choices that read one more value w at least once, for
        every w of `extra`: (row index, a, (len(extra), results) values a + b * w mod P),
        a and b per choice fixed by the held values, so this costs one pass over the held
        values and one product per w and choice."""
        rows, cols, slopes = self._with_gathers(len(values))
        table = np.append((self.array[:, None] * values[None, :] % P).ravel(), 0)
        base = (table[cols[0]] + table[cols[1]] + table[cols[2]]) % P
        return rows, base, (base[None, :] + slopes[None, :] * extra[:, None] % P) % P


class _Tables(NamedTuple):
    """The parts of `TwoStep` that do not depend on the target (`_tables`)."""

    first: _Table
    """The one-step table."""
    need: _Table
    """The needed values' table: the needed value is target / D - rest / D; the rows hold the
    rest's coefficients over D."""
    rest: _Table
    """The rests of D = 0 (not empty)."""
    zero_rest: bool
    """Whether some D = 0 has an empty rest."""
    inverses: dict[int, tuple[np.ndarray, np.ndarray]]
    """The cache of pair inverses."""
    bits: np.ndarray
    """A scratch bitmap."""
    over: np.ndarray
    """1 / D per row of `need`: the target's part is target * over."""


@functools.lru_cache(maxsize=16)
def _tables(first_forms: tuple[Shape, ...], last_forms: tuple[Shape, ...]) -> _Tables:
    """The parts of `TwoStep` that do not depend on the target, made once per instruction set
    in a process (many small searches share them, `codegen.kept`)."""
    first = _Table([tuple(monomial(*t) for t in s) for s in first_forms])
    needs, rests = set(), []
    for shape in last_forms:
        ms = [monomial(*t) for t in shape]
        for size in range(1, len(ms) + 1):
            for positions in combinations(range(len(ms)), size):
                others = [m for i, m in enumerate(ms) if i not in positions]
                for signs in product((1, -1), repeat=size):
                    d = sum(s * ms[i] for s, i in zip(signs, positions, strict=True)) % P
                    if d == 0:
                        rests.append(tuple(others))
                        continue
                    inv = pow(d, -1, P)
                    needs.add((inv, tuple(m * inv % P for m in others)))
    unique = sorted(needs)
    inverses: dict[int, tuple[np.ndarray, np.ndarray]] = {}
    return _Tables(first, _Table([n for _, n in unique]), _Table(sorted({r for r in rests if r})),
                   any(not r for r in rests), inverses, np.zeros(_MASK + 1, dtype=bool),
                   np.array([i for i, _ in unique], dtype=np.int64))


class TwoStep:
    """The two-instruction test for one target and one instruction set (see the module)."""

    def __init__(self, first_forms: set[Shape], last_forms: set[Shape], target: int) -> None:
        self.target = target
        tables = _tables(tuple(sorted(first_forms)), tuple(sorted(last_forms)))
        self.first, self.need, self.rest = tables.first, tables.need, tables.rest
        self.zero_rest, self.inverses, self.bits = tables.zero_rest, tables.inverses, tables.bits
        self.bases = target * tables.over % P
        self.cache: dict[tuple[int, ...], bool] = {}

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
        return self._held(values)[0]

    def _held(self, values: np.ndarray) -> tuple[bool, np.ndarray, np.ndarray]:
        """(`possible` of the held values alone, the sorted values one instruction makes from
        them, the values the last instruction needs from them); the arrays are empty where the
        answer comes before they are computed."""
        t, empty = self.target, np.zeros(0, dtype=np.int64)
        if self.zero_rest and t == 0:
            return True, empty, empty
        if self.rest.rows and (self.rest.evaluate(values)[1] == t).any():
            return True, empty, empty
        one = np.sort(self.first.evaluate(values)[1])
        rows, parts = self.need.evaluate(values)
        needed = (self.bases[rows] - parts) % P
        at = np.minimum(np.searchsorted(one, needed), len(one) - 1)
        hit = bool((one[at] == needed).any() or one[np.searchsorted(one, t) % len(one)] == t)
        return hit, one, needed

    def possible_with(self, held: Sequence[int], extra: Sequence[int]) -> np.ndarray:
        """`possible([*held, w])` for every print w of `extra`, as a boolean array: the same
        answers, computed with the held values' part once. With V = held + [w], every form
        value over V is either a form value over the held values (computed once) or reads w
        (a + b * w, `_Table.evaluate_with`), so "a needed value is a one-step value" splits
        into held-held (once), held-w, w-held and w-w parts (the last per w)."""
        m = len(extra)
        if m == 0:
            return np.zeros(0, dtype=bool)
        t = self.target
        if self.zero_rest and t == 0:
            return np.ones(m, dtype=bool)
        values = np.array(sorted(set(held)), dtype=np.int64)
        ws = np.array(extra, dtype=np.int64)
        hit, one, needed = self._held(values)
        if hit:
            return np.ones(m, dtype=bool)
        needed = np.sort(needed)
        found = np.zeros(m, dtype=bool)
        if self.rest.rows:
            found |= (self.rest.evaluate_with(values, ws)[2] == t).any(axis=1)
        _, first_base, one_w = self.first.evaluate_with(values, ws)
        rows_w, need_base, parts_w = self.need.evaluate_with(values, ws)
        need_base = (self.bases[rows_w] - need_base) % P
        needed_w = (need_base[None, :] - parts_w) % P
        found |= self._filtered(needed_w, one) | self._filtered(one_w, needed) | \
            (one_w == t).any(axis=1)
        # w-w: a needed value B - s*w equals a one-step value a + b*w exactly when
        # (s + b) w = B - a, so the w that match are solved for once per state (the inverses
        # of s + b depend only on the tables), not compared per w.
        inverse, degenerate = self._pair_inverses(len(values))
        gap = (need_base[:, None] - first_base[None, :]) % P
        if (gap[degenerate] == 0).any():
            return np.ones(m, dtype=bool)
        solved = np.sort((gap * inverse % P)[~degenerate])
        return found | _member(ws[:, None], solved)

    def _pair_inverses(self, n: int) -> tuple[np.ndarray, np.ndarray]:
        """For n held values: 1 / (s + b) mod P over every pair of a needed value's slope s
        (its coefficient of w, negated) and a one-step value's slope b, and where s + b is 0
        (cached per n)."""
        found = self.inverses.get(n)
        if found is None:
            _, _, need_slope = self.need._with_gathers(n)
            _, _, first_slope = self.first._with_gathers(n)
            total = (need_slope[:, None] + first_slope[None, :]) % P
            degenerate = total == 0
            found = self.inverses[n] = (_inverse(np.where(degenerate, 1, total)), degenerate)
        return found

    def _filtered(self, queries: np.ndarray, table: np.ndarray) -> np.ndarray:
        """`_member`, with a bitmap of the table's low bits as a first filter: only the
        queries it lets through are looked up in the sorted table."""
        if table.size == 0 or queries.size == 0:
            return np.zeros(len(queries), dtype=bool)
        low = table & _MASK
        self.bits[low] = True
        rows, cols = np.nonzero(self.bits[queries & _MASK])
        self.bits[low] = False
        found = np.zeros(len(queries), dtype=bool)
        if rows.size:
            found[rows[_in_sorted(queries[rows, cols], table)]] = True
        return found


_MASK = (1 << 20) - 1


def _inverse(values: np.ndarray) -> np.ndarray:
    """Elementwise 1 / v mod P for nonzero v (v^(P-2), by repeated squaring in int64: every
    product of two residues is below 2^62)."""
    result, base, e = np.ones_like(values), values % P, P - 2
    while e:
        if e & 1:
            result = result * base % P
        base, e = base * base % P, e >> 1
    return result


def _member(queries: np.ndarray, table: np.ndarray) -> np.ndarray:
    """Per row of `queries`: whether any of its values is in the sorted array `table`."""
    if table.size == 0 or queries.size == 0:
        return np.zeros(len(queries), dtype=bool)
    return _in_sorted(queries.ravel(), table).reshape(queries.shape).any(axis=1)


def _in_sorted(values: np.ndarray, table: np.ndarray) -> np.ndarray:
    """Whether each of `values` is in the sorted, non-empty array `table`."""
    at = np.minimum(np.searchsorted(table, values), table.size - 1)
    return table[at] == values
