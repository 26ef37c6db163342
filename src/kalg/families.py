"""Seeded families of kernels and filters that SCAMP-5 users bring, drawn fresh, never stored.

`draw(family, count, seed)` returns `count` kernels or filters of one family (`FAMILIES`), the
same for the same arguments on every machine (numpy's `default_rng([seed, family number])`),
so a measurement is reproduced from its seed alone and there is no list of matrices anyone could
tune against. Each `Draw` has integer arrays (rows north to south, columns west to east) and a
power-of-two divisor per output register, input in A; `Draw.kalg_text` writes it as a .kalg file
and `Draw.cain_json` in the format of `../shared/bench/kernels.json` (Cain's driver, checker).

The families (entries uniform and independent unless said; an all-zero array is drawn again):

* ``dense3u``   3x3, integers 0..8; divisor 1, 4, 8 in turn (kernel i: ``DIVISORS[i % 3]``).
* ``dense3s``   3x3, integers -8..8; divisor 1, 4, 8 in turn.
* ``ternary``   CNN weights quantised to {-1, 0, 1}: 3x3 and 5x5 in turn, divisor 1.
* ``quant2``    CNN weights quantised to 2 bits, the symmetric levels {-3, -1, 1, 3} over 4:
                3x3 and 5x5 in turn.
* ``operators`` classic small operators (`OPERATORS`: compass Kirsch, Robinson, Prewitt;
                Laplacians; sharpen; line and corner detectors; derivatives of Gaussians) in
                every rotation and reflection (for 3x3, the eight 45-degree turns of the outer
                ring as compass operators turn, and their mirror images; for larger ones the
                dihedral group of the square); distinct images only, drawn without replacement.
* ``dense57``   5x5 and 7x7 in turn, integers -4..4, divisor 1.
* ``isotropic`` 5x5 and 7x7 in turn, LoG-like: round(w * (1 - r^2 / 2s^2) exp(-r^2 / 2s^2))
                with s uniform in [0.6, 0.45 * half-width + 0.6] and peak w an integer 4..24.
* ``bank3``     filters of k = 2..5 dense 3x3 kernels in turn (k = 2 + i % 4), outputs in
                A, B, ..., on registers A..F: integers 0..8 over 8 (even i), -8..8 over 8 (odd).
* ``rotbank``   filters of k = 2..5 rotations of one operator (k = 2 + i % 4): a random 3x3
                operator of `OPERATORS` with at least k distinct 45-degree ring turns, and its
                first k distinct turns in turning order, outputs in A, B, ...
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import numpy as np

REGISTERS = "ABCDEF"

DIVISORS = (1, 4, 8)
"""The divisors the dense 3x3 families cycle through."""


@dataclass(frozen=True)
class Draw:
    """One drawn kernel (one output) or filter: output register -> (integer rows, log2 of the
    divisor); input in A."""

    name: str
    family: str
    outputs: dict[str, tuple[np.ndarray, int]]

    def kalg_text(self, ops: str = "all", registers: str = "A..F") -> str:
        """The draw as a .kalg file (target block: `registers`, input A, `ops`)."""
        head = f"target scamp5 {{ registers: {registers}, input: A, ops: {ops} }}\n"
        if list(self.outputs) == ["A"]:
            return head + f"kernel {self.name} = {_matrix(*self.outputs['A'])}\n"
        outs = ", ".join(f"{reg}: {_matrix(a, s)}" for reg, (a, s) in self.outputs.items())
        return head + f"filter {self.name} = [{outs}]\n"

    def cain_json(self) -> dict:
        """The draw as one entry of a Cain kernels.json (`../shared/cain/run_cain.py`)."""
        return {"name": self.name,
                "outputs": {reg: {"rows": a.tolist(), "log2_divisor": s}
                            for reg, (a, s) in self.outputs.items()}}

    def key(self) -> str:
        """The draw's exact content (no name): what a cache of results is keyed by."""
        return json.dumps(self.cain_json()["outputs"], sort_keys=True)


