"""Unit tests of the exact kernel value type (the property tests live in test_algebra.py)."""

from fractions import Fraction
from math import inf

import numpy as np
import pytest
import scipy.ndimage as ndi

from kalg.algebra.kernel import MINPLUS, Kernel


def test_apply_matches_scipy_correlate_north_up():
    sobel = Kernel.from_rows([[1, 0, -1], [2, 0, -2], [1, 0, -1]])
    image = np.random.default_rng(0).random((9, 11))
    expected = ndi.correlate(image, sobel.to_array(), mode="constant", cval=0.0)
    np.testing.assert_allclose(sobel.apply(image), expected)


def test_north_row_is_positive_y():
    k = Kernel.from_rows([[0, 7, 0], [0, 0, 0], [0, 0, 0]])
    assert k.trimmed().taps == {(0, 1): 7}


def test_from_rows_origin_and_errors():
    assert Kernel.from_rows([[1, 2]], origin=(0, 0)).taps == {(0, 0): 1, (1, 0): 2}
    with pytest.raises(ValueError, match="ragged"):
        Kernel.from_rows([[1, 2, 3], [1]])
    with pytest.raises(ValueError, match="no centre"):
        Kernel.from_rows([[1, 2]])


def test_entries_are_exact_and_normalised():
    k = Kernel.of({(0, 0): Fraction(4, 2), (1, 0): Fraction(1, 2)})
    assert k.taps == {(0, 0): 2, (1, 0): Fraction(1, 2)}
    assert type(k.taps[(0, 0)]) is int
    with pytest.raises(TypeError, match="inexact"):
        Kernel.of({(0, 0): 0.5})


def test_duplicate_offsets_combine_with_the_semiring_sum():
    assert Kernel.of([((0, 0), 3), ((0, 0), 4)]).taps == {(0, 0): 7}
    assert Kernel.of([((0, 0), 3), ((0, 0), 4)], MINPLUS).taps == {(0, 0): 3}


def test_views_of_a_kernel():
    k = Kernel.from_rows([[1, None, None], [None, 0, None], [None, None, None]])
    assert k.domain == {(-1, 1), (0, 0)}
    assert k.bounds() == (-1, 0, 0, 1)
    assert k.radius() == 1
    assert k.trimmed().taps == {(-1, 1): 1}
    assert k.same_values(Kernel.unit(-1, 1)) and k != Kernel.unit(-1, 1)
    assert str(k) == "[1 . .; . 0 .; . . .]"
    assert k.to_rows(centred=False) == [[1, None], [None, 0]]
    assert Kernel.empty().to_rows() == [[None]]


def test_dyadic_coefficients():
    assert Kernel.of({(0, 0): Fraction(3, 64), (1, 0): -5}).is_dyadic()
    assert not Kernel.of({(0, 0): Fraction(1, 3)}).is_dyadic()


def test_array_round_trip_in_real_and_min_plus():
    k = Kernel.from_rows([[1, 2, 1], [0, Fraction(1, 2), 0], [-1, -2, -1]])
    assert Kernel.from_array(k.to_array(dtype=object)) == k
    m = Kernel.from_rows([[inf, 1, inf], [1, 0, 1], [inf, 1, inf]], semiring=MINPLUS)
    assert Kernel.from_array(m.to_array(), MINPLUS) == m
    with pytest.raises(ValueError, match="smaller than"):
        k.to_array(radius=0)


def test_power():
    row = Kernel.from_rows([[1, 1, 1]])
    assert row.power(2).taps == {(-2, 0): 1, (-1, 0): 2, (0, 0): 3, (1, 0): 2, (2, 0): 1}
    with pytest.raises(ValueError, match="power -1"):
        row.power(-1)


def test_apply_on_a_batch_and_in_min_plus():
    images = np.arange(2 * 5 * 6, dtype=float).reshape(2, 5, 6)
    sobel = Kernel.from_rows([[1, 0, -1], [2, 0, -2], [1, 0, -1]])
    assert np.array_equal(sobel.apply(images)[1], sobel.apply(images[1]))
    erode = Kernel.from_rows([[None, 0, None], [0, 0, 0], [None, 0, None]], semiring=MINPLUS)
    image = np.array([[5, 5, 5], [5, 1, 5], [5, 5, 5]], dtype=float)
    assert erode.apply(image).tolist() == [[5, 1, 5], [1, 1, 1], [5, 1, 5]]


def test_doctests():
    import doctest

    import kalg.algebra.kernel

    assert doctest.testmod(kalg.algebra.kernel).failed == 0
