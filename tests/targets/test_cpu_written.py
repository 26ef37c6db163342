"""cpu min-plus, max-plus and Boolean kernels written as compositions and sums are applied as
written where that is cheaper than what the search finds from their matrix (issue 12, rough)."""

from __future__ import annotations

import numpy as np
import scipy.ndimage as nd

from kalg.targets.cpu import build
from kalg.targets.cpu.optimize import direct_ops

CUBE = """semiring minplus
kernel a = [4 3 4; 3 0 3; 4 3 4]
kernel b = a * a * a
"""


def test_a_min_plus_kernel_written_as_a_composition_costs_its_factors_not_its_matrix():
    # Regression: b = a * a * a (a 3x3 min-plus chamfer step) was optimized from its 7x7
    # matrix: 96 operations per pixel tap by tap, where the composition as written is 48
    f = build(CUBE)
    result = f.plan.results["A"]
    assert result.ops <= 48 < direct_ops(result.kernel) == 96
    assert result.forms == ["as written"]
    assert result.verified.startswith("exactly")


def test_max_plus_sums_of_shifted_compositions_are_applied_as_written_and_exactly(tmp_path,
                                                                                 monkeypatch):
    monkeypatch.setenv("KALG_CACHE_DIR", str(tmp_path))
    f = build("""semiring maxplus
kernel a = [1 0 2; 0 3 0; 2 0 1]
kernel c = [0 1 0 0 2]
kernel b = a * c + shift(a, 1, 0) * a
""")
    result = f.plan.results["A"]
    assert result.ops < direct_ops(result.kernel)
    image = np.random.default_rng(5).integers(0, 40, (19, 23)).astype(np.float32)
    rows = result.kernel.to_rows(centred=True)
    structure = np.array([[-np.inf if c is None else float(c) for c in row] for row in rows])
    want = nd.grey_dilation(image, structure=structure[::-1, ::-1], mode="nearest")
    assert np.array_equal(f(image), want)


def test_a_written_form_that_is_not_cheaper_leaves_the_searched_plan():
    # a separable max-plus kernel written as one matrix: nothing written to use; and one
    # written as its own matrix composed with a unit: the search's plan is kept
    plain = build("semiring maxplus\nkernel k = [0 1 0; 1 2 1; 0 1 0]")
    shifted = build("semiring maxplus\nkernel k = [0 1 0; 1 2 1; 0 1 0] * shift(0, 0)")
    assert shifted.plan.ops() == plain.plan.ops()
    assert plain.plan.results["A"].forms != ["as written"]
