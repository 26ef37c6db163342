"""Unit tests of the exact kernel value type (the property tests live in test_algebra.py)."""

import numpy as np
import scipy.ndimage as ndi

from kalg.kernel import Kernel


def test_apply_matches_scipy_correlate_north_up():
    sobel = Kernel.from_rows([[1, 0, -1], [2, 0, -2], [1, 0, -1]])
    image = np.random.default_rng(0).random((9, 11))
    expected = ndi.correlate(image, sobel.to_array(), mode="constant", cval=0.0)
    np.testing.assert_allclose(sobel.apply(image), expected)


def test_north_row_is_positive_y():
    k = Kernel.from_rows([[0, 7, 0], [0, 0, 0], [0, 0, 0]])
    assert k.trimmed().taps == {(0, 1): 7}
