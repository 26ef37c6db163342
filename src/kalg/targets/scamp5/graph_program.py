"""A pipeline on SCAMP-5: its graph → one verified program of linear blocks and `abs`.

Every stage SCAMP-5 runs (`dataflow.check_scamp5`) is linear but `abs`, so every image of the
pipeline is a linear form over *sources* (`machine.piecewise`): the input image and the
absolute values taken. A source's depth is 0 for the input and 1 + the deepest source of its
operand for an absolute value. The program is, for depth d = 0, 1, ...: one *linear block*
computing the operands of every absolute value of depth d + 1 (a filter over the registers
holding the sources it reads, compiled by the ordinary SCAMP-5 compile, `compile_block`, so
each block is a searched, verified program: Gx and Gy of a gradient share their passes), then
one `abs` per operand; and last the block computing the outputs.

Registers: the sources a later block reads stay where they are (out of the block's budget; a
source the block both reads and must keep is copied first), each operand gets a register of
the budget that holds no input of the block, and each `abs` writes a register that holds
nothing still needed. Too few registers is a RegisterPressureError located at the pipeline.

The joined program is verified against the pipeline twice: exactly, by symbolic execution over
the sources (`piecewise.verify`: each output register holds the output's form over the input
and the same absolute values), and in the simulator on integer images against the pipeline's
numpy reference (`kalg.dataflow.reference`), compared for equality on the interior (every value
is an integer over a power of two, exact in float64; outside the interior SCAMP-5 reads 0 where
the pipeline extends its border).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from kalg.algebra.kernel import Kernel
from kalg.dataflow import reference
from kalg.dataflow.graph import Graph
from kalg.diagnostics import (
    KalgSemanticError,
    RegisterPressureError,
    Span,
    VerificationError,
)
from kalg.targets.scamp5.layers import kernel_text
from kalg.targets.scamp5.machine import piecewise
from kalg.targets.scamp5.machine.isa import Abs, Instr, Mov
from kalg.targets.scamp5.machine.piecewise import Form, Source
from kalg.targets.scamp5.machine.simulator import footprint, simulate

CompileBlock = Callable[[str], list[Instr]]
""".kalg text of one filter → its verified program (the ordinary SCAMP-5 compile)."""


@dataclass(frozen=True, slots=True)
class Lowered:
    """The joined program, where each output ends (`outputs`: name → register), and how many
    linear blocks and absolute values it has."""

    program: list[Instr]
    outputs: dict[str, str]
    blocks: int
    absolutes: int


def lower_graph(graph: Graph, registers: tuple[str, ...], input_register: str, ops: str,
                target: str, compile_block: CompileBlock, span: Span | None = None) -> Lowered:
    """The verified program of `graph` (checked by `dataflow.check_scamp5` already) on
    `registers`, the image starting in `input_register`."""
    forms, operands = _forms(graph)
    depth = _depths(operands)
    blocks: list[list[tuple[Source | str, Form]]] = [
        [(s, operands[s]) for s in sorted(operands, key=repr) if depth[s] == d + 1]
        for d in range(max(depth.values(), default=0))]
    blocks.append([(name, forms[v]) for name, v in graph.outputs.items()])
    state = _Assembly(registers, {("input", graph.inputs[0]): input_register}, span)
    for number, targets in enumerate(blocks):
        later = {s for block in blocks[number + 1:] for _, f in block for s in f}
        placed = state.block(targets, later, graph.name, target, ops, compile_block)
        if number < len(blocks) - 1:
            state.absolutes(placed)
    outputs = {name: placed[name] for name in graph.outputs}
    _verify(graph, state.program, input_register, forms, outputs)
    count = sum(len(b) for b in blocks[:-1])
    return Lowered(state.program, outputs, len(blocks), count)


def _forms(graph: Graph) -> tuple[dict[int, Form], dict[Source, Form]]:
    """Each live node's form over the sources, and each absolute value's operand form."""
    forms: dict[int, Form] = {}
    operands: dict[Source, Form] = {}
    for i in graph.live():
        n = graph.nodes[i]
        a = [forms.get(j) for j in n.args]
        match n.op:
            case "input":
                forms[i] = {("input", graph.inputs[n.param]): Kernel.unit()}
            case "const":
                continue  # read only as a scale factor (check_scamp5 refused the rest)
            case "conv":
                forms[i] = {s: n.param.compose(k).trimmed() for s, k in a[0].items()}
            case "shift":  # zero fill outside, as SCAMP-5 reads; checked on the interior
                forms[i] = piecewise.shifted(a[0], *n.param)
            case "add" | "sub":
                forms[i] = piecewise.combine([(Fraction(1), a[0]),
                                              (Fraction(1 if n.op == "add" else -1), a[1])])
            case "neg":
                forms[i] = piecewise.scaled(a[0], -1)
            case "mul" | "div":
                factor = next(graph.nodes[j].param for j in n.args if graph.nodes[j].op == "const")
                image = next(f for f in a if f is not None)
                forms[i] = piecewise.scaled(image, factor if n.op == "mul" else 1 / factor)
            case "abs":
                forms[i] = piecewise.abs_source(a[0])
                operands.update({s: a[0] for s in forms[i]})
        _check_dyadic(n, forms[i])
    return forms, operands


def _check_dyadic(node, form: Form) -> None:
    odd = next((c for k in form.values() for _, c in k.entries
                if Fraction(c).denominator & (Fraction(c).denominator - 1)), None)
    if odd is not None:
        stage = f"stage {node.name!r}" if node.name else "this stage"
        raise KalgSemanticError(
            f"{stage} has the coefficient {odd}, not an integer over a power of two: SCAMP-5 "
            "only halves", node.span,
            hint="scale the kernels to dyadic coefficients, or compile with --target cpu")


def _depths(operands: dict[Source, Form]) -> dict[Source, int]:
    depth: dict[Source, int] = {}

    def of(source: Source) -> int:
        if source[0] == "input":
            return 0
        if source not in depth:
            depth[source] = 1 + max((of(s) for s in operands[source]), default=0)
        return depth[source]

    for source in operands:
        of(source)
    return depth


class _Assembly:
    """The program being joined, and which register holds each source."""

    def __init__(self, registers: tuple[str, ...], holding: dict[Source, str],
                 span: Span | None) -> None:
        self.registers, self.holding, self.span = registers, dict(holding), span
        self.program: list[Instr] = []
        self.operands: dict[Source, str] = {}

    def block(self, targets: list[tuple[Source | str, Form]], later: set[Source], name: str,
              target: str, ops: str, compile_block: CompileBlock) -> dict[Source | str, str]:
        """Compile one linear block; return where each of its targets ends."""
        reads = sorted({s for _, f in targets for s in f}, key=lambda s: self.holding[s])
        reading = {s: self.holding[s] for s in reads}
        self.holding = {s: r for s, r in self.holding.items() if s in later or s in reads}
        for source in [s for s in reads if s in later]:  # kept across the block: a copy
            spare = self._free(set(self.holding.values()), "a copy of a source kept")
            self.program.append(Mov(spare, self.holding[source]))
            self.holding[source] = spare
        kept = {r for s, r in self.holding.items() if s in later}
        inputs = tuple(reading.values()) or (next(r for r in self.registers if r not in kept),)
        budget = tuple(r for r in self.registers if r not in kept)
        places = [r for r in budget if r not in inputs]
        if len(places) < len(targets):
            raise RegisterPressureError(
                f"pipeline {name!r}: a block of {len(targets)} images needs {len(targets)} "
                f"registers besides its inputs {' '.join(inputs)} and the {len(kept)} kept, "
                f"but {' '.join(self.registers)} has {len(places)}", self.span)
        placed = {t: r for (t, _), r in zip(targets, places, strict=False)}
        text = _block_text(name, target, ops, budget, inputs, reading,
                           {r: f for (t, f), r in zip(targets, places, strict=False)})
        self.program += compile_block(text)
        self.holding = {s: r for s, r in self.holding.items() if s in later}
        self.operands = {t: r for t, r in placed.items() if not isinstance(t, str)}
        return placed

    def absolutes(self, placed: dict) -> None:
        """`abs` of each operand just computed, into a register holding nothing needed."""
        for source, register in placed.items():
            busy = set(self.holding.values()) | set(self.operands.values())
            y = self._free(busy, "an absolute value")
            self.program.append(Abs(y, register))
            self.holding[source] = y
            del self.operands[source]

    def _free(self, busy: set[str], what: str) -> str:
        free = [r for r in self.registers if r not in busy]
        if not free:
            raise RegisterPressureError(
                f"no register is free for {what}: {' '.join(self.registers)} all hold images "
                "still needed", self.span, hint="use fewer stages of one depth")
        return free[0]


def _block_text(name: str, target: str, ops: str, budget: tuple[str, ...],
                inputs: tuple[str, ...], reading: dict[Source, str],
                targets: dict[str, Form]) -> str:
    """The .kalg text of one block: a target block with its budget and inputs, and a filter
    of its targets in their registers (over the input registers when it reads several)."""
    parts = []
    for register, form in targets.items():
        if len(reading) <= 1:
            kernel = next(iter(form.values()), None)
            parts.append(f"{register}: {kernel_text(kernel) if kernel else '[0]'}")
            continue
        terms = [f"{kernel_text(k)} * {reading[s]}" for s, k in sorted(form.items(), key=repr)]
        parts.append(f"{register}: {' + '.join(terms) or '[0] * ' + inputs[0]}")
    return (f"target {target} {{ registers: {' '.join(budget)}, input: {' '.join(inputs)}, "
            f"ops: {ops} }}\nfilter {name} = [{', '.join(parts)}]\n")


VERIFY_IMAGES = 4
"""Integer images the joined program is simulated on (one batch)."""


def _verify(graph: Graph, program: list[Instr], input_register: str, forms: dict[int, Form],
            outputs: dict[str, str]) -> None:
    """Symbolic over the sources, then the simulator against the reference on integer images
    (values −255..255: every sign reaches each abs), equal on the interior."""
    piecewise.verify(program, {input_register: graph.inputs[0]},
                     {outputs[n]: forms[v] for n, v in graph.outputs.items()})
    fp = footprint(program)
    side = max(48, 2 * fp.radius + 16)
    images = np.random.default_rng(0).integers(-255, 256, (VERIFY_IMAGES, side, side))
    ran = simulate(program, images.astype(np.float64), input_register)
    rows, cols = fp.interior((side, side))
    for k, image in enumerate(images):
        want = reference.evaluate(graph, [image])
        for name, register in outputs.items():
            got = ran[register][k][rows, cols]
            if not np.array_equal(got, want[name][rows, cols]):
                bad = int(np.sum(got != want[name][rows, cols]))
                raise VerificationError(
                    f"output {name!r} (register {register}) differs from the pipeline's "
                    f"reference on {bad} interior PEs of integer image {k}",
                    program_text="\n".join(map(str, program)))


__all__ = ["Lowered", "lower_graph"]
