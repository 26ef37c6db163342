"""A graph with a fixpoint, cut into three graphs without one: `split(graph) -> Split`.

* `before`: the images the first fixpoint needs: its initial value (output "init") and every
  image outside its body that the body reads (outputs "free0", "free1", ...).
* `body`: one iteration: inputs the previous iterate ("state") and those images; output "next".
* `after`: the whole graph with the fixpoint's value as one more input (its stage's name); the
  body is gone. It may hold further fixpoints: split it again.

A target that compiles graphs without fixpoints runs `before` once, `body` until its output
equals its input (at most `bound` times), then `after`
(`kalg.targets.cpu.pipelines.FixpointPipeline`). The three graphs keep the node names and
spans, so their errors point at the pipeline's text.
"""

from __future__ import annotations

from dataclasses import dataclass

from kalg.dataflow.graph import Builder, Graph


@dataclass(frozen=True, slots=True)
class Split:
    before: Graph
    body: Graph
    after: Graph
    bound: int
    node: int
    """The fixpoint node of the graph that was split (for its name and span)."""


def split(graph: Graph) -> Split:
    """The first fixpoint of `graph` cut out (see the module's docstring)."""
    f = graph.fixpoints()[0]
    node = graph.nodes[f]
    loop, bound = node.param
    body = graph.body(f)
    inside = {loop, *body}
    free = sorted({a for j in body for a in graph.nodes[j].args
                   if a not in inside and graph.nodes[a].op != "const"})
    outputs = {"init": node.args[0]} | {f"free{k}": a for k, a in enumerate(free)}
    before = Graph(graph.name, graph.inputs, graph.nodes, outputs, graph.border)
    return Split(before, _body(graph, f, free), _after(graph, f, inside), bound, f)


def _body(graph: Graph, f: int, free: list[int]) -> Graph:
    loop = graph.nodes[f].param[0]
    b = Builder()
    new = {loop: b.add("input", (), 0, "state")}
    for k, a in enumerate(free):
        new[a] = b.add("input", (), k + 1, f"free{k}")
    for j in graph.body(f):
        new.update({a: b.const(graph.nodes[a].param) for a in graph.nodes[j].args
                    if graph.nodes[a].op == "const"})
        n = graph.nodes[j]
        new[j] = b.add(n.op, tuple(new[a] for a in n.args), n.param, n.name, n.span)
    inputs = ("state", *(f"free{k}" for k in range(len(free))))
    return Graph(graph.name, inputs, tuple(b.nodes), {"next": new[graph.nodes[f].args[1]]},
                 graph.border)


def _after(graph: Graph, f: int, inside: set[int]) -> Graph:
    b = Builder()
    new: dict[int, int] = {}
    name = graph.nodes[f].name or f"fixpoint{f}"
    for i in graph.live():
        n = graph.nodes[i]
        if i in inside:
            continue
        if i == f:
            new[i] = b.add("input", (), len(graph.inputs), name, n.span)
            continue
        param = (new[n.param[0]], n.param[1]) if n.op == "fixpoint" else n.param
        new[i] = b.add(n.op, tuple(new[a] for a in n.args), param, n.name, n.span)
    outputs = {o: new[v] for o, v in graph.outputs.items()}
    return Graph(graph.name, (*graph.inputs, name), tuple(b.nodes), outputs, graph.border)


def parts(graph: Graph) -> list[Graph]:
    """The graphs without a fixpoint that a target compiles for `graph`, in the order they
    first run (`graph` itself when it has no fixpoint)."""
    if not graph.fixpoints():
        return [graph]
    cut = split(graph)
    return [*parts(cut.before), *parts(cut.body), *parts(cut.after)]


__all__ = ["Split", "parts", "split"]
