"""Decompositions of a filter that make a sub-kernel common to several outputs once.

A filter's outputs often share parts: the turns of one operator share most of their lines, a
bank of kernels that differ in a few taps shares the rest. The e-graph's extraction shares what
its rules make equal, and the filter's own programs share multiples of the input, but nothing
proposes a *common sub-kernel* of the outputs as one value. `common_part(outputs, name)`
builds, for a filter of two or more outputs, decompositions in which each such part is one
value of the DAG, so the code generator computes it once and reads it for every output:

* **shared lines** (`SHARED_COLUMNS`, `SHARED_ROWS`): every output is the sum of its columns
  (rows), each a one-dimensional kernel moved into place; the distinct lines, up to a move along
  the line and a sign, are each one value (by Horner's rule from the input), read by every output
  and column that has it;
* **common part** (`COMMON_PART`, `COMMON_PART_ROWS`): C, the per-tap consensus of the outputs
  (at each offset the nonzero value most outputs have, where at least two have it; ties to the
  smaller magnitude, then the positive), made once; each output is C plus its own rest
  o_i - C; C and the rests are made by shared columns (rows), so a line common to C and a rest
  is made once too.

Nothing here looks at what the kernels are (no class of kernel is recognised): the proposals
depend only on which taps, lines and values the outputs have in common, and a filter whose
outputs share nothing gets none (`common_part_candidates` returns {}). The candidates are
searched like any other; the shortest verified program wins, so they can only make a program
shorter.
"""

from __future__ import annotations

from collections import Counter
from fractions import Fraction

from kalg.algebra.decomp import DagBuilder, Decomposition
from kalg.algebra.kernel import Kernel, dyadic_coefficient
from kalg.targets.scamp5.optimize import horner

SHARED_COLUMNS = "shared columns"
SHARED_ROWS = "shared rows"
COMMON_PART = "common part"
COMMON_PART_ROWS = "common part, by rows"
DIFFERENCES = "outputs from outputs"
DIFFERENCES_ROWS = "outputs from outputs, by rows"

Taps = dict[tuple[int, int], Fraction]


_AXES = {SHARED_COLUMNS: 0, SHARED_ROWS: 1, COMMON_PART: 0, COMMON_PART_ROWS: 1,
         DIFFERENCES: 0, DIFFERENCES_ROWS: 1}
NAMES = tuple(_AXES)
"""The decompositions, in the order they are offered."""


def common_part(outputs: dict[str, Kernel], name: str) -> Decomposition | None:
    """The decomposition `name` (one of `NAMES`) of the filter `outputs` (register -> kernel),
    or None where it shares nothing (no line twice; a consensus of fewer than two taps), for
    fewer than two outputs or a non-dyadic kernel. Its outputs are checked to be the kernels
    asked for."""
    kernels = {r: k.trimmed() for r, k in sorted(outputs.items())}
    if len(kernels) < 2 or not all(k.is_dyadic() and len(k) for k in kernels.values()):
        return None
    axis = _AXES[name]
    if name in (SHARED_COLUMNS, SHARED_ROWS):
        found = _by_lines(kernels, axis) if _lines_shared(kernels, axis) else None
    elif name in (DIFFERENCES, DIFFERENCES_ROWS):
        tree = _difference_tree(kernels)
        found = _from_tree(kernels, tree, axis) if tree else None
    elif (common := _consensus(kernels)) is not None:
        found = _with_common(kernels, common, axis)
    else:
        found = None
    if found is not None:
        built = found.output_kernels()
        assert all(built[r].same_values(k) for r, k in kernels.items()), "common part != kernel"
    return found


def common_part_candidates(outputs: dict[str, Kernel]) -> dict[str, Decomposition]:
    """Every decomposition of `common_part` the filter has (name -> decomposition), in the
    order of `NAMES`; {} where it has none."""
    return {name: d for name in NAMES if (d := common_part(outputs, name)) is not None}


def _lines(k: Kernel, axis: int) -> dict[int, Taps]:
    """`k`'s lines along `axis` (0: columns, keyed by x; 1: rows, keyed by y)."""
    lines: dict[int, Taps] = {}
    for (x, y), c in k.taps.items():
        lines.setdefault((x, y)[axis], {})[(x, y)] = Fraction(c)
    return lines


def _twos(c: Fraction) -> int:
    """The exponent of 2 in `c` (nonzero, dyadic): c = odd · 2^e."""
    n, e = dyadic_coefficient(c)
    return (n & -n).bit_length() - 1 - e


def _canonical(line: Taps) -> tuple[tuple, tuple[int, int], int, int]:
    """(key, offset, sign, e): the line moved to offset (0, 0) at its first tap, divided by
    sign · 2^e so its first coefficient is positive and its coefficients are integers with an
    odd one among them; `offset`, `sign` and `e` (doublings, or halvings where negative) put
    it back."""
    first = min(line)
    sign = 1 if line[first] > 0 else -1
    e = min(_twos(c) for c in line.values())
    scale = sign * Fraction(2) ** -e
    key = tuple(sorted(((x - first[0], y - first[1]), scale * c) for (x, y), c in line.items()))
    return key, first, sign, e


def _line_keys(kernels: dict[str, Kernel], axis: int) -> Counter:
    return Counter(_canonical(line)[0] for k in kernels.values()
                   for line in _lines(k, axis).values())


def _lines_shared(kernels: dict[str, Kernel], axis: int) -> bool:
    """Whether some line (up to a move and a sign) of more than one tap occurs twice."""
    return any(n > 1 and len(key) > 1 for key, n in _line_keys(kernels, axis).items())


