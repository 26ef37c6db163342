"""DAG-cost extraction over a serialised e-graph (design.md decision 8).

Input: the egraph-serialize JSON, a root e-class and a per-node cost function (None = the node may
not be chosen). Output: a `Choice` (e-class → chosen node) whose reachable sub-graph is acyclic
and whose total cost, each chosen node paid once, is minimal:

* `ilp`: exact 0/1 ILP on HiGHS (highspy); cycles are cut lazily and re-solved;
* `greedy`: bottom-up tree-cost fixpoint, the fallback when the ILP does not finish in time.

Ties are broken deterministically (by node id order) so the same graph gives the same choice.
Pure Python + highspy: no egglog here.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass

import highspy
import numpy as np


@dataclass(frozen=True, slots=True)
class ENode:
    """One e-node: `op` (constructor name), child e-classes, primitive arguments (ints, strings)."""

    id: str
    op: str
    eclass: str
    children: tuple[str, ...]
    args: tuple[object, ...]


class Graph:
    """The serialised e-graph with primitives folded into their parents' `args`."""

    def __init__(self, data: dict) -> None:
        raw = data["nodes"]
        self.nodes: dict[str, ENode] = {}
        self.classes: dict[str, list[str]] = {}
        self.lets: dict[str, str] = {}
        for cid, info in data.get("class_data", {}).items():
            # several lets bound to one e-class are listed together: "$k_B, $k_C"
            for name in info.get("let", "").split(", "):
                if name:
                    self.lets[name.lstrip("$")] = cid
        for nid, nd in raw.items():
            if nid.startswith("primitive-"):
                continue
            kids, args = [], []
            for c in nd["children"]:
                if c.startswith("primitive-"):
                    args.append(_primitive(raw[c]["op"]))
                else:
                    kids.append(raw[c]["eclass"])
            node = ENode(nid, nd["op"], nd["eclass"], tuple(kids), tuple(args))
            self.nodes[nid] = node
            self.classes.setdefault(node.eclass, []).append(nid)
        for ids in self.classes.values():
            ids.sort(key=_node_order)

    def reachable(self, roots: list[str], allowed: Callable[[ENode], bool]) -> list[str]:
        """Classes reachable from `roots` through allowed nodes, in a deterministic order."""
        seen: dict[str, None] = {}
        stack = list(reversed(roots))
        while stack:
            cid = stack.pop()
            if cid in seen:
                continue
            seen[cid] = None
            for nid in self.classes.get(cid, []):
                if allowed(self.nodes[nid]):
                    stack.extend(reversed(self.nodes[nid].children))
        return list(seen)


def _primitive(op: str) -> object:
    if op.startswith('"'):
        return op[1:-1]
    try:
        return int(op)
    except ValueError:
        return op


def _node_order(nid: str) -> tuple:
    parts = nid.split("-")
    return (parts[-1], int(parts[1]) if len(parts) > 2 and parts[1].isdigit() else 0, nid)


Choice = dict[str, str]
Cost = Callable[[ENode], float | None]


def choice_cost(g: Graph, root: str, choice: Choice, cost: Cost) -> float:
    """Total cost of the nodes reachable from `root` under `choice`, each paid once."""
    seen: set[str] = set()
    stack, total = [root], 0.0
    while stack:
        cid = stack.pop()
        if cid in seen:
            continue
        seen.add(cid)
        node = g.nodes[choice[cid]]
        total += cost(node) or 0.0
        stack.extend(node.children)
    return total


def find_cycle(g: Graph, root: str, choice: Choice) -> list[str] | None:
    """Node ids of a cycle in the chosen sub-graph, or None."""
    state: dict[str, int] = {}
    path: list[str] = []

    def visit(cid: str) -> list[str] | None:
        state[cid] = 1
        path.append(cid)
        for kid in g.nodes[choice[cid]].children:
            if state.get(kid) == 1:
                return [choice[c] for c in path[path.index(kid):]]
            if kid not in state and (cyc := visit(kid)):
                return cyc
        state[cid] = 2
        path.pop()
        return None

    return visit(root)


def greedy(g: Graph, root: str, cost: Cost) -> Choice:
    """Bottom-up fixpoint of tree cost; acyclic by construction (costs strictly decrease)."""
    best: dict[str, tuple[float, str]] = {}
    classes = g.reachable([root], lambda n: cost(n) is not None)
    changed = True
    while changed:
        changed = False
        for cid in classes:
            for nid in g.classes[cid]:
                node = g.nodes[nid]
                c = cost(node)
                if c is None or any(k not in best for k in node.children):
                    continue
                total = c + sum(best[k][0] for k in node.children) + 1e-9
                if cid not in best or total < best[cid][0] - 1e-12:
                    best[cid] = (total, nid)
                    changed = True
    if root not in best:
        raise ValueError("the root e-class has no extractable term")
    return {cid: nid for cid, (_, nid) in best.items()}


ILP_BRANCH_NODES = 5_000
"""Branch-and-bound nodes per solve: a count, so the choice does not depend on machine speed."""

ILP_ROUNDS = 40
"""Cycle-cut rounds before the ILP gives up (the greedy extractor takes over)."""


