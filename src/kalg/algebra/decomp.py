"""The decomposition IR: what the optimizer chooses and the code generator lowers.

A `Decomposition` is a DAG of image values in SSA form: value *i* is one operation on earlier
values (each value is computed once, so sharing a value means sharing its work). Value 0 is always
the input image. `outputs` names the register each requested kernel must end in.

The IR knows nothing of egglog or of SCAMP-5 instructions; `kernels()` gives its exact meaning.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from enum import StrEnum
from fractions import Fraction

from kalg.algebra.kernel import Dyadic, Kernel, dyadic_combination, from_dyadic


class Op(StrEnum):
    INPUT = "input"
    SHIFT = "shift"  # value(p) = a(p + (dx, dy))
    ADD = "add"      # a + b
    SUB = "sub"      # a - b
    NEG = "neg"      # -a
    HALF = "half"    # a / 2


ARITY = {Op.INPUT: 0, Op.SHIFT: 1, Op.ADD: 2, Op.SUB: 2, Op.NEG: 1, Op.HALF: 1}


@dataclass(frozen=True, slots=True)
class Value:
    """One image value: `op` applied to earlier values `args` (indices), shifted by (dx, dy)."""

    op: Op
    args: tuple[int, ...] = ()
    dx: int = 0
    dy: int = 0

    def __str__(self) -> str:
        a = ", ".join(f"v{i}" for i in self.args)
        return f"shift({a}, {self.dx}, {self.dy})" if self.op is Op.SHIFT else f"{self.op}({a})"


@dataclass(frozen=True, slots=True)
class Decomposition:
    """A DAG of values (topologically ordered, value 0 = input) and named outputs."""

    values: tuple[Value, ...]
    outputs: tuple[tuple[str, int], ...]

    def kernels(self) -> list[Kernel]:
        """The exact kernel each value computes from the input."""
        out: list[Kernel] = []
        for v in self.values:
            out.append(_meaning(v, out))
        return out

    def output_kernels(self) -> dict[str, Kernel]:
        """The exact kernel of each output: the values of `kernels()`, computed on integers
        (`kernel.Dyadic`: every value is an integer combination of halvings), and only the
        outputs made kernels (a large kernel's decomposition has hundreds of values)."""
        done: list[Dyadic] = []
        for v in self.values:
            done.append(_dyadic_meaning(v, done))
        return {name: from_dyadic(done[i]) for name, i in self.outputs}

    def live(self) -> list[int]:
        """Indices of values reachable from the outputs, in topological order."""
        return reachable(self.values, [i for _, i in self.outputs])

    def __str__(self) -> str:
        lines = [f"v{i} = {v}" for i, v in enumerate(self.values) if i in set(self.live())]
        lines += [f"{name} <- v{i}" for name, i in self.outputs]
        return "\n".join(lines)


def reachable(values: Sequence, roots: Iterable[int]) -> list[int]:
    """Indices of `values` reachable from `roots` through each value's `args` (earlier indices),
    sorted: a topological order for an SSA list."""
    seen: set[int] = set()
    stack = list(roots)
    while stack:
        i = stack.pop()
        if i not in seen:
            seen.add(i)
            stack.extend(values[i].args)
    return sorted(seen)


def _meaning(v: Value, done: list[Kernel]) -> Kernel:
    a = [done[i] for i in v.args]
    match v.op:
        case Op.INPUT:
            return Kernel.unit()
        case Op.SHIFT:
            return a[0].shift(v.dx, v.dy)
        case Op.ADD:
            return a[0] + a[1]
        case Op.SUB:
            return a[0] - a[1]
        case Op.NEG:
            return -a[0]
        case Op.HALF:
            return a[0].scale(Fraction(1, 2))
    raise AssertionError(f"unknown op {v.op}")


_DYADIC_TERMS = {Op.ADD: ((1, 0), (1, 0)), Op.SUB: ((1, 0), (-1, 0)), Op.NEG: ((-1, 0),),
                 Op.HALF: ((1, 1),), Op.SHIFT: ((1, 0),)}
"""Each op's value as Σ (n / 2**e) · argument: (n, e) per argument."""


def _dyadic_meaning(v: Value, done: list[Dyadic]) -> Dyadic:
    """`_meaning` on `kernel.Dyadic` values (the same kernel, domain included)."""
    if v.op is Op.INPUT:
        return 0, {(0, 0): 1}
    dx, dy = (v.dx, v.dy) if v.op is Op.SHIFT else (0, 0)
    return dyadic_combination((n, e, done[i], dx, dy)
                              for (n, e), i in zip(_DYADIC_TERMS[v.op], v.args, strict=True))


class DagBuilder:
    """Builds a Decomposition with hash-consing: asking twice for the same value returns one index.

    Also folds the trivial identities (shift by zero, shift of a shift) so that equal values built
    different ways meet.
    """

    def __init__(self) -> None:
        self.values: list[Value] = [Value(Op.INPUT)]
        self._index: dict[Value, int] = {self.values[0]: 0}

    @property
    def input(self) -> int:
        return 0

    def value(self, op: Op, *args: int, dx: int = 0, dy: int = 0) -> int:
        if op is Op.SHIFT:
            if dx == 0 and dy == 0:
                return args[0]
            inner = self.values[args[0]]
            if inner.op is Op.SHIFT:
                return self.value(Op.SHIFT, inner.args[0], dx=dx + inner.dx, dy=dy + inner.dy)
        if len(args) != ARITY[op]:
            raise ValueError(f"{op} takes {ARITY[op]} arguments, got {len(args)}")
        v = Value(op, tuple(args), dx, dy)
        if (i := self._index.get(v)) is not None:
            return i
        self.values.append(v)
        self._index[v] = len(self.values) - 1
        return len(self.values) - 1

    def shift(self, a: int, dx: int, dy: int) -> int:
        return self.value(Op.SHIFT, a, dx=dx, dy=dy)

    def add(self, a: int, b: int) -> int:
        return self.value(Op.ADD, *sorted((a, b)))

    def sub(self, a: int, b: int) -> int:
        return self.value(Op.SUB, a, b)

    def neg(self, a: int) -> int:
        return self.value(Op.NEG, a)

    def half(self, a: int) -> int:
        return self.value(Op.HALF, a)

    def signed_sum(self, acc: int | None, term: int, sign: int) -> int:
        """`acc` + sign · `term` (`acc` None: sign · `term` alone)."""
        if acc is None:
            return term if sign > 0 else self.neg(term)
        return self.add(acc, term) if sign > 0 else self.sub(acc, term)

    def scaled(self, a: int, e: int) -> int:
        """`a` · 2^e: e doublings (a + a), or -e halvings."""
        for _ in range(max(e, 0)):
            a = self.add(a, a)
        for _ in range(max(-e, 0)):
            a = self.half(a)
        return a

    def build(self, outputs: dict[str, int]) -> Decomposition:
        return Decomposition(tuple(self.values), tuple(sorted(outputs.items())))
