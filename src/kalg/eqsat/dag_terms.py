"""A decomposition's DAG as Img terms (egglog text), and its nodes found again in the e-graph.

A decomposition source (Horner's digit planes, the separable split, a factor chain, the
expression as written, ...) seeds the lowering e-graph with its term form, unioned with the
output's e-class (`lowering_facts`): one `let` per value, so shared values stay shared and the
text stays linear in the DAG's size. `seed_nodes` finds each seeded value's e-node in the
serialised graph (by its `let`'s e-class, op and child e-classes), so an extraction can be
rooted at the seed; `same_dag` compares two DAGs up to the numbering of their values.

Pure Python: no egglog here.
"""

from __future__ import annotations

from kalg.algebra.decomp import Decomposition, Op, Value
from kalg.eqsat.extract import Graph

_IMG = {Op.SHIFT: "Shift", Op.ADD: "Add", Op.SUB: "Sub", Op.NEG: "Neg", Op.HALF: "Half"}
"""The Img constructor of each value op (rules/kernel.egg); the input is `(Input)`."""


def img_lets(d: Decomposition, tag: str) -> tuple[list[str], dict[str, str]]:
    """egglog `let` lines `$TAG_I` for the live values of `d`, and each output's term (its
    value's `let` name, or `(Input)`): the decomposition's term form."""
    names = {0: "(Input)"}
    lines = []
    for i in d.live():
        v = d.values[i]
        if v.op is Op.INPUT:
            continue
        args = " ".join(names[a] for a in v.args)
        shift = f" {v.dx} {v.dy}" if v.op is Op.SHIFT else ""
        names[i] = f"${tag}_{i}"
        lines.append(f"(let {names[i]} ({_IMG[v.op]} {args}{shift}))")
    return lines, {name: names[i] for name, i in d.outputs}


def seed_nodes(graph: Graph, d: Decomposition, tag: str) -> dict[int, str]:
    """The e-node of each live value of `d` seeded by `img_lets(d, tag)`: the node of its
    `let`'s e-class with the value's op, shift and child e-classes."""
    found: dict[int, str] = {}
    for i in d.live():
        v = d.values[i]
        if v.op is Op.INPUT:
            found[i] = next(n.id for n in graph.nodes.values() if n.op == "Input")
            continue
        kids = tuple(graph.nodes[found[a]].eclass for a in v.args)
        args = (v.dx, v.dy) if v.op is Op.SHIFT else ()
        found[i] = next(nid for nid in graph.classes[graph.lets[f"{tag}_{i}"]]
                        if _matches(graph.nodes[nid], v, kids, args))
    return found


def _matches(node, v: Value, kids: tuple[str, ...], args: tuple[int, ...]) -> bool:
    return node.op == _IMG[v.op] and node.children == kids and node.args == args


def same_dag(a: Decomposition, b: Decomposition) -> bool:
    """Whether `a` and `b` compute the same values with the same sharing and the same outputs,
    whatever order their values were built in (sums compared with their operands unordered)."""
    table: dict[tuple, int] = {}
    live_a, outs_a = _interned(a, table)
    live_b, outs_b = _interned(b, table)
    return outs_a == outs_b and live_a == live_b


def _interned(d: Decomposition, table: dict[tuple, int]) -> tuple[frozenset[int], dict]:
    """Each live value of `d` as an id in `table` (op, argument ids, shift), shared by both
    DAGs compared: (the ids of the live values, each output's id)."""
    ids: dict[int, int] = {}
    for i in d.live():
        v = d.values[i]
        args = tuple(ids[x] for x in v.args)
        key = (v.op, tuple(sorted(args)) if v.op is Op.ADD else args, v.dx, v.dy)
        ids[i] = table.setdefault(key, len(table))
    return frozenset(ids.values()), {name: ids[i] for name, i in d.outputs}
