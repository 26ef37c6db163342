"""Goals: the values the scheduler still has to compute, identified by exact value.

A goal is a term list (`network.Terms`) over network nodes. Two goals are the same value exactly
when their *keys* match: the key expands every sum down to atoms (the input and the HALF nodes)
with integer coefficients, so a partial sum found two different ways merges into one register.
`Space` caches keys, translation classes and the node facts the heuristic needs.
"""

from __future__ import annotations

from bisect import bisect_left
from collections import Counter

from kalg.targets.scamp5.codegen.network import INPUT_NODE, Kind, Network, Terms, translate

Key = tuple[tuple[int, int, int, int], ...]
"""Sorted (atom, dx, dy, coefficient) with nonzero coefficients: a value, exactly."""

INPUT_TERMS: Terms = ((INPUT_NODE, 0, 0, 1),)
INPUT_KEY: Key = ((INPUT_NODE, 0, 0, 1),)
"""The input image where it starts: the one value a program gets for free."""


def distance(terms: Terms) -> int:
    """How far the terms sit from where their nodes are made (offset 0): a shift-work measure."""
    return sum(abs(x) + abs(y) for _, x, y, _ in terms)


class Space:
    """Keys and node facts for one network (a cache: build one per network)."""

    def __init__(self, net: Network):
        self.net = net
        self._expansions: list[Counter[tuple[int, int, int]]] = []
        for i, node in enumerate(net.nodes):
            self._expansions.append(self._expand_node(i, node.kind, node.terms))
        self._keys: dict[Terms, Key] = {}
        self._opened: dict[Terms, Terms] = {}
        self.descendants = self._descendants()
        self._atoms = frozenset(i for i, node in enumerate(net.nodes) if node.kind is not Kind.SUM)
        """Nodes that are their own expansion (the input and the halvings)."""

    def _expand_node(self, i: int, kind: Kind, terms: Terms) -> Counter[tuple[int, int, int]]:
        if kind is not Kind.SUM:
            return Counter({(i, 0, 0): 1})
        return self._expand(terms)

    def _expand(self, terms: Terms) -> Counter[tuple[int, int, int]]:
        total: Counter[tuple[int, int, int]] = Counter()
        for n, x, y, s in terms:
            for (a, ax, ay), c in self._expansions[n].items():
                total[(a, ax + x, ay + y)] += s * c
        return total

    def key(self, terms: Terms) -> Key:
        """The exact value of a term list (memoised)."""
        if (k := self._keys.get(terms)) is not None:
            return k
        if self._is_own_key(terms):
            k = terms
        else:
            k = tuple(sorted((a, x, y, c) for (a, x, y), c in self._expand(terms).items() if c))
        self._keys[terms] = k
        return k

    def key_rest(self, terms: Terms, whole: Key, other: Key) -> Key:
        """`key(terms)` where the terms and another term list whose key is `other` make up a
        sum whose key is `whole` (keys add up: the value is `whole` - `other`, computed from
        the two keys, which are sorted by atom and place, without expanding the terms)."""
        if (k := self._keys.get(terms)) is not None:
            return k
        if self._is_own_key(terms):
            k = terms
        else:
            out = list(whole)
            for a, x, y, c in other:
                i = bisect_left(out, (a, x, y))  # a place sorts before its entries
                if i < len(out) and out[i][:3] == (a, x, y):
                    left = out[i][3] - c
                    if left:
                        out[i] = (a, x, y, left)
                    else:
                        del out[i]
                else:
                    out.insert(i, (a, x, y, -c))
            k = tuple(out)
        self._keys[terms] = k
        return k

    def _is_own_key(self, terms: Terms) -> bool:
        """Whether `terms` is already its key: atoms only, at strictly increasing (node, x, y)
        (so sorted, nothing to merge or cancel). The common case, and a cheap test."""
        atoms = self._atoms
        prev = None
        for t in terms:
            if t[0] not in atoms or (prev is not None and prev >= t[:3]):
                return False
            prev = t[:3]
        return True

    def open(self, terms: Terms) -> Terms:
        """A lone sum-node term replaced by the node's own terms (shifted, signed); else as is."""
        if (t := self._opened.get(terms)) is not None:
            return t
        out = terms
        while len(out) == 1 and self.net.nodes[out[0][0]].kind is Kind.SUM:
            n, x, y, s = out[0]
            inner = translate(self.net.nodes[n].terms, x, y)
            out = inner if s > 0 else tuple(sorted((m, a, b, -t) for m, a, b, t in inner))
        self._opened[terms] = out
        return out

    def kind(self, node: int) -> Kind:
        return self.net.nodes[node].kind

    def _descendants(self) -> list[frozenset[int]]:
        """Strict descendants of every node (nodes its value is built from)."""
        out: list[frozenset[int]] = []
        for node in self.net.nodes:
            acc: set[int] = set()
            for n, _, _, _ in node.terms:
                acc.add(n)
                acc |= out[n]
            out.append(frozenset(acc))
        return out

    def needs(self, terms: Terms) -> frozenset[int]:
        """Nodes that computing `terms` may read: its own nodes and everything below them."""
        acc: set[int] = set()
        for n, _, _, _ in terms:
            acc.add(n)
            acc |= self.descendants[n]
        return frozenset(acc)


def canonical(key: Key) -> tuple[Key, tuple[int, int]]:
    """The key translated so its first atom sits at the origin, and that translation."""
    if not key:
        return key, (0, 0)
    _, x0, y0, _ = key[0]
    return tuple((a, x - x0, y - y0, c) for a, x, y, c in key), (x0, y0)


def sign_class(key: Key) -> tuple[Key, tuple[int, int], int]:
    """Translation-and-sign class of a value: canonical key (first coefficient positive),
    anchor and sign."""
    canon, anchor = canonical(key)
    sign = 1 if not canon or canon[0][3] > 0 else -1
    if sign < 0:
        canon = tuple((a, x, y, -c) for a, x, y, c in canon)
    return canon, anchor, sign
