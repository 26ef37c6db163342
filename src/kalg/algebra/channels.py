"""Values of filters over several input channels: a kernel per input register.

In a file whose target lists several inputs (`input: A B`), the name of an input register in a
filter's output denotes that input: the unit kernel on its channel. `k * B` applies kernel k
to input B, and an output is a sum of such terms, `C: k1 * A + k2 * B`. Its exact meaning is
`out(p) = Σ_c Σ_o K_c(o) · in_c(p + o)`: a kernel on each channel (`Channels`). Kernels compose
with channel values on either side (convolution commutes); a bare kernel cannot be added to a
channel value (it names no input).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from fractions import Fraction

from kalg.algebra.kernel import REAL, Kernel
from kalg.diagnostics import KalgSemanticError


@dataclass(frozen=True, slots=True)
class Channels:
    """A kernel per input channel (register name → real kernel), channels in name order."""

    parts: tuple[tuple[str, Kernel], ...]

    @staticmethod
    def unit(channel: str) -> Channels:
        return Channels(((channel, Kernel.unit()),))

    @staticmethod
    def of(parts: Mapping[str, Kernel]) -> Channels:
        return Channels(tuple(sorted((c, k.trimmed()) for c, k in parts.items())))

    @property
    def semiring(self):
        return REAL

    def as_dict(self) -> dict[str, Kernel]:
        return dict(self.parts)

    def _zip(self, other: Channels, op: Callable[[Kernel, Kernel], Kernel]) -> Channels:
        if not isinstance(other, Channels):
            raise KalgSemanticError(
                "a kernel alone names no input: in a filter over several inputs every term "
                "applies a kernel to an input, e.g. 'k * A'")
        mine, theirs = self.as_dict(), other.as_dict()
        empty = Kernel.empty()
        return Channels.of({c: op(mine.get(c, empty), theirs.get(c, empty))
                            for c in sorted(set(mine) | set(theirs))})

    def __add__(self, other: Channels) -> Channels:
        return self._zip(other, lambda a, b: a + b)

    def __sub__(self, other: Channels) -> Channels:
        return self._zip(other, lambda a, b: a - b)

    def __neg__(self) -> Channels:
        return self.map(lambda k: -k)

    def map(self, f: Callable[[Kernel], Kernel]) -> Channels:
        return Channels.of({c: f(k) for c, k in self.parts})

    def compose(self, other: Kernel | Channels) -> Channels:
        if isinstance(other, Channels):
            raise KalgSemanticError("two inputs cannot be composed: a term applies a kernel to "
                                    "one input, e.g. 'k * A'")
        if other.semiring is not REAL:
            raise KalgSemanticError("inputs hold real images: only real kernels apply to them")
        return self.map(lambda k: k.compose(other))

    def scale(self, factor) -> Channels:
        return self.map(lambda k: k.scale(factor))

    def shift(self, dx: int, dy: int) -> Channels:
        return self.map(lambda k: k.shift(dx, dy))

    def __str__(self) -> str:
        return " + ".join(f"{k} * {c}" for c, k in self.parts)


def common_mix(channels: Mapping[str, Mapping[str, Kernel]], inputs: tuple[str, ...],
               ) -> tuple[dict[str, int], dict[str, Kernel]] | None:
    """(mix, kernels) with channels[o][c] = mix[c] · kernels[o] for every output o and input c
    (an input no output reads has no entry): every output applies its kernel to ONE mix of the
    inputs, m = Σ_c mix[c] · in_c, so the filter is an ordinary one-input filter on m. The mix
    is integer (coprime, its first coefficient positive: adds, subtractions and doublings) and
    the kernels dyadic; None when the outputs read the inputs otherwise, or the kernels that
    go with an integer mix are not dyadic."""
    outputs = {o: {c: k.trimmed() for c, k in parts.items() if k.trimmed().entries}
               for o, parts in channels.items()}
    read = [c for c in inputs if any(c in parts for parts in outputs.values())]
    if not read or any(set(parts) != set(read) for parts in outputs.values()):
        return None
    base = read[0]
    ratios: dict[str, Fraction] = {}
    for parts in outputs.values():
        for c in read:
            r = _ratio(parts[c], parts[base])
            if r is None or ratios.setdefault(c, r) != r:
                return None
    scale = Fraction(math.lcm(*(r.denominator for r in ratios.values())),
                     math.gcd(*(r.numerator for r in ratios.values())))
    mix = {c: int(r * scale) for c, r in ratios.items()}
    kernels = {o: parts[base].scale(1 / scale) for o, parts in outputs.items()}
    if not all(k.is_dyadic() for k in kernels.values()):
        return None
    return mix, kernels


def _ratio(k: Kernel, base: Kernel) -> Fraction | None:
    """r with k = r·base (both trimmed and non-zero), or None."""
    taps, (o, c) = dict(k.entries), base.entries[0]
    if set(taps) != {p for p, _ in base.entries}:
        return None
    r = Fraction(taps[o]) / Fraction(c)
    return r if all(Fraction(taps[p]) == r * Fraction(v) for p, v in base.entries) else None


def common_factor(parts: Mapping[str, Kernel]) -> tuple[Kernel, dict[str, Kernel]] | None:
    """(G, rests) with parts[c] = G * rests[c] (composition) for every channel c, G the greatest
    common factor of the kernels as polynomials in x and y (primitive, more than one tap,
    centred): Σ_c parts[c] * c = G * (Σ_c rests[c] * c), the distributive law that shares G's
    work across the channels. None for fewer than two channels or no common factor beyond a
    number or a shift."""
    kernels = {c: k.trimmed() for c, k in parts.items() if k.trimmed().entries}
    if len(kernels) < 2:
        return None
    import flint  # python-flint: exact polynomial gcd

    ring = flint.fmpz_mpoly_ctx.get(("x", "y"), "lex")
    polys = {c: _integer_polynomial(k, ring) for c, k in kernels.items()}
    g = None
    for p, _, _ in polys.values():
        g = p if g is None else g.gcd(p)
    g = g.primitive()[1] if g.content() != 0 else g
    if len(g) < 2:
        return None
    taps = {(int(a), int(b)): int(v) for (a, b), v in g.terms()}
    width, height = max(a for a, _ in taps), max(b for _, b in taps)
    centre = (width // 2, height // 2)
    factor = Kernel.of({(a - centre[0], b - centre[1]): v for (a, b), v in taps.items()})
    rests = {}
    for c, (p, offset, scale) in polys.items():
        q = p / g  # exact: g divides p (flint raises otherwise)
        rests[c] = Kernel.of({(int(a) + offset[0] + centre[0], int(b) + offset[1] + centre[1]):
                              Fraction(int(v)) / scale for (a, b), v in q.terms()})
        if not factor.compose(rests[c]).same_values(kernels[c]):
            raise AssertionError(f"common factor {factor} does not divide {kernels[c]}")
    return factor, rests


def _integer_polynomial(k: Kernel, ring):
    """(p, offset, scale): k = shift(p / scale, offset) with p an integer polynomial."""
    scale = math.lcm(*(Fraction(v).denominator for _, v in k.entries))
    ox, oy = min(x for (x, _), _ in k.entries), min(y for (_, y), _ in k.entries)
    p = ring.from_dict({(x - ox, y - oy): int(Fraction(v) * scale) for (x, y), v in k.entries})
    return p, (ox, oy), scale
