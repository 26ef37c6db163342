"""Hand-built decompositions of the benchmark kernels, in shapes an extractor would produce.

Each builder returns a `Decomposition` whose outputs are named registers. The shapes are plain
algebra (separable factors, shared smoothing), not tuned for the code generator.
"""

from __future__ import annotations

from collections.abc import Callable

from kalg.algebra.decomp import DagBuilder, Decomposition


def _halves(b: DagBuilder, v: int, n: int) -> int:
    for _ in range(n):
        v = b.half(v)
    return v


def _binomial(b: DagBuilder, v: int, dx: int, dy: int) -> int:
    """(1 + s)(1 + s^-1) along (dx, dy): [1 2 1] centred."""
    a = b.add(v, b.shift(v, dx, dy))
    return b.add(a, b.shift(a, -dx, -dy))


def _line_sum(b: DagBuilder, v: int, dx: int, dy: int, radius: int) -> int:
    """Sum of v at offsets -radius..radius along (dx, dy), as a left-to-right chain."""
    acc = b.shift(v, -radius * dx, -radius * dy)
    for k in range(-radius + 1, radius + 1):
        acc = b.add(acc, b.shift(v, k * dx, k * dy))
    return acc


def gauss3() -> Decomposition:
    """(1+x)(1+x^-1)(1+y)(1+y^-1)/16 with the four halvings first."""
    b = DagBuilder()
    t = _halves(b, b.input, 4)
    return b.build({"A": _binomial(b, _binomial(b, t, 1, 0), 0, 1)})


def gauss3_split_halves() -> Decomposition:
    """[1 2 1]/16 vertical as in/8 + (in(0,-1) + in(0,1))/16, then [1 2 1] horizontal."""
    b = DagBuilder()
    t3 = _halves(b, b.input, 3)
    t4 = b.half(t3)
    col = b.add(b.add(b.shift(t4, 0, -1), t3), b.shift(t4, 0, 1))
    row = b.add(b.add(b.shift(col, -1, 0), col), b.add(col, b.shift(col, 1, 0)))
    return b.build({"A": row})


def gauss5() -> Decomposition:
    """[1 4 6 4 1]^2 / 256 as two [1 2 1] factors per axis after eight halvings."""
    b = DagBuilder()
    t = _halves(b, b.input, 8)
    v = _binomial(b, _binomial(b, t, 0, 1), 0, 1)
    return b.build({"A": _binomial(b, _binomial(b, v, 1, 0), 1, 0)})


def gauss5_gauss3() -> Decomposition:
    """Two outputs: gauss3 in B, and gauss5 = gauss3 applied to gauss3 in A (binomials compose)."""
    b = DagBuilder()
    g3 = _binomial(b, _binomial(b, _halves(b, b.input, 4), 1, 0), 0, 1)
    g5 = _binomial(b, _binomial(b, _halves(b, g3, 4), 1, 0), 0, 1)
    return b.build({"A": g5, "B": g3})


def _times(b: DagBuilder, v: int, c: int) -> int:
    """c·v for a small integer c, by repeated addition (a naive extraction would do this)."""
    if c < 0:
        return b.neg(_times(b, v, -c))
    acc = v
    for _ in range(c - 1):
        acc = b.add(acc, v)
    return acc


def _weighted(b: DagBuilder, v: int, rows: list[list[int]]) -> int:
    """Sum of c·v(x, y) over a north-up matrix, tap by tap."""
    acc = None
    r = len(rows) // 2
    for i, row in enumerate(rows):
        for j, c in enumerate(row):
            if c:
                t = b.shift(_times(b, v, c), j - r, r - i)
                acc = t if acc is None else b.add(acc, t)
    assert acc is not None
    return acc


def analognet2() -> Decomposition:
    """AnalogNet2's three 3x3 kernels / 4, written tap by tap over one shared in/4."""
    b = DagBuilder()
    q = _halves(b, b.input, 2)
    return b.build({
        "A": _weighted(b, q, [[0, 0, 0], [-3, 1, 0], [-3, 0, 2]]),
        "B": _weighted(b, q, [[-4, -1, 1], [-1, 2, 0], [1, 1, 0]]),
        "C": _weighted(b, q, [[-1, 2, 0], [-1, 1, -3], [0, -3, 0]]),
    })


def box7_div64() -> Decomposition:
    b = DagBuilder()
    t = _halves(b, b.input, 6)
    col = _line_sum(b, t, 0, 1, 3)
    return b.build({"A": _line_sum(b, col, 1, 0, 3)})


