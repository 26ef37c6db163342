"""Cost models as plain functions of one e-node (None = that node may not be extracted).

`scamp5(op_set)`: SCAMP-5 instructions per node, then bus steps as a tie-break (1/1000 per step).
`cpu()`: arithmetic operations per output pixel on a CPU, where moves are free addressing.
`kernel()`: estimated SCAMP-5 instructions of a Kernel term (variant ranking).
For `scamp5`, only Img nodes (register values) and the output bundle are extractable: Kernel terms
and Apply are the algebra, not computation. `cpu` also prices Kernel terms and the semiring sorts
(rules/minplus.egg, maxplus.egg, boolean.egg) read as passes over an image, for kalg.targets.cpu.
The infinite prefix-sum kernel (KPrefix, rules/window.egg) has a cost under `cpu` only: SCAMP-5's
finite array cannot hold a running sum, so `scamp5` and `kernel` never extract it.
"""

from __future__ import annotations

import math

from kalg.eqsat.extract import Cost, ENode

BUS = 0.001
"""Weight of one analogue bus step relative to one instruction: a tie-break only."""

_FREE = {"Input": 0.0, "ONil": 0.0, "OCons": 0.0, "HalfOf": 0.0}


def _steps(node: ENode) -> int:
    dx, dy = node.args
    return abs(int(dx)) + abs(int(dy))


def _duplicates(node: ENode) -> int:
    """Extra copies needed when one value feeds an add twice (SCAMP-5 needs distinct operands)."""
    return len(node.children) - len(set(node.children))


def scamp5(op_set: str = "all") -> Cost:
    """Instruction count per node for op set `all` (fused macros, div scratch) or `basic`."""
    fused = op_set == "all"

    def cost(node: ENode) -> float | None:
        if node.op in _FREE:
            return _FREE[node.op]
        match node.op:
            case "Shift":
                steps = _steps(node)
                return (math.ceil(steps / 2) if fused else steps) * (1 + 2 * BUS)
            case "Add" | "Sub" | "Neg":
                return 1 + 2 * BUS + _duplicates(node)
            case "Half":
                return 1 + (5 if fused else 2) * BUS
            case "Div":
                return 1 + (5 if fused else 2) * BUS
            case "NegHalfOf":
                return 0.0 if fused else 1 + 2 * BUS
            case "Add3" | "AddMv" | "SubMv":
                return 1 + 2 * BUS + _duplicates(node) if fused else None
        return None

    return cost


_CPU_KERNEL = {
    # Kernel terms applied as passes: composition applies the factors in turn, a unit kernel is
    # addressing, a sum, difference, negation or halving is one operation per pixel, and the
    # prefix sum P_d is a running sum, one add per pixel (out(p) = in(p) + out(p + d)).
    "Sh": 0.0, "KCompose": 0.0, "KAdd": 1.0, "KSub": 1.0, "KNeg": 1.0, "KHalf": 1.0,
    "KPrefix": 1.0,
    # semiring terms: ⊕ (min, max, or) is one operation, ⊗-composition applies in turn
    "MinMin": 1.0, "MinCompose": 0.0, "MaxMax": 1.0, "MaxCompose": 0.0,
    "BoolOr": 1.0, "BoolCompose": 0.0, "BoolTap": 0.0,
}


def cpu() -> Cost:
    """Arithmetic operations per output pixel: adds, subtracts, negations and halvings.

    Img nodes: one per register operation (moves free). Kernel and semiring terms: the cost of
    applying the term to an image as written, each sub-term paid where it appears (tree cost);
    a min-plus or max-plus entry costs one add unless its weight is the semiring's one (0).
    Literals (`Lit`, `MinLit`, ...) and run notation (`KRun`) are keys, never extracted.
    """

    def cost(node: ENode) -> float | None:
        if node.op in _FREE or node.op in ("Shift", "NegHalfOf"):
            return 0.0
        if node.op in ("Add", "Sub", "Neg", "Half", "Div"):
            return 1.0
        if node.op == "Add3":
            return 2.0
        if node.op in ("AddMv", "SubMv"):
            return 1.0
        if node.op in ("MinTap", "MaxTap"):
            return 0.0 if node.args[2] == 0 else 1.0
        return _CPU_KERNEL.get(node.op)

    return cost


def kernel() -> Cost:
    """Estimated SCAMP-5 instructions to apply a Kernel term to an image (variant ranking).

    Composition is free (the factors are applied in turn), a sum or halving is one instruction,
    a shift half an instruction per step (moves pair up, and often ride on an addx), a negation
    half an instruction (it usually folds into a subtraction). `Lit` is a key, not a term.
    """

    def cost(node: ENode) -> float | None:
        match node.op:
            case "Sh":
                return 0.5 * _steps(node)
            case "KAdd" | "KSub" | "KHalf":
                return 1.0
            case "KNeg":
                return 0.5
            case "KCompose":
                return 0.0
        return None

    return cost