def _matrix(a: np.ndarray, shift: int) -> str:
    rows = " ; ".join(" ".join(str(int(v)) for v in row) for row in a)
    return f"[{rows}]" + (f" / {2 ** shift}" if shift else "")


# ---------------------------------------------------------------- classic operators

def _m(text: str) -> np.ndarray:
    return np.array([[int(v) for v in row.split()] for row in text.split(";")], dtype=np.int64)


OPERATORS: dict[str, np.ndarray] = {
    "kirsch": _m("5 5 5; -3 0 -3; -3 -3 -3"),
    "robinson": _m("1 2 1; 0 0 0; -1 -2 -1"),
    "prewitt_compass": _m("1 1 1; 1 -2 1; -1 -1 -1"),
    "prewitt": _m("1 1 1; 0 0 0; -1 -1 -1"),
    "scharr": _m("3 10 3; 0 0 0; -3 -10 -3"),
    "laplace4": _m("0 1 0; 1 -4 1; 0 1 0"),
    "laplace8": _m("1 1 1; 1 -8 1; 1 1 1"),
    "laplace12": _m("1 2 1; 2 -12 2; 1 2 1"),
    "laplace_diag": _m("1 0 1; 0 -4 0; 1 0 1"),
    "sharpen5": _m("0 -1 0; -1 5 -1; 0 -1 0"),
    "sharpen9": _m("-1 -1 -1; -1 9 -1; -1 -1 -1"),
    "line_h": _m("-1 -1 -1; 2 2 2; -1 -1 -1"),
    "line_d": _m("2 -1 -1; -1 2 -1; -1 -1 2"),
    "corner": _m("1 1 0; 1 -3 -1; 0 -1 -1"),
    "corner_l": _m("-1 -1 -1; -1 2 2; -1 2 2"),
    "emboss": _m("-2 -1 0; -1 1 1; 0 1 2"),
    "dog_x5": _m("1 2 0 -2 -1; 4 8 0 -8 -4; 6 12 0 -12 -6; 4 8 0 -8 -4; 1 2 0 -2 -1"),
    "dog_xx5": _m("1 0 -2 0 1; 4 0 -8 0 4; 6 0 -12 0 6; 4 0 -8 0 4; 1 0 -2 0 1"),
    "dog_xy5": _m("1 2 0 -2 -1; 2 4 0 -4 -2; 0 0 0 0 0; -2 -4 0 4 2; -1 -2 0 2 1"),
    "laplace5": _m("0 0 1 0 0; 0 1 2 1 0; 1 2 -16 2 1; 0 1 2 1 0; 0 0 1 0 0"),
}
"""Integer operators from the literature (compass: Kirsch, Robinson, Prewitt; Sobel-type
derivatives: Prewitt, Scharr; Laplacians; sharpen; line and corner detectors; emboss; 5x5
derivatives of the binomial Gaussian and a 5x5 Laplacian), each with divisor 1."""

_RING = ((0, 0), (0, 1), (0, 2), (1, 2), (2, 2), (2, 1), (2, 0), (1, 0))
"""The outer ring of a 3x3 array, clockwise from the north-west corner."""


def ring_turn(a: np.ndarray, steps: int = 1) -> np.ndarray:
    """A 3x3 array with its outer ring turned `steps` places clockwise (45 degrees each, as
    compass operators turn); the centre stays."""
    out = a.copy()
    for k, (r, c) in enumerate(_RING):
        out[_RING[(k + steps) % 8]] = a[r, c]
    return out


def images(a: np.ndarray) -> list[np.ndarray]:
    """The distinct images of `a` under every rotation and reflection: for 3x3 the 45-degree
    ring turns and their mirror images (16), else the 8 of the square's dihedral group; in a
    fixed order, the identity first."""
    if a.shape == (3, 3):
        turns = [ring_turn(a, k) for k in range(8)]
    else:
        turns = [np.rot90(a, -k) for k in range(4)]
    found: list[np.ndarray] = []
    for b in [*turns, *(np.fliplr(t) for t in turns)]:
        if not any(np.array_equal(b, c) for c in found):
            found.append(b)
    return found


