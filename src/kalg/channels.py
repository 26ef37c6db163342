"""Values of filters over several input channels: a kernel per input register.

In a file whose target lists several inputs (`input: A B`), the name of an input register in a
filter's output denotes that input: the unit kernel on its channel. `k * B` applies kernel k
to input B, and an output is a sum of such terms, `C: k1 * A + k2 * B`. Its exact meaning is
`out(p) = Σ_c Σ_o K_c(o) · in_c(p + o)`: a kernel on each channel (`Channels`). Kernels compose
with channel values on either side (convolution commutes); a bare kernel cannot be added to a
channel value (it names no input).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from kalg.diagnostics import KalgSemanticError
from kalg.kernel import REAL, Kernel


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
