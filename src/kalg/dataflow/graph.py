"""The pipeline DAG: images computed from input images by kernels and pointwise operations.

A `Graph` lists its nodes in an order where every node comes after its operands (the order of
the source, hash-consed: the same operation on the same operands is one node). Node operations:

| op       | operands         | param                  | value at each pixel                  |
|----------|------------------|------------------------|--------------------------------------|
| input    | -                | input index            | the input image (read outside the    |
|          |                  |                        | image only through a `conv`)          |
| const    | -                | Fraction               | the constant                          |
| conv     | image            | Kernel (real)          | the kernel correlated with the image, |
|          |                  |                        | extended by the graph's border        |
| shift    | image            | (dx, dy)               | the image at p + (dx, dy), y north;   |
|          |                  |                        | 0 outside the image (any border)      |
| add sub mul | a, b          | -                      | a + b, a - b, a · b                   |
| div      | a, c (a const)   | -                      | a / c                                 |
| neg abs sqrt | a            | -                      | -a, abs(a), sqrt(a)                   |
| min max  | a, b             | -                      | the smaller / larger                  |
| compare  | a, b             | '<' '<=' '>' '>=' '==' '!=' | 1 where it holds, else 0         |
| select   | mask, a, b       | -                      | a where mask ≠ 0, else b              |
| clamp    | a, lo, hi        | -                      | min(max(a, lo), hi)                   |
| loop     | -                | its fixpoint's stage   | the previous iterate (only inside the |
|          |                  |                        | body of its `fixpoint`)               |
| fixpoint | init, body       | (loop node, bound)     | v = init, then v = body(v) until it   |
|          |                  |                        | no longer changes (at most `bound`)   |

A fixpoint's *body* is the nodes that depend on its loop node (`Graph.body`); they are
evaluated once per iteration, the other nodes once.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction

from kalg.algebra.kernel import Kernel
from kalg.diagnostics import Span

POINTWISE = ("add", "sub", "mul", "div", "neg", "abs", "sqrt", "min", "max", "compare",
             "select", "clamp")
"""The operations that read their operands at the same pixel only."""

ARITY = {"input": 0, "const": 0, "conv": 1, "shift": 1, "add": 2, "sub": 2, "mul": 2, "div": 2,
         "neg": 1, "abs": 1, "sqrt": 1, "min": 2, "max": 2, "compare": 2, "select": 3, "clamp": 3,
         "loop": 0, "fixpoint": 2}

COMPARISONS = ("<", "<=", ">", ">=", "==", "!=")


@dataclass(frozen=True, slots=True)
class Node:
    """One image (or constant) of the pipeline; `name` is the stage it was written as, if any,
    and `span` where (for errors about it)."""

    op: str
    args: tuple[int, ...] = ()
    param: object = None
    name: str = field(default="", compare=False)
    span: Span | None = field(default=None, compare=False)


@dataclass(frozen=True, slots=True)
class Graph:
    """A checked pipeline: `nodes` in dependency order, `outputs` (name → node) in the order
    written, `inputs` the parameter names (input index i is `inputs[i]`), `border` the border
    every `conv` extends its operand with (a `borders.parse_border` text)."""

    name: str
    inputs: tuple[str, ...]
    nodes: tuple[Node, ...]
    outputs: dict[str, int]
    border: str = "replicate"

    def live(self) -> list[int]:
        """The nodes some output depends on, in dependency order."""
        needed: set[int] = set(self.outputs.values())
        for i in range(len(self.nodes) - 1, -1, -1):
            if i in needed:
                needed.update(self.nodes[i].args)
        return sorted(needed)

    def readers(self) -> dict[int, int]:
        """How many live nodes (and outputs) read each node."""
        count: dict[int, int] = {}
        for i in self.live():
            for a in self.nodes[i].args:
                count[a] = count.get(a, 0) + 1
        for v in self.outputs.values():
            count[v] = count.get(v, 0) + 1
        return count

    def body(self, fixpoint: int) -> list[int]:
        """The live nodes of a fixpoint's body: those depending on its loop node, in order."""
        loop = self.nodes[fixpoint].param[0]
        inside = {loop}
        for i in self.live():
            if i != fixpoint and any(a in inside for a in self.nodes[i].args):
                inside.add(i)
        return [i for i in self.live() if i in inside and i != loop]

    def fixpoints(self) -> list[int]:
        """The live fixpoint nodes, in order."""
        return [i for i in self.live() if self.nodes[i].op == "fixpoint"]

    def convs(self) -> list[int]:
        """The live `conv` nodes."""
        return [i for i in self.live() if self.nodes[i].op == "conv"]

    def describe(self) -> str:
        """A canonical, deterministic text of the graph (one node a line, then the outputs):
        what kalg prints and part of the compiled pipeline's cache key."""
        from kalg.frontend.report import format_kernel
        lines = [f"pipeline {self.name}({', '.join(self.inputs)}) border {self.border}"]
        for i in self.live():
            n = self.nodes[i]
            words = [n.op, *(f"n{a}" for a in n.args)]
            if isinstance(n.param, Kernel):
                words.append(format_kernel(n.param, one_line=True))
            elif n.param is not None:
                words.append(str(n.param))
            label = f"  # {n.name}" if n.name else ""
            lines.append(f"n{i} = {' '.join(words)}{label}")
        lines += [f"out {name} = n{v}" for name, v in self.outputs.items()]
        return "\n".join(lines)


