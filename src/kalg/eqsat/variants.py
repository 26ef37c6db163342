"""Kernel-level extraction: the k cheapest Kernel terms of each output (design.md decision 8).

The first e-graph holds only the algebra (Kernel terms: seeded factorisations, digit planes, pair
splits, and the ring laws that move halvings and reorder factors). Lowering every form it holds
to register operations at once multiplies the e-graph beyond what an exact extractor can solve,
so kalg extracts a few *variants* per output here - each a complete Kernel term - and lowers only
those (optimize.py). The image-level ILP then chooses among the variants with DAG sharing.

Variants are the best term by tree cost and its cheapest single deviations (one e-class takes
another e-node), plus, for a filter with several outputs, the forms that apply another output's
kernel to the input first: that output's value is then computed once for both (work sharing).
Pure Python: no egglog here.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from kalg.eqsat import terms as t
from kalg.eqsat.extract import Cost, ENode, Graph

Best = dict[str, tuple[float, str]]


def tree_costs(g: Graph, cost: Cost) -> Best:
    """e-class → (cheapest tree cost, its e-node), a child read twice by one node paid once."""
    best: Best = {}
    changed = True
    while changed:
        changed = False
        for cid, nids in g.classes.items():
            for nid in nids:
                total = node_cost(g.nodes[nid], cost, best)
                if total < best.get(cid, (math.inf, ""))[0] - 1e-12:
                    best[cid] = (total, nid)
                    changed = True
    return best


def node_cost(node: ENode, cost: Cost, best: Best) -> float:
    own = cost(node)
    if own is None or any(k not in best for k in node.children):
        return math.inf
    return own + sum(best[k][0] for k in dict.fromkeys(node.children))


def render(g: Graph, cid: str, choice: dict[str, str]) -> str | None:
    """The term text `choice` picks for class `cid`; None if the choice is cyclic there."""
    active: set[str] = set()
    memo: dict[str, str] = {}

    def go(c: str) -> str | None:
        if c in memo:
            return memo[c]
        if c in active:
            return None
        active.add(c)
        node = g.nodes[choice[c]]
        parts = [_arg(a) for a in node.args]
        for kid in node.children:
            text = go(kid)
            if text is None:
                return None
            parts.append(text)
        active.discard(c)
        memo[c] = f"({' '.join([node.op, *parts])})"
        return memo[c]

    return go(cid)


def _arg(a: object) -> str:
    return f'"{a}"' if isinstance(a, str) else str(a)


@dataclass(frozen=True, slots=True)
class Variant:
    """One extracted Kernel term and the e-nodes it was read from."""

    term: str
    nodes: frozenset[str]


def variants(g: Graph, roots: dict[str, str], cost: Cost, k: int = 4,
             ) -> dict[str, list[Variant]]:
    """Up to `k` distinct Kernel terms per output (root e-class), cheapest first."""
    best = tree_costs(g, cost)
    base = {cid: nid for cid, (_, nid) in best.items()}
    out: dict[str, list[str]] = {}
    for name, root in roots.items():
        if root not in best:
            raise ValueError(f"output {name} has no extractable Kernel term")
        others = {r for n, r in roots.items() if n != name and r != root}
        found: dict[str, Variant] = {}
        for choice in _choices(g, root, base, best, cost, others):
            text = render(g, root, choice)
            if text is not None and text not in found:
                nodes = frozenset(choice[c] for c in _tree_classes(g, root, choice))
                found[text] = Variant(text, nodes)
            if len(found) >= k:
                break
        out[name] = list(found.values())
    return out


def _choices(g: Graph, root: str, base: dict[str, str], best: Best, cost: Cost,
             others: set[str]):
    """The best choice, then sharing forms, then single deviations by increasing extra cost."""
    yield base
    for nid in g.classes[root]:
        node = g.nodes[nid]
        if node.op == "KCompose" and node.children[1] in others:
            yield base | {root: nid}
    deviations = []
    for cid in _tree_classes(g, root, base):
        for nid in g.classes[cid]:
            if nid == base[cid]:
                continue
            extra = node_cost(g.nodes[nid], cost, best) - best[cid][0]
            if math.isfinite(extra):
                deviations.append((extra, cid, nid))
    for _, cid, nid in sorted(deviations):
        yield base | {cid: nid}


def _tree_classes(g: Graph, root: str, choice: dict[str, str]) -> list[str]:
    seen: dict[str, None] = {}
    stack = [root]
    while stack:
        cid = stack.pop()
        if cid not in seen:
            seen[cid] = None
            stack.extend(reversed(g.nodes[choice[cid]].children))
    return list(seen)


def provenance(g: Graph, seeded: list[tuple[str, str]], chosen: frozenset[str],
               rules: str, introduced: dict[str, str] | None = None) -> list[str]:
    """Where the chosen e-nodes came from: the analyses whose seeded terms they are (a seed's
    top e-node names its analysis), the analyses that introduced a literal whose e-class the
    chosen nodes pass through (`introduced`: key → analysis; the ring laws may have rewritten
    that seed's top), and `rules` if any chosen node is in no seeded term."""
    index = {(n.op, n.args, n.children): n for n in g.nodes.values()}
    tops: dict[str, str] = {}
    parts: set[str] = set()
    for text, analysis in seeded:
        node = _locate(index, t.parse(text), parts)
        if node is not None:
            tops.setdefault(node.id, analysis)
    found = {tops[n] for n in chosen if n in tops}
    introduced = introduced or {}
    for cid in dict.fromkeys(g.nodes[n].eclass for n in chosen):
        for nid in g.classes[cid]:
            node = g.nodes[nid]
            if node.op == "Lit" and node.args[0] in introduced:
                found.add(introduced[node.args[0]])
    if any(n not in parts and g.nodes[n].op != "Sh" for n in chosen):
        found.add(rules)
    return sorted(found)


def chosen_forms(g: Graph, choice: dict[str, str], outputs: dict[str, str],
                 forms: dict[str, list[str]]) -> dict[str, int | None]:
    """Which offered Kernel form each output's extracted register operations came from.

    `g` is the lowering e-graph, `choice` its extraction, `outputs` maps each output to its Img
    e-class and `forms` to the Kernel terms offered for it. A form explains the Img e-classes its
    lowering reaches (`_lowered_classes`: Apply(k, x) for its subterms k on the images x the lower
    rules give them); the form that explains most of the output's chosen e-classes wins (ties:
    the earlier, cheaper form). None when no form explains more than the output's own e-class
    (every form reaches it): the tap-by-tap digit planes were extracted.
    """
    index = {(n.op, n.args, n.children): n for n in g.nodes.values()}
    applies = {(n.children[0], n.children[1]): n.eclass
               for n in g.nodes.values() if n.op == "Apply"}
    halves = {n.children[0]: n.eclass for n in g.nodes.values() if n.op == "Half"}
    inputs = [n.eclass for n in g.nodes.values() if n.op == "Input"]
    picked: dict[str, int | None] = {}
    for name, root in outputs.items():
        below = set(_tree_classes(g, root, choice))
        best, picked[name] = 1, None
        for i, text in enumerate(forms[name]):
            reached = _lowered_classes(index, applies, halves, t.parse(text), inputs)
            score = len(below & reached)
            if score > best:
                best, picked[name] = score, i
    return picked


def _lowered_classes(index: dict, applies: dict, halves: dict, term: list,
                     images: list[str]) -> set[str]:
    """The Img e-classes of Apply(sub, x) for the subterms `sub` of `term` applied to `images` as
    rules/lower.egg does: sums and negations apply their parts to x, a halving to x and to x/2,
    a composition a·b applies b to x and a to the result."""
    reached: set[str] = set()
    # Subterms are met again and again (every image, and a halving's x and x/2 double the
    # walks below it), so each subterm's e-class and each (subterm, image) walk are
    # remembered. Keyed by the subterm's identity: `term` is alive throughout.
    located: dict[int, ENode | None] = {}
    walked: dict[tuple[int, str], str | None] = {}

    def go(sub: list, x: str) -> str | None:
        if (key := (id(sub), x)) in walked:
            return walked[key]
        walked[key] = out = _walk(sub, x)
        return out

    def _walk(sub: list, x: str) -> str | None:
        node = _locate(index, sub, set(), located)
        out = None if node is None else applies.get((node.eclass, x))
        if out is None:
            return None
        reached.add(out)
        kids = [a for a in sub[1:] if isinstance(a, list)]
        match sub[0]:
            case "KAdd" | "KSub" | "KNeg":
                for kid in kids:
                    go(kid, x)
            case "KHalf":
                go(kids[0], x)
                if (half := halves.get(x)) is not None:
                    go(kids[0], half)
            case "KCompose":
                if (inner := go(kids[1], x)) is not None:
                    go(kids[0], inner)
        return out

    for x in images:
        go(term, x)
    return reached


def _locate(index: dict, term: list, parts: set[str],
            located: dict[int, ENode | None] | None = None) -> ENode | None:
    """The e-node of `term` (a parsed s-expression) if all its parts are in the graph; the ids
    of the parts found are added to `parts`. `located`, where given, remembers each subterm's
    node by the subterm's identity (a remembered subterm adds no ids to `parts`)."""
    if located is not None and id(term) in located:
        return located[id(term)]
    args = tuple(t.atom(a) for a in term[1:] if not isinstance(a, list))
    kids = []
    node = None
    for sub in (a for a in term[1:] if isinstance(a, list)):
        if (kid := _locate(index, sub, parts, located)) is None:
            break
        kids.append(kid.eclass)
    else:
        node = index.get((term[0], args, tuple(kids)))
    if node is not None:
        parts.add(node.id)
    if located is not None:
        located[id(term)] = node
    return node


def halvings_first(term: str) -> str:
    """The same kernel with the halvings of its sums and products gathered at the top:
    (a/2)·b = (a·b)/2 and a/2 + b/2 = (a + b)/2. Applied to an image, all of them then act on
    the input first - where every output of a filter can share them."""
    halvings, core = _hoist(t.parse(term))
    return _text(_halved(core, halvings))


def _hoist(term: list | str) -> tuple[int, list | str]:
    """(h, core) with term = core / 2^h and h as large as the sums allow."""
    if not isinstance(term, list):
        return 0, term
    match term[0]:
        case "KHalf":
            h, core = _hoist(term[1])
            return h + 1, core
        case "KCompose":
            (ha, a), (hb, b) = _hoist(term[1]), _hoist(term[2])
            return ha + hb, _compose(a, b)
        case "KNeg":
            h, core = _hoist(term[1])
            return h, ["KNeg", core]
        case "KAdd" | "KSub":
            (ha, a), (hb, b) = _hoist(term[1]), _hoist(term[2])
            h = min(ha, hb)
            return h, [term[0], _halved(a, ha - h), _halved(b, hb - h)]
    return 0, term


def _compose(a: list | str, b: list | str) -> list | str:
    unit = ["Sh", "0", "0"]
    return b if a == unit else a if b == unit else ["KCompose", a, b]


def _halved(term: list | str, times: int) -> list | str:
    for _ in range(times):
        term = ["KHalf", term]
    return term


def _text(term: list | str) -> str:
    return term if isinstance(term, str) else f"({' '.join(_text(part) for part in term)})"
