"""A decomposition's DAG seeded into a serialised e-graph, and DAGs compared up to numbering.

A decomposition source (Horner's digit planes, the separable split, a factor chain, the
expression as written, ...) seeds the lowering e-graph with its term, each output's root e-node
put in the output's e-class (an equality with the literal): `seed` adds the DAG's values as
e-nodes, hash-consed (a value the e-graph holds already is that e-node, in its e-class with
every alternative the rules found for it), so an extraction rooted at the seed chooses, below
its root, among the seed's own terms and the e-graph's. It is done on the saturated graph,
after the rules ran: they do not rewrite the seeds (rewriting them doubled the lowering's CPU
time on a 3x3 binomial, and the e-graph's own extraction is then that of the unseeded graph).
`same_dag` compares two DAGs up to the numbering of their values.

Pure Python: no egglog here.
"""

from __future__ import annotations

from kalg.algebra.decomp import Decomposition, Op
from kalg.eqsat.extract import ENode, Graph

_IMG = {Op.INPUT: "Input", Op.SHIFT: "Shift", Op.ADD: "Add", Op.SUB: "Sub", Op.NEG: "Neg",
        Op.HALF: "Half"}
"""The Img constructor of each value op (rules/kernel.egg)."""


def seed(graph: Graph, d: Decomposition, tag: str, classes: dict[str, str]) -> dict[int, str]:
    """Add the live values of `d` to `graph` as Img e-nodes (ids `TAG-I`, new e-classes
    `TAG-cI`), each output's root e-node into its e-class `classes[NAME]`; a value whose e-node
    the graph holds already (same op, shift and child e-classes) is that e-node. Returns each
    live value's e-node. Mutates `graph`."""
    known = {(n.op, n.children, n.args): n.id for n in graph.nodes.values()}
    roots = {i: classes[name] for name, i in d.outputs}
    found: dict[int, str] = {}
    for i in d.live():
        v = d.values[i]
        key = (_IMG[v.op], tuple(graph.nodes[found[a]].eclass for a in v.args),
               (v.dx, v.dy) if v.op is Op.SHIFT else ())
        nid = known.get(key)
        if nid is None or (i in roots and graph.nodes[nid].eclass != roots[i]):
            nid = f"{tag}-{i}"
            node = ENode(nid, key[0], roots.get(i, f"{tag}-c{i}"), key[1], key[2])
            graph.nodes[nid] = node
            graph.classes.setdefault(node.eclass, []).append(nid)
            known.setdefault(key, nid)
        found[i] = nid
    return found


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
