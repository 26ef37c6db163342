"""Printing checked definitions as .kalg text: exact north-up matrices, one row per line.

The output is itself valid .kalg and loads back to the same values (tests check this), so what
`kalg check` shows is exactly what kalg will compile. A real kernel whose coefficients share a
power-of-two denominator is printed as integers over it: `[ 1 2 1 ... ] / 16`.
"""

from __future__ import annotations

from fractions import Fraction

from kalg.algebra.kernel import REAL, Kernel
from kalg.frontend.module import Definition, Module, TargetSpec


def format_module(module: Module, name: str | None = None) -> str:
    """The target and every definition (or only the one called `name`), blank-line separated."""
    if name is not None:
        return format_definition(module.definition(name)) + "\n"
    parts = [format_target(module.target)]
    parts += [format_definition(d) for d in module.definitions.values()]
    return "\n\n".join(parts) + "\n"


def format_target(target: TargetSpec) -> str:
    if target.name == "cpu":  # no registers or op set; input channels only where named
        return f"target cpu {{ input: {' '.join(target.inputs)} }}" if target.inputs \
            else "target cpu { }"
    return (f"target {target.name} {{ registers: {_register_list(target.registers)}, "
            f"input: {' '.join(target.inputs or (target.input,))}, ops: {target.ops}"
            + (f", split: {target.split}" if target.split else "") + " }")


def format_definition(definition: Definition) -> str:
    """A definition with its exact values; approximations are explained in comments above it."""
    notes = [_approx_note(definition, register) for register in definition.approx_error]
    suffix = "" if definition.semiring is REAL else f" with semiring {definition.semiring.name}"
    if definition.pipeline is not None:
        return format_pipeline(definition.pipeline)
    if definition.channels:
        lines = [*notes, f"filter {definition.name} = ["]
        for register, parts in definition.channels.items():
            terms = [f"{format_kernel(k, one_line=True)} * {c}" for c, k in parts.items()]
            lines.append(f"  {register}: " + " + ".join(terms) + ",")
        return "\n".join(lines) + "\n]"
    if definition.kind == "kernel":
        (kernel,) = definition.outputs.values()
        head = f"kernel {definition.name} = "
        body = head + format_kernel(kernel, indent=len(head)) + suffix
    else:
        lines = [f"filter {definition.name} = ["]
        for register, kernel in definition.outputs.items():
            head = f"  {register}: "
            lines.append(head + format_kernel(kernel, indent=len(head)) + ",")
        body = "\n".join(lines) + "\n]" + suffix
    return "\n".join([*notes, body])


_INFIX = {"add": "+", "sub": "-", "mul": "*", "div": "/"}


def format_pipeline(graph) -> str:
    """A pipeline's graph as a .kalg block of one `let` per node (the stage it came from in a
    comment), constants written in place; it loads back to the same graph."""
    names = {i: graph.inputs[n.param] for i, n in enumerate(graph.nodes) if n.op == "input"}
    lines = [f"pipeline {graph.name}({', '.join(graph.inputs)}) {{"]
    inside = {j for f in graph.fixpoints() for j in graph.body(f)}
    for f in graph.fixpoints():  # the previous iterate is the fixpoint's own stage
        names[graph.nodes[f].param[0]] = f"n{f}"
    for i in graph.live():
        n = graph.nodes[i]
        if n.op in ("input", "const", "loop") or i in inside:
            continue
        names[i] = f"n{i}"
        lines.append(f"  let n{i} = {_node_text(graph, n, names)}"
                     + (f"  # {n.name}" if n.name else ""))
    lines += [f"  out {name} = {_operand(graph, v, names)}" for name, v in graph.outputs.items()]
    return "\n".join(lines) + f"\n}} with border {graph.border}"


