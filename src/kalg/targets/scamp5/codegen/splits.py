"""Ways to split a sum's term multiset into operands (the choices of add, sub and add3).

Short goals get every split; long ones (a naive decomposition can hand over dozens of terms) get
one-term-off splits and splits along one feature at a time (node, column, row, sign), so the work
stays bounded.
"""

from __future__ import annotations

import functools
import itertools

from kalg.targets.scamp5.codegen.network import Terms

FULL_SPLIT_2 = 8
"""Goals with at most this many terms get every 2-way split; longer ones structured splits."""
FULL_SPLIT_3 = 7
"""Goals with at most this many terms get every 3-way split; longer ones none."""


def two_way(terms: Terms) -> list[tuple[Terms, Terms]]:
    """Splits into two non-empty parts (as index sets: equal terms may give equal splits)."""
    return _all_two_way(terms) if len(terms) <= FULL_SPLIT_2 else _structured_two_way(terms)


def three_way(terms: Terms) -> list[tuple[Terms, Terms, Terms]]:
    """Splits into three non-empty parts, for goals of at most `FULL_SPLIT_3` terms."""
    return _all_three_way(terms) if len(terms) <= FULL_SPLIT_3 else []


def three_way_indices(k: int) -> tuple[tuple[tuple[int, ...], ...], ...]:
    """`three_way` of k terms as positions: the blocks of every split, in the same order."""
    return _three_way_indices(k) if k <= FULL_SPLIT_3 else ()


BALANCED_REST = 7
"""Long goals whose other terms number at most this get `balanced_three_way` splits."""


def balanced_three_way(terms: Terms) -> tuple[tuple[int, ...], ...]:
    """3-way splits (as position blocks) of a long goal (more than `FULL_SPLIT_3` terms) that
    share its most repeated term among the blocks in proportion to their other terms: the
    difference-against-the-centre form K = sum_d c_d (s_d - 1) + ..., e.g. the Laplacian's
    N + E + S + W - 4C as (N - C) + (W - C) + (E + S - 2C), each part one or two `subx`.
    Only where every share is whole; none when no term repeats or the rest is too long."""
    if len(terms) <= FULL_SPLIT_3:
        return ()
    counts: dict[tuple[int, int, int, int], int] = {}
    for t in terms:
        counts[t] = counts.get(t, 0) + 1
    top = max(sorted(counts), key=lambda t: counts[t])
    r = counts[top]
    same = [i for i, t in enumerate(terms) if t == top]
    rest = [i for i, t in enumerate(terms) if t != top]
    if r < 2 or not 3 <= len(rest) <= BALANCED_REST:
        return ()
    out = []
    for blocks in _three_way_indices(len(rest)):
        shares = [r * len(b) for b in blocks]
        if any(s % len(rest) for s in shares):
            continue
        given = iter(same)
        out.append(tuple(tuple(sorted([rest[i] for i in b]
                                      + [next(given) for _ in range(s // len(rest))]))
                         for b, s in zip(blocks, shares, strict=True)))
    return tuple(out)


def _all_two_way(terms: Terms) -> list[tuple[Terms, Terms]]:
    return [(tuple(terms[i] for i in a), tuple(terms[i] for i in b))
            for a, b in _two_way_indices(len(terms))]


@functools.cache
def _two_way_indices(k: int) -> tuple[tuple[tuple[int, ...], tuple[int, ...]], ...]:
    """The splits of positions 0..k-1 into two blocks, in mask order (the same for every goal
    of k terms, so computed once per k)."""
    out = []
    for mask in range(1, 1 << (k - 1)):
        a = tuple(i for i in range(k) if mask >> i & 1)
        b = tuple(i for i in range(k) if not mask >> i & 1)
        out.append((a, b))
    return tuple(out)


def _all_three_way(terms: Terms) -> list[tuple[Terms, Terms, Terms]]:
    """Set partitions into exactly 3 blocks (restricted-growth labelings)."""
    return [tuple(tuple(terms[i] for i in block) for block in blocks)  # type: ignore[misc]
            for blocks in _three_way_indices(len(terms))]


@functools.cache
def _three_way_indices(k: int) -> tuple[tuple[tuple[int, ...], ...], ...]:
    """The partitions of positions 0..k-1 into exactly 3 blocks, in labeling order (once per k)."""
    out = []
    for labels in itertools.product(range(3), repeat=k - 1):
        full = (0, *labels)
        if not _restricted_growth(full) or max(full) != 2:
            continue
        out.append(tuple(tuple(i for i, lab in enumerate(full) if lab == b) for b in range(3)))
    return tuple(out)


def _restricted_growth(labels: tuple[int, ...]) -> bool:
    top = -1
    for lab in labels:
        if lab > top + 1:
            return False
        top = max(top, lab)
    return True


def _structured_two_way(terms: Terms) -> list[tuple[Terms, Terms]]:
    """Splits of long goals: one term off the rest (accumulation, which keeps few values
    alive), and along one feature: node, column, row, sign (each threshold)."""
    out = [(terms[:i] + terms[i + 1:], (t,)) for i, t in enumerate(terms)
           if i == 0 or t != terms[i - 1]]
    for feature in (lambda t: t[0], lambda t: t[1], lambda t: t[2], lambda t: t[3]):
        values = sorted({feature(t) for t in terms})
        for cut in values[1:]:
            a = tuple(t for t in terms if feature(t) < cut)
            b = tuple(t for t in terms if feature(t) >= cut)
            out.append((a, b))
    return out
