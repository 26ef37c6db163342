"""Planning a pipeline: its linear blocks through the cpu target's search, as one program.

Every `conv` node is a kernel applied to one image (an input or a pointwise stage). All of them
are planned together as ONE filter over several inputs (`targets.cpu.plan.plan_channels`): the
input channels are the distinct images the kernels read, the outputs are the conv nodes. So each
distinct kernel is searched once (the three windows of a structure tensor share one window
plan), the kernels on one image are planned as a bank (Ix and Iy share their passes), and every
output is verified exactly against its kernel. The pointwise nodes stay as the graph has them.
"""

from __future__ import annotations

from dataclasses import dataclass

from kalg.dataflow.graph import Graph
from kalg.eqsat import engine
from kalg.targets.cpu.optimize import DEFAULT_LIMITS
from kalg.targets.cpu.plan import CpuPlan, plan_channels


@dataclass
class GraphPlan:
    """A pipeline graph with the plan of its conv nodes: `linear.outputs` is keyed by
    `conv_name(i)`, and `linear.inputs` names the images the kernels read (`operands`: their
    nodes, in the same order)."""

    graph: Graph
    linear: CpuPlan
    operands: tuple[int, ...]

    def describe(self) -> str:
        """The graph and the plan of its linear blocks (canonical text; the cache key)."""
        return self.graph.describe() + "\n" + self.linear.describe()

    def ops(self) -> int:
        """Operations per pixel: the linear passes (shared ones once) and the pointwise nodes."""
        pointwise = sum(1 for i in self.graph.live()
                        if self.graph.nodes[i].op not in ("input", "const", "conv"))
        return self.linear.ops() + pointwise


def conv_name(i: int) -> str:
    return f"n{i}"


def plan_graph(graph: Graph, limits: engine.SaturationLimits = DEFAULT_LIMITS) -> GraphPlan:
    """The verified plan of `graph`'s conv nodes (VerificationError if a pass program is wrong:
    a kalg bug)."""
    convs = graph.convs()  # none: a pointwise pipeline (or a fixpoint's part); nothing to plan
    operands = tuple(sorted({graph.nodes[i].args[0] for i in convs}))
    channels = {conv_name(i): {conv_name(graph.nodes[i].args[0]): graph.nodes[i].param}
                for i in convs}
    linear = plan_channels(channels, [conv_name(o) for o in operands], limits)
    return GraphPlan(graph, linear, operands)


__all__ = ["GraphPlan", "conv_name", "plan_graph"]