def _node_text(graph, n, names: dict[int, str]) -> str:
    if n.op == "fixpoint":  # its body written inline: the stage's name is the previous iterate
        bound = n.param[1]
        body = set(graph.body(graph.nodes.index(n)))
        inline = dict(names)
        for j in sorted(body):
            inline[j] = f"({_node_text(graph, graph.nodes[j], inline)})"
        return f"fixpoint({_operand(graph, n.args[0], names)}, {inline[n.args[1]]}, {bound})"
    args = [_operand(graph, a, names) for a in n.args]
    if n.op == "conv":
        return f"conv({format_kernel(n.param, one_line=True)}, {args[0]})"
    if n.op in _INFIX:
        return f"{args[0]} {_INFIX[n.op]} {args[1]}"
    if n.op == "compare":
        return f"{args[0]} {n.param} {args[1]}"
    if n.op == "neg":
        return f"-{args[0]}"
    if n.op == "shift":
        return f"shift({args[0]}, {n.param[0]}, {n.param[1]})"
    return f"{n.op}({', '.join(args)})"


def _operand(graph, i: int, names: dict[int, str]) -> str:
    n = graph.nodes[i]
    if n.op != "const":
        return names[i]
    text = str(n.param)
    return f"({text})" if "/" in text or text.startswith("-") else text


def _approx_note(definition: Definition, register: str) -> str:
    error = definition.approx_error[register]
    where = f"{register}: " if definition.kind == "filter" else ""
    if definition.channels:
        exact = " + ".join(f"{format_kernel(k, one_line=True)} * {c}"
                           for c, k in definition.exact_channels[register].items())
    else:
        exact = format_kernel(definition.exact[register], one_line=True)
    measured = definition.approximation()[register].describe()
    return (f"# {where}approximated at depth {definition.approx_depth[register]}, "
            f"largest coefficient error {error} (about {float(error):.3g}); exact: {exact}\n"
            f"# {where}{measured}")


def format_kernel(kernel: Kernel, indent: int = 0, one_line: bool = False) -> str:
    """The kernel as a matrix literal: the smallest box holding its entries and offset (0, 0),
    with '.' for no entry, and `@ (row, col)` unless the box is centred on (0, 0).

    >>> print(format_kernel(Kernel.from_rows([[1, 2, 1], [2, 4, 2], [1, 2, 1]]).scale(
    ...     Fraction(1, 16))))
    [ 1 2 1
      2 4 2
      1 2 1 ] / 16
    """
    x0, x1, y0, y1 = kernel.bounds()
    x0, x1, y0, y1 = min(x0, 0), max(x1, 0), min(y0, 0), max(y1, 0)
    denominator = _common_denominator(kernel)
    taps = kernel.taps
    cells = [[_coefficient(taps[(x, y)], denominator) if (x, y) in taps else "."
              for x in range(x0, x1 + 1)] for y in range(y1, y0 - 1, -1)]
    widths = [max(len(row[c]) for row in cells) for c in range(len(cells[0]))]
    rows = [" ".join(cell.rjust(w) for cell, w in zip(row, widths, strict=True))
            for row in cells]
    separator = "; " if one_line else "\n" + " " * (indent + 2)
    text = "[ " + separator.join(rows) + " ]"
    if (x0, y0) != (-x1, -y1):
        text += f" @ ({y1}, {-x0})"
    return text + (f" / {denominator}" if denominator > 1 else "")


def _common_denominator(kernel: Kernel) -> int:
    """The largest denominator if every denominator is a power of two (real kernels), else 1."""
    if kernel.semiring is not REAL or not kernel.is_dyadic():
        return 1
    return max((Fraction(c).denominator for _, c in kernel.entries), default=1)


def _coefficient(value: object, denominator: int) -> str:
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, float):  # ±inf in min-plus and max-plus
        return "inf" if value > 0 else "-inf"
    return str(Fraction(value) * denominator)


def _register_list(registers: tuple[str, ...]) -> str:
    """'A..F' for a run of consecutive single letters, else the names separated by spaces."""
    codes = [ord(r) for r in registers if len(r) == 1]
    if len(codes) == len(registers) > 1 and codes == list(range(codes[0], codes[-1] + 1)):
        return f"{registers[0]}..{registers[-1]}"
    return " ".join(registers)
