"""The cpu target's cost model, a plain function of one e-node (None = never extract it).

`cpu()`: arithmetic operations per output pixel on a CPU, where moves are free addressing. It
also prices Kernel terms and the semiring sorts (rules/minplus.egg, maxplus.egg, boolean.egg)
read as passes over an image, and the infinite prefix-sum kernel (KPrefix, rules/window.egg).
"""

from __future__ import annotations

from kalg.eqsat.cost import FREE
from kalg.eqsat.extract import Cost, ENode

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
        if node.op in FREE or node.op in ("Shift", "NegHalfOf"):
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
