"""Kernel terms as egglog text, and the literal table behind `(Lit "key")`.

Literals are canonicalised up to shift, sign and power-of-two scale, so that translated, negated or
halved copies of one pattern - inside one kernel or across the kernels of a filter - share one
e-class (design.md decision 6). A canonical literal has integer coefficients, its domain's minimum
x and y at 0, and a positive first coefficient (in sorted offset order).

Pure Python: no egglog here.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from fractions import Fraction

from kalg.algebra.kernel import Kernel


@dataclass(frozen=True, slots=True)
class Canonical:
    """k == sign · 2^-halvings · shift(offset) · literal."""

    literal: Kernel
    sign: int
    halvings: int
    offset: tuple[int, int]


def canonicalise(k: Kernel) -> Canonical:
    """Split a non-zero dyadic kernel into sign, power-of-two scale, shift and canonical literal.

    >>> k = Kernel.from_rows([[0, 0, 0], [0, -1, -2], [0, 0, 0]]).scale(Fraction(1, 4))
    >>> c = canonicalise(k)
    >>> (c.sign, c.halvings, c.offset, c.literal.taps)
    (-1, 2, (0, 0), {(0, 0): 1, (1, 0): 2})
    """
    k = k.trimmed()
    if not k.entries:
        raise ValueError("the zero kernel has no canonical literal")
    halvings = max(_log2_denominator(c) for _, c in k.entries)
    ints = k.scale(2**halvings)
    x0, _, y0, _ = ints.bounds()
    ints = ints.shift(-x0, -y0)
    sign = 1 if ints.entries[0][1] > 0 else -1
    return Canonical(ints if sign > 0 else -ints, sign, halvings, (x0, y0))


def _log2_denominator(c: int | Fraction) -> int:
    d = Fraction(c).denominator
    if d & (d - 1):
        raise ValueError(f"coefficient {c} is not dyadic")
    return d.bit_length() - 1


def key_of(literal: Kernel) -> str:
    """The egglog string key of a canonical literal: its taps as text."""
    return " ".join(f"{x},{y}:{c}" for (x, y), c in literal.entries)


def sh(dx: int, dy: int) -> str:
    return f"(Sh {dx} {dy})"


def compose(a: str, b: str) -> str:
    return f"(KCompose {a} {b})"


def kadd(a: str, b: str) -> str:
    return f"(KAdd {a} {b})"


def kneg(a: str) -> str:
    return f"(KNeg {a})"


def khalf(a: str, times: int = 1) -> str:
    for _ in range(times):
        a = f"(KHalf {a})"
    return a


def balanced_sum(terms: list[str], op: str = "KAdd") -> str:
    """A balanced binary `op` tree over `terms`, in order: shallow, so no deep recursion.

    `op` is the sum constructor: KAdd for Kernel terms, Add for Img terms.
    """
    if not terms:
        raise ValueError("empty sum")
    while len(terms) > 1:
        pairs = [f"({op} {terms[i]} {terms[i + 1]})" for i in range(0, len(terms) - 1, 2)]
        terms = pairs + ([terms[-1]] if len(terms) % 2 else [])
    return terms[0]


class LiteralTable:
    """Canonical literals met so far, by key, in first-seen order (deterministic)."""

    def __init__(self) -> None:
        self.literals: dict[str, Kernel] = {}

    def term(self, k: Kernel) -> str:
        """A Kernel term text equal to `k`, built on its canonical literal (registered here)."""
        c = canonicalise(k)
        key = key_of(c.literal)
        self.literals.setdefault(key, c.literal)
        t = f'(Lit "{key}")'
        if c.offset != (0, 0):
            t = compose(sh(*c.offset), t)
        t = khalf(t, c.halvings)
        return kneg(t) if c.sign < 0 else t


def parse(text: str) -> list:
    """A term's text as nested lists: [op, arg, ...], atoms kept as tokens (strings quoted)."""
    stack: list[list] = [[]]
    for tok in re.findall(r'"[^"]*"|\(|\)|[^\s()]+', text):
        if tok == "(":
            stack.append([])
        elif tok == ")":
            done = stack.pop()
            stack[-1].append(done)
        else:
            stack[-1].append(tok)
    return stack[0][0]


def atom(token: str) -> int | str:
    """The value of an atom token: a quoted string's contents, else an integer."""
    return token[1:-1] if token.startswith('"') else int(token)


def evaluate(term: str, literals: dict[str, Kernel]) -> Kernel:
    """The exact kernel a Kernel term text denotes (literals looked up by key).

    >>> two = {"0,0:2": Kernel.unit(value=2)}
    >>> evaluate('(KCompose (Sh 1 0) (KHalf (Lit "0,0:2")))', two).taps
    {(1, 0): 1}
    """

    def go(node: list | str) -> Kernel | int | str:
        if isinstance(node, str):
            return atom(node)
        return _apply(node[0], [go(a) for a in node[1:]], literals)

    return go(parse(term))  # type: ignore[return-value]


def _apply(op: str, args: list, literals: dict[str, Kernel]) -> Kernel:
    match op:
        case "Lit":
            return literals[args[0]]
        case "Sh":
            return Kernel.unit(args[0], args[1])
        case "KAdd":
            return args[0] + args[1]
        case "KSub":
            return args[0] - args[1]
        case "KNeg":
            return -args[0]
        case "KHalf":
            return args[0].scale(Fraction(1, 2))
        case "KCompose":
            return args[0].compose(args[1])
    raise ValueError(f"not a Kernel constructor: {op}")