def sobel_xy_div8() -> Decomposition:
    """sobel_xy after three halvings, the pair sums shared as in `sobel_xy`."""
    b = DagBuilder()
    t = _halves(b, b.input, 3)
    q = b.add(t, b.shift(t, 0, 1))
    p = b.add(t, b.shift(t, 1, 0))
    sy = b.add(q, b.shift(q, 0, -1))
    sx = b.add(p, b.shift(p, -1, 0))
    gx = b.sub(b.shift(sy, -1, 0), b.shift(sy, 1, 0))
    gy = b.sub(b.shift(sx, 0, 1), b.shift(sx, 0, -1))
    return b.build({"A": gx, "B": gy})


def box(radius: int) -> Callable[[], Decomposition]:
    def build() -> Decomposition:
        b = DagBuilder()
        col = _line_sum(b, b.input, 0, 1, radius)
        return b.build({"A": _line_sum(b, col, 1, 0, radius)})
    build.__name__ = f"box{2 * radius + 1}"
    return build


def _smooth_y(b: DagBuilder) -> int:
    """Vertical [1 2 1] as in(0,1) + 2 in + in(0,-1)."""
    two = b.add(b.input, b.input)
    return b.add(b.add(b.shift(b.input, 0, 1), two), b.shift(b.input, 0, -1))


def sobel() -> Decomposition:
    b = DagBuilder()
    s = _smooth_y(b)
    return b.build({"A": b.sub(b.shift(s, -1, 0), b.shift(s, 1, 0))})


def sobel_xy() -> Decomposition:
    """Sobel-x in A and Sobel-y in B, both from the pair sums p = in + in(1,0), q = in + in(0,1)."""
    b = DagBuilder()
    q = b.add(b.input, b.shift(b.input, 0, 1))
    p = b.add(b.input, b.shift(b.input, 1, 0))
    sy = b.add(q, b.shift(q, 0, -1))      # vertical [1 2 1]
    sx = b.add(p, b.shift(p, -1, 0))      # horizontal [1 2 1]
    gx = b.sub(b.shift(sy, -1, 0), b.shift(sy, 1, 0))
    gy = b.sub(b.shift(sx, 0, 1), b.shift(sx, 0, -1))
    return b.build({"A": gx, "B": gy})


def sobel_shared() -> Decomposition:
    """Two outputs reading one smoothing value: Sobel-x in A and the smoothing itself in B."""
    b = DagBuilder()
    s = _smooth_y(b)
    return b.build({"A": b.sub(b.shift(s, -1, 0), b.shift(s, 1, 0)), "B": s})


def _cross(b: DagBuilder) -> int:
    ns = b.add(b.shift(b.input, 0, 1), b.shift(b.input, 0, -1))
    ew = b.add(b.shift(b.input, 1, 0), b.shift(b.input, -1, 0))
    return b.add(ns, ew)


def laplacian() -> Decomposition:
    b = DagBuilder()
    two = b.add(b.input, b.input)
    return b.build({"A": b.sub(_cross(b), b.add(two, two))})


def sharpen() -> Decomposition:
    b = DagBuilder()
    two = b.add(b.input, b.input)
    five = b.add(b.add(two, two), b.input)
    return b.build({"A": b.sub(five, _cross(b))})


def many_live() -> Decomposition:
    """Five outputs, each a different shift pair of the input: 6 registers are tight."""
    b = DagBuilder()
    outs = {}
    for reg, (dx, dy) in zip("ABCDE", [(1, 0), (0, 1), (-1, 0), (0, -1), (1, 1)], strict=True):
        outs[reg] = b.sub(b.shift(b.input, dx, dy), b.shift(b.input, -dy, dx))
    return b.build(outs)


def needs_three() -> Decomposition:
    """Two outputs, one a halving: div needs three distinct registers, so two cannot do."""
    b = DagBuilder()
    return b.build({"A": b.half(b.input), "B": b.shift(b.input, 1, 0)})


BENCH: dict[str, Callable[[], Decomposition]] = {
    "sobel": sobel, "gauss3": gauss3, "gauss3_split_halves": gauss3_split_halves,
    "box3": box(1), "box5": box(2), "box7": box(3), "laplacian": laplacian, "sharpen": sharpen,
    "gauss5": gauss5, "sobel_xy": sobel_xy, "sobel_shared": sobel_shared,
    "many_live": many_live, "gauss5_gauss3": gauss5_gauss3, "analognet2": analognet2,
    "box7_div64": box7_div64, "sobel_xy_div8": sobel_xy_div8,
}
"""Decompositions that must compile with 6 registers, by name."""

CAIN_ALL = {"sobel": 5, "gauss3": 10, "gauss3_split_halves": 10, "box3": 6, "box5": 8,
            "box7": 11, "laplacian": 6, "sharpen": 8, "gauss5": 22, "sobel_xy": 9,
            "gauss5_gauss3": 37, "analognet2": 20, "box7_div64": 17, "sobel_xy_div8": 11}
"""Cain's instruction counts (op set all, 6 registers, 60 s), for comparison."""
