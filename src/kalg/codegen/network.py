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

from kalg.decomp import Decomposition, Op

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
    """Fold shifts and negations into terms and inline sums that only one consumer reads."""
    return _Normaliser(decomp, inline_cap).run()


class _Normaliser:
    def __init__(self, decomp: Decomposition, inline_cap: int):
        self.values = decomp.values
        self.outputs = decomp.outputs
        self.cap = inline_cap
        self.live = decomp.live()
        self.consumers = self._consumers()
        self.nodes: list[Node] = [Node(Kind.INPUT)]
        self.node_of: dict[int, int] = {}  # core value index -> node index
        self.expr_of: dict[int, Terms] = {}

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
            self.expr_of[i] = self._make_node(i, Kind.HALF, self.expr_of[v.args[0]])
        else:
            a, b = (self.expr_of[x] for x in v.args)
            terms = cancel(list(a) + list(b if v.op is Op.ADD else negate(b)))
            self.expr_of[i] = self._maybe_node(i, terms)

    def _maybe_node(self, i: int, terms: Terms) -> Terms:
        users = self.consumers.get(i, [])
        if len(users) <= 1:
            return terms
        if len(set(users)) == 1 and -1 not in users and len(terms) * len(users) <= self.cap:
            return terms
        if len(terms) <= 1:
            return terms
        return self._make_node(i, Kind.SUM, terms)

    def _make_node(self, i: int, kind: Kind, terms: Terms) -> Terms:
        self.nodes.append(Node(kind, terms))
        self.node_of[i] = len(self.nodes) - 1
        return ((len(self.nodes) - 1, 0, 0, 1),)
