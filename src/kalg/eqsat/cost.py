"""What every target's cost model shares (`kalg.targets.<name>.cost`): cost models are plain
functions of one e-node (`kalg.eqsat.extract.Cost`; None = that node may not be extracted).

`FREE`: the structural nodes that cost nothing in any model; `steps`: a shift's length.
"""

from __future__ import annotations

from kalg.eqsat.extract import ENode

FREE = {"Input": 0.0, "ONil": 0.0, "OCons": 0.0, "HalfOf": 0.0}
"""The input and the output bundle's structure: no computation on any target."""


def steps(node: ENode) -> int:
    """The number of pixel steps of a Shift node (Manhattan length of its offset)."""
    dx, dy = node.args
    return abs(int(dx)) + abs(int(dy))