class Builder:
    """Appends hash-consed nodes: the same (op, operands, param) is made once; operations on
    constants only are folded (exactly, except sqrt)."""

    def __init__(self) -> None:
        self.nodes: list[Node] = []
        self._index: dict[tuple, int] = {}

    def add(self, op: str, args: tuple[int, ...] = (), param: object = None, name: str = "",
            span: Span | None = None) -> int:
        if (folded := self._fold(op, args, param)) is not None:
            return self.const(folded)
        key = (op, args, param)
        if (found := self._index.get(key)) is None:
            found = self._index[key] = len(self.nodes)
            self.nodes.append(Node(op, args, param, name, span))
        return found

    def const(self, value: Fraction) -> int:
        return self.add("const", (), Fraction(value))

    def constant(self, i: int) -> Fraction | None:
        """The value of node i if it is a constant."""
        n = self.nodes[i]
        return n.param if n.op == "const" else None

    def _fold(self, op: str, args: tuple[int, ...], param: object) -> Fraction | None:
        if op in ("input", "const", "conv", "shift", "sqrt", "loop", "fixpoint") or not args:
            return None
        values = [self.constant(a) for a in args]
        if any(v is None for v in values):
            return None
        return Fraction(_fold(op, values, param))


def _fold(op: str, v: list[Fraction], param: object) -> Fraction | int:
    match op:
        case "add":
            return v[0] + v[1]
        case "sub":
            return v[0] - v[1]
        case "mul":
            return v[0] * v[1]
        case "div":
            return v[0] / v[1]
        case "neg":
            return -v[0]
        case "abs":
            return abs(v[0])
        case "min":
            return min(v)
        case "max":
            return max(v)
        case "select":
            return v[1] if v[0] != 0 else v[2]
        case "clamp":
            return min(max(v[0], v[1]), v[2])
        case "compare":
            return int(compare(str(param), v[0], v[1]))
    raise ValueError(op)


def compare(op: str, a, b):
    """`a op b` for numbers or numpy arrays."""
    match op:
        case "<":
            return a < b
        case "<=":
            return a <= b
        case ">":
            return a > b
        case ">=":
            return a >= b
        case "==":
            return a == b
    return a != b


__all__ = ["ARITY", "COMPARISONS", "POINTWISE", "Builder", "Graph", "Node", "compare"]
