"""SCAMP-5's cost models, plain functions of one e-node (None = that node may not be extracted).

`scamp5(op_set)`: SCAMP-5 instructions per node, then bus steps as a tie-break (1/1000 per step).
`kernel()`: estimated SCAMP-5 instructions of a Kernel term (variant ranking).
For `scamp5`, only Img nodes (register values) and the output bundle are extractable: Kernel terms
and Apply are the algebra, not computation. The infinite prefix-sum kernel (KPrefix,
rules/window.egg) has no cost here: SCAMP-5's finite array cannot hold a running sum, so
`scamp5` and `kernel` never extract it.
"""

from __future__ import annotations

import math

from kalg.eqsat.cost import FREE as _FREE
from kalg.eqsat.cost import steps as _steps
from kalg.eqsat.extract import Cost, ENode

BUS = 0.001
"""Weight of one analogue bus step relative to one instruction: a tie-break only."""


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
