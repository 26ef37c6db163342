"""Separable candidates for large kernels: k = row ∘ column, each axis built on its own.

`separable_candidate(outputs)` gives, when every output is rank 1 (`analyses.separation`), the
decomposition a person would write for a large box or Gaussian: the row applied to the input,
then the column applied to the row's result, each axis by Horner's rule over its digit planes;
`separable_candidate(outputs, column_first=True)` the same with the axes in the other order.
The code generator's beam search is sensitive to which axis comes first (13x13 box: 21
instructions row first, 18 column first; screened), so the pipeline offers both.
Its values grow with the kernel's side, not its area, so the code generator handles it quickly
where the e-graph's flat literals of a 31x31 kernel do not. (Building a run of equal taps by
doubling, S_2m = S_m + S_m moved by m, was tried and left out: the code generator lowers its
long moves badly, 370 instructions for the 31x31 box against 43.)
"""

from __future__ import annotations

from kalg.algebra.decomp import DagBuilder, Decomposition
from kalg.algebra.kernel import Kernel
from kalg.eqsat.analyses import separation
from kalg.targets.scamp5.optimize import horner


def separable_candidate(outputs: dict[str, Kernel],
                        column_first: bool = False) -> Decomposition | None:
    """Every output as its row, then its column (`column_first`: its column, then its row),
    each by Horner's rule; None unless every output is dyadic and rank 1."""
    b = DagBuilder()
    results = {}
    for reg, k in sorted(outputs.items()):
        split = separation(k) if k.is_dyadic() else None
        if split is None:
            return None
        row, col = split
        first, second = (col, row) if column_first else (row, col)
        results[reg] = horner(b, second, horner(b, first, b.input))
    decomp = b.build(results)
    built = decomp.output_kernels()
    assert all(built[r].same_values(k) for r, k in outputs.items()), "separable != kernel"
    return decomp