def _operator_images() -> list[tuple[str, np.ndarray]]:
    return [(f"{name}_{k}", img) for name, a in OPERATORS.items()
            for k, img in enumerate(images(a))]


# ---------------------------------------------------------------- the families

def _nonzero(rng: np.random.Generator, draw) -> np.ndarray:
    while True:
        a = draw(rng)
        if a.any():
            return a


def _dense3(low: int):
    def one(rng: np.random.Generator, i: int) -> dict:
        a = _nonzero(rng, lambda r: r.integers(low, 9, size=(3, 3)))
        return {"A": (a, int(DIVISORS[i % 3]).bit_length() - 1)}
    return one


def _ternary(rng: np.random.Generator, i: int) -> dict:
    n = 3 if i % 2 == 0 else 5
    return {"A": (_nonzero(rng, lambda r: r.integers(-1, 2, size=(n, n))), 0)}


def _quant2(rng: np.random.Generator, i: int) -> dict:
    n = 3 if i % 2 == 0 else 5
    return {"A": (rng.choice(np.array([-3, -1, 1, 3]), size=(n, n)), 2)}


def _dense57(rng: np.random.Generator, i: int) -> dict:
    n = 5 if i % 2 == 0 else 7
    return {"A": (_nonzero(rng, lambda r: r.integers(-4, 5, size=(n, n))), 0)}


def _isotropic(rng: np.random.Generator, i: int) -> dict:
    n = 5 if i % 2 == 0 else 7
    half = n // 2
    while True:
        sigma = rng.uniform(0.6, 0.45 * half + 0.6)
        peak = int(rng.integers(4, 25))
        y, x = np.mgrid[-half:half + 1, -half:half + 1]
        q = (x * x + y * y) / (2 * sigma * sigma)
        a = np.rint(peak * (1 - q) * np.exp(-q)).astype(np.int64)
        if np.count_nonzero(a) > 1:
            return {"A": (a, 0)}


def _bank3(rng: np.random.Generator, i: int) -> dict:
    k, low = 2 + i % 4, (0 if i % 2 == 0 else -8)
    return {REGISTERS[j]: (_nonzero(rng, lambda r: r.integers(low, 9, size=(3, 3))), 3)
            for j in range(k)}


def _turns(a: np.ndarray) -> list[np.ndarray]:
    """The distinct 45-degree ring turns of a 3x3 operator, in turning order (two of them
    make a 90-degree rotation)."""
    distinct: list[np.ndarray] = []
    for t in (ring_turn(a, j) for j in range(8)):
        if not any(np.array_equal(t, c) for c in distinct):
            distinct.append(t)
    return distinct


def _rotbank(rng: np.random.Generator, i: int) -> dict:
    k = 2 + i % 4
    names = [n for n, a in OPERATORS.items() if a.shape == (3, 3) and len(_turns(a)) >= k]
    a = OPERATORS[names[int(rng.integers(len(names)))]]
    return {REGISTERS[j]: (t, 0) for j, t in enumerate(_turns(a)[:k])}


FAMILIES = {
    "dense3u": _dense3(0), "dense3s": _dense3(-8), "ternary": _ternary, "quant2": _quant2,
    "operators": None, "dense57": _dense57, "isotropic": _isotropic, "bank3": _bank3,
    "rotbank": _rotbank,
}
"""Family name -> generator of draw i (None: `operators`, sampled from a fixed pool)."""


def draw(family: str, count: int, seed: int) -> list[Draw]:
    """`count` draws of `family` (names FAMILY_i), deterministic in (`family`, `seed`)."""
    if family not in FAMILIES:
        raise ValueError(f"unknown family {family!r}; choose one of {', '.join(FAMILIES)}")
    rng = np.random.default_rng([seed, list(FAMILIES).index(family)])
    if family == "operators":
        pool = _operator_images()
        picks = rng.permutation(len(pool))[:count]
        return [Draw(f"operators_{i}_{pool[p][0]}", family, {"A": (pool[p][1], 0)})
                for i, p in enumerate(picks)]
    make = FAMILIES[family]
    return [Draw(f"{family}_{i}", family, make(rng, i)) for i in range(count)]