def _sum_of_lines(b: DagBuilder, k: Kernel, axis: int, made: dict) -> int:
    """`k` as the sum of its lines along `axis`, each distinct line made once (`made`: key ->
    value, shared across every call on `b`)."""
    acc: int | None = None
    for _, line in sorted(_lines(k, axis).items()):
        key, (dx, dy), sign, e = _canonical(line)
        if key not in made:
            made[key] = horner(b, Kernel.of(dict(key)), from_top=True)
        acc = b.signed_sum(acc, b.shift(b.scaled(made[key], e), dx, dy), sign)
    assert acc is not None
    return acc


def _by_lines(kernels: dict[str, Kernel], axis: int) -> Decomposition:
    b, made = DagBuilder(), {}
    return b.build({r: _sum_of_lines(b, k, axis, made) for r, k in kernels.items()})


def _consensus(kernels: dict[str, Kernel]) -> Kernel | None:
    """The per-tap consensus of the outputs (module docstring), or None where it has fewer
    than two taps (nothing worth sharing)."""
    taps: Taps = {}
    for offset in sorted({o for k in kernels.values() for o in k.domain}):
        values = Counter(Fraction(k.taps[offset]) for k in kernels.values() if offset in k.domain)
        best = max(values.items(), key=lambda vc: (vc[1], -abs(vc[0]), vc[0] > 0))
        if best[1] >= 2:
            taps[offset] = best[0]
    return Kernel.of(taps) if len(taps) >= 2 else None


def _with_common(kernels: dict[str, Kernel], common: Kernel, axis: int) -> Decomposition:
    """Each output as `common` plus its rest, every part by shared lines along `axis`."""
    b, made = DagBuilder(), {}
    c = _sum_of_lines(b, common, axis, made)
    results = {}
    for r, k in kernels.items():
        rest = (k - common).trimmed()
        results[r] = c if not len(rest) else b.add(c, _sum_of_lines(b, rest, axis, made))
    return b.build(results)


REACH = 2
"""How far (steps along each axis) an output is moved to make another from it: as far as two
taps of a 5x5 kernel lie apart along an axis (SCAMP-5's moves are of one or two steps)."""

Edge = tuple[str, int, int, int]
"""(parent register, sign, dx, dy): the output is sign · S^(dx, dy) parent plus a rest."""


def _taps(k: Kernel) -> Taps:
    return {d: Fraction(c) for d, c in k.taps.items() if c != 0}


def _rest(child: Taps, parent: Taps, sign: int, dx: int, dy: int) -> Taps:
    """child - sign · S^(dx, dy) parent, its zero taps dropped."""
    rest = dict(child)
    for (x, y), c in parent.items():
        rest[x + dx, y + dy] = rest.get((x + dx, y + dy), 0) - sign * c
    return {d: c for d, c in rest.items() if c != 0}


def _cheapest_edge(child: Taps, parent: Taps, reg: str) -> tuple[int, Edge]:
    """(taps of the rest, edge): the move and sign of `parent` that leave `child` the fewest
    taps to add (ties: the shortest move, then plus before minus, then the first move)."""
    steps = range(-REACH, REACH + 1)
    n, _, s, dx, dy = min((len(_rest(child, parent, s, dx, dy)), abs(dx) + abs(dy), -s, dx, dy)
                          for s in (1, -1) for dx in steps for dy in steps)
    return n, (reg, -s, dx, dy)


def _difference_tree(kernels: dict[str, Kernel]) -> dict[str, Edge]:
    """Each output made from another output moved, times ±1, plus a rest, where that makes
    the output a sum of fewer terms than its taps (the rest's taps and the moved output): a
    spanning tree of fewest terms over the outputs and the empty kernel (Prim's algorithm from
    the empty kernel, whose edge to an output costs that output's taps; the rest's taps are
    the same either way along an edge, so the tree is a least one whichever way its edges are
    read). Outputs made alone are not in the result; {} where every output is made alone.
    Ties: register order (deterministic)."""
    taps = {r: _taps(k) for r, k in kernels.items()}
    cost = {r: (len(t), None) for r, t in taps.items()}  # best edge into the tree so far
    tree: dict[str, Edge] = {}
    while cost:
        reg = min(cost, key=lambda r: (cost[r][0], r))
        _, edge = cost.pop(reg)
        if edge is not None:
            tree[reg] = edge
        for other in cost:
            n, e = _cheapest_edge(taps[other], taps[reg], reg)
            if n + 1 < cost[other][0]:  # the moved output is one more term of the sum
                cost[other] = (n + 1, e)
    return tree


def _from_tree(kernels: dict[str, Kernel], tree: dict[str, Edge], axis: int) -> Decomposition:
    """The outputs made along `tree` (`_difference_tree`): the others alone, every rest and
    output alone by shared lines along `axis`."""
    b, made = DagBuilder(), {}
    values: dict[str, int] = {}

    def make(reg: str) -> int:
        if reg in values:
            return values[reg]
        if reg not in tree:
            values[reg] = _sum_of_lines(b, kernels[reg], axis, made)
            return values[reg]
        parent, sign, dx, dy = tree[reg]
        moved = b.shift(make(parent), dx, dy)
        rest = _rest(_taps(kernels[reg]), _taps(kernels[parent]), sign, dx, dy)
        if not rest:
            values[reg] = moved if sign > 0 else b.neg(moved)
        else:
            values[reg] = b.signed_sum(_sum_of_lines(b, Kernel.of(rest), axis, made), moved,
                                       sign)
        return values[reg]

    return b.build({r: make(r) for r in kernels})