def ilp(g: Graph, root: str, cost: Cost, time_limit: float | None = None,
        max_nodes: int = 20_000) -> tuple[Choice, bool]:
    """Exact minimum-DAG-cost choice; returns (choice, proven optimal).

    min Σ cost·x  s.t. one node of the root class; a chosen node's child classes have a chosen
    node; cycles cut lazily (Σ_{n in cycle} x_n <= |cycle| - 1) and re-solved. Bounded by counts
    (ILP_BRANCH_NODES, ILP_ROUNDS) so that the result is deterministic; `time_limit` (None: no
    wall-clock limit) is the user's (`--time-limit`, `--timeout`), and with it the choice may
    depend on the machine's speed. Raises TimeoutError when a bound is hit unsolved.
    """
    classes = g.reachable([root], lambda n: cost(n) is not None)
    nids = [n for c in classes for n in g.classes[c] if cost(g.nodes[n]) is not None]
    index = {n: i for i, n in enumerate(nids)}
    members: dict[str, list[int]] = {}
    for n in nids:
        members.setdefault(g.nodes[n].eclass, []).append(index[n])
    rows: list[tuple[dict[int, float], float, float]] = [
        ({i: 1.0 for i in members[root]}, 1.0, math.inf)]
    for n in nids:
        node = g.nodes[n]
        for kid in dict.fromkeys(node.children):  # ordered: row order steers HiGHS ties
            if kid == node.eclass or kid not in members:
                rows.append(({index[n]: 1.0}, 0.0, 0.0))  # self-loop or dead child: never pick
                continue
            row = {index[n]: 1.0}
            for m in members[kid]:
                row[m] = row.get(m, 0.0) - 1.0
            rows.append((row, -math.inf, 0.0))
    if len(nids) > max_nodes:
        raise TimeoutError(f"{len(nids)} extractable e-nodes is beyond the ILP's {max_nodes}")
    c = np.array([cost(g.nodes[n]) + 1e-6 for n in nids])  # tiny epsilon: no free junk nodes
    deadline = time.perf_counter() + (math.inf if time_limit is None else time_limit)
    optimal = True
    for _ in range(ILP_ROUNDS):
        left = deadline - time.perf_counter()
        if left <= 0:
            raise TimeoutError("the ILP did not converge within its time limit")
        res = _solve(c, rows, len(nids), left)
        if res.x is None:
            raise TimeoutError(res.message)
        optimal = optimal and res.optimal
        chosen = _decode(g, nids, res.x, c)
        if (cyc := find_cycle(g, root, chosen)) is None:
            return chosen, optimal
        rows.append(({index[n]: 1.0 for n in cyc}, -math.inf, len(cyc) - 1.0))
    raise TimeoutError(f"the ILP still chose a cycle after {ILP_ROUNDS} rounds of cuts")


@dataclass(frozen=True, slots=True)
class _Solution:
    x: np.ndarray | None
    """The values of the variables; None when HiGHS found no feasible point."""
    optimal: bool
    message: str


_STOPPED = ("kTimeLimit", "kIterationLimit", "kSolutionLimit")
"""Model statuses after which HiGHS's incumbent, if it has one, is feasible but not proven."""


def _solve(c: np.ndarray, rows, n: int, time_limit: float) -> _Solution:
    """min c·x, x in {0, 1}^n, lo <= row·x <= hi for each (row, lo, hi) in `rows`.

    The model and options are those scipy.optimize.milp passed to the same HiGHS version
    (1.12, pinned): the matrix column-wise with sorted row indices, only the log, node and time
    limits set. HiGHS's choice among equally cheap solutions depends on them, and kalg's
    programs on that choice. highspy rather than milp: importing scipy.optimize costs about
    0.3 s of CPU, paid by every compile."""
    columns: list[list[tuple[int, float]]] = [[] for _ in range(n)]
    for r, (coefs, _, _) in enumerate(rows):
        for j, v in coefs.items():
            columns[j].append((r, v))
    start, index, value = [0], [], []
    for column in columns:
        column.sort()
        index += [r for r, _ in column]
        value += [v for _, v in column]
        start.append(len(index))
    lp = highspy.HighsLp()
    lp.num_col_ = lp.a_matrix_.num_col_ = n
    lp.num_row_ = lp.a_matrix_.num_row_ = len(rows)
    lp.col_cost_ = np.asarray(c, dtype=np.float64)
    lp.col_lower_, lp.col_upper_ = np.zeros(n), np.ones(n)
    lp.row_lower_ = np.array([lo for _, lo, _ in rows], dtype=np.float64)
    lp.row_upper_ = np.array([hi for _, _, hi in rows], dtype=np.float64)
    lp.a_matrix_.format_ = highspy.MatrixFormat.kColwise
    lp.a_matrix_.start_ = np.array(start, dtype=np.int32)
    lp.a_matrix_.index_ = np.array(index, dtype=np.int32)
    lp.a_matrix_.value_ = np.array(value, dtype=np.float64)
    lp.integrality_ = [highspy.HighsVarType.kInteger] * n
    h = highspy.Highs()
    h.setOptionValue("log_to_console", False)
    h.setOptionValue("mip_max_nodes", ILP_BRANCH_NODES)
    h.setOptionValue("time_limit", float(time_limit))
    if h.passModel(lp) == highspy.HighsStatus.kError or h.run() == highspy.HighsStatus.kError:
        return _Solution(None, False, "HiGHS could not solve the extraction ILP")
    status = h.getModelStatus()
    name = status.name
    found = name == "kOptimal" or (
        name in _STOPPED and h.getInfo().objective_function_value != highspy.kHighsInf)
    if not found:
        return _Solution(None, False, f"the extraction ILP ended: {h.modelStatusToString(status)}")
    return _Solution(np.array(h.getSolution().col_value), name == "kOptimal", "")


def _decode(g: Graph, nids: list[str], x: np.ndarray, c: np.ndarray) -> Choice:
    chosen: dict[str, tuple[float, str]] = {}
    for i, n in enumerate(nids):
        if x[i] > 0.5:
            cid = g.nodes[n].eclass
            if cid not in chosen or c[i] < chosen[cid][0]:
                chosen[cid] = (c[i], n)
    return {cid: n for cid, (_, n) in chosen.items()}
