"""Normalise a Decomposition into a network of signed, shifted sums (the code generator's own IR).

Input: `Decomposition` (SSA DAG of SHIFT/ADD/SUB/NEG/HALF). Output: `Network`, whose nodes are the
values worth keeping in a register: the input, every HALF, and every sum that is *materialised*.
A sum node is a multiset of `Term`s (node, dx, dy, sign): shifts and negations are folded into the
terms, because on SCAMP-5 they are free to move (shifts commute with every other operation, and a
negation is absorbed by `sub`). A sum that is not materialised is inlined into its consumer, so
its terms can be regrouped freely there (3-operand adds, `addx` with a shared shift...).

`inline_cap` is the policy knob: a sum used several times by *one* consumer (e.g. `a + a(-1)` in
a separable [1 2 1]) is inlined when the consumer's term list stays at most that long. 0 keeps the
decomposition's own structure.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from enum import StrEnum

from kalg.algebra.decomp import Decomposition, Op

Term = tuple[int, int, int, int]
"""(node, dx, dy, sign): `sign` × node(p + (dx, dy))."""
Terms = tuple[Term, ...]
"""A sorted multiset of terms: their sum."""

INPUT_NODE = 0
"""The network node of the input image (always index 0)."""


class Kind(StrEnum):
    INPUT = "input"
    HALF = "half"  # terms: the argument; value = sum(terms) / 2
    SUM = "sum"    # value = sum(terms)


@dataclass(frozen=True, slots=True)
class Node:
    kind: Kind
    terms: Terms = ()


@dataclass(frozen=True, slots=True)
class Network:
    """Nodes in topological order (node 0 = input) and one goal term list per output register."""

    nodes: tuple[Node, ...]
    outputs: tuple[tuple[str, Terms], ...]


def translate(terms: Terms, dx: int, dy: int) -> Terms:
    """The same sum read at p + (dx, dy)."""
    return tuple(sorted((n, x + dx, y + dy, s) for n, x, y, s in terms))


def negate(terms: Terms) -> Terms:
    return tuple(sorted((n, x, y, -s) for n, x, y, s in terms))


def cancel(terms: list[Term]) -> Terms:
    """Sort and drop pairs t, -t (they add to nothing)."""
    count: Counter[tuple[int, int, int]] = Counter()
    for n, x, y, s in terms:
        count[(n, x, y)] += s
    out = [(n, x, y, 1 if c > 0 else -1) for (n, x, y), c in count.items() for _ in range(abs(c))]
    return tuple(sorted(out))


def normalise(decomp: Decomposition, inline_cap: int = 0) -> Network:
    """Fold shifts and negations into terms, inline sums that only one consumer reads, and
    replace x/2 + x/2 by x.

    >>> from kalg.algebra.decomp import DagBuilder
    >>> b = DagBuilder()
    >>> net = normalise(b.build({"A": b.sub(b.input, b.shift(b.input, 1, 0))}))
    >>> net.outputs
    (('A', ((0, 0, 0, 1), (0, 1, 0, -1))),)
    """
    return _Normaliser(decomp, inline_cap).run()


class _Normaliser:
    def __init__(self, decomp: Decomposition, inline_cap: int):
        self.values = decomp.values
        self.outputs = decomp.outputs
        self.cap = inline_cap
        self.live = decomp.live()
        self.consumers = self._consumers()
        self.nodes: list[Node] = [Node(Kind.INPUT)]
        self.expr_of: dict[int, Terms] = {}
        """Value index -> its terms (a lone node term where the value is materialised)."""
        self.interned: dict[tuple[Kind, Terms], tuple[int, int, int, int]] = {}
        """(kind, terms up to translation and sign) -> (node, anchor x, anchor y, sign)."""

    def run(self) -> Network:
        for i in self.live:
            self._visit(i)
        outputs = tuple((reg, cancel(list(self.expr_of[i]))) for reg, i in self.outputs)
        return Network(tuple(self.nodes), outputs)

    def _core(self, i: int) -> int:
        """Strip SHIFT and NEG wrappers: the value that does the work."""
        while self.values[i].op in (Op.SHIFT, Op.NEG):
            i = self.values[i].args[0]
        return i

    def _consumers(self) -> dict[int, list[int]]:
        """Core value -> the core values (or -1 for an output) that read it, with repeats."""
        out: dict[int, list[int]] = {}
        for i in self.live:
            v = self.values[i]
            if v.op in (Op.SHIFT, Op.NEG, Op.INPUT):
                continue
            for a in v.args:
                out.setdefault(self._core(a), []).append(i)
        for _, i in self.outputs:
            out.setdefault(self._core(i), []).append(-1)
        return out

    def _visit(self, i: int) -> None:
        v = self.values[i]
        if v.op is Op.INPUT:
            self.expr_of[i] = ((INPUT_NODE, 0, 0, 1),)
        elif v.op is Op.SHIFT:
            self.expr_of[i] = translate(self.expr_of[v.args[0]], v.dx, v.dy)
        elif v.op is Op.NEG:
            self.expr_of[i] = negate(self.expr_of[v.args[0]])
        elif v.op is Op.HALF:
            self.expr_of[i] = self._make_node(Kind.HALF, self.expr_of[v.args[0]])
        else:
            a, b = (self.expr_of[x] for x in v.args)
            terms = self._fold_halves(cancel(list(a) + list(b if v.op is Op.ADD else negate(b))))
            self.expr_of[i] = self._maybe_node(i, terms)

    def _fold_halves(self, terms: Terms) -> Terms:
        """Replace x/2 + x/2 by x (at the same offset and sign): x is made anyway to halve it,
        so the pair costs nothing while two copies of x/2 would cost an add and a copy."""
        count = Counter(terms)
        for term, c in sorted(count.items()):
            n, x, y, s = term
            if c < 2 or self.nodes[n].kind is not Kind.HALF:
                continue
            arg = translate(self.nodes[n].terms, x, y)
            rest = [t for t in terms if t != term] + [term] * (c % 2)
            rest += list(arg if s > 0 else negate(arg)) * (c // 2)
            return self._fold_halves(cancel(rest))
        return terms

    def _maybe_node(self, i: int, terms: Terms) -> Terms:
        """Materialise a sum read by several consumers (or several times by one, beyond the
        inlining cap); otherwise hand its terms to the consumer."""
        users = self.consumers.get(i, [])
        if len(users) <= 1:
            return terms
        if len(set(users)) == 1 and -1 not in users and len(terms) * len(users) <= self.cap:
            return terms
        if len(terms) <= 1:
            return terms
        return self._make_node(Kind.SUM, terms)

    def _make_node(self, kind: Kind, terms: Terms) -> Terms:
        """A node for `terms` as a lone term. A translate or negation of an earlier node of the
        same kind reuses that node (halving and summing commute with both), so the work is
        shared; a new node keeps its own offsets (where its operands already are)."""
        if not terms:
            self.nodes.append(Node(kind, terms))
            return ((len(self.nodes) - 1, 0, 0, 1),)
        _, x0, y0, s0 = terms[0]
        canon = translate(terms, -x0, -y0)
        canon = canon if s0 > 0 else negate(canon)
        if (first := self.interned.get((kind, canon))) is None:
            self.nodes.append(Node(kind, terms))
            first = self.interned[(kind, canon)] = (len(self.nodes) - 1, x0, y0, s0)
        n, x1, y1, s1 = first
        return ((n, x0 - x1, y0 - y1, s0 * s1),)
