"""The grid symmetries a kernel keeps, for the exact search's symmetry breaking
(`codegen.exhaustive`).

The eight rotations and reflections of the grid (the dihedral group D4) map the SCAMP-5
macros onto themselves: a move in direction d becomes a move in g(d), two moves that are equal
or perpendicular stay so, and coefficients are unchanged. So if a program computes a kernel T,
the program with every direction mapped by g computes g(T), from the same input (a single tap
at the origin, which g fixes), on the same registers. When g(T) = T, a program state S and its
image g(S) are equally far from T: the exact search needs to search only one of them.

`stabilizer(taps)` lists the non-identity g with g(T) = T, as 2x2 integer matrices acting on
offsets about the origin (the kernel is placed exactly: the input is at (0, 0)); `image(taps,
g)` maps a kernel's taps."""

from __future__ import annotations

from collections.abc import Iterable

Matrix = tuple[int, int, int, int]
"""(a, b, c, d): the offset (x, y) goes to (a x + b y, c x + d y)."""

GROUP: tuple[Matrix, ...] = (
    (1, 0, 0, 1), (0, -1, 1, 0), (-1, 0, 0, -1), (0, 1, -1, 0),   # rotations by 0/90/180/270
    (-1, 0, 0, 1), (1, 0, 0, -1), (0, 1, 1, 0), (0, -1, -1, 0),   # mirrors: x, y, diagonals
)


def image(taps: Iterable[tuple[int, int, int]], g: Matrix) -> tuple[tuple[int, int, int], ...]:
    """The taps (x, y, n) moved by g, sorted (the form `codegen.exhaustive` interns)."""
    a, b, c, d = g
    return tuple(sorted((a * x + b * y, c * x + d * y, n) for x, y, n in taps))


def stabilizer(taps: Iterable[tuple[int, int, int]]) -> tuple[Matrix, ...]:
    """The grid symmetries other than the identity that map the kernel onto itself."""
    taps = tuple(sorted(taps))
    return tuple(g for g in GROUP[1:] if image(taps, g) == taps)
