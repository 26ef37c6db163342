"""Property tests of the kernel algebra (Stow & Kelly 2022 §2-3, §6.3) on random small kernels.

Kernels are exact, so the laws are checked with `==` (same domain, same values). Images hold
small integers, so float arithmetic in `Kernel.apply` is exact too.
"""

import itertools
from fractions import Fraction

import numpy as np
import pytest
import scipy.ndimage as ndi
from hypothesis import given, settings
from hypothesis import strategies as st

from kalg.algebra.kernel import BOOLEAN, MAXPLUS, MINPLUS, REAL, Kernel, Semiring
from kalg.diagnostics import SemiringError

SETTINGS = settings(max_examples=60, deadline=None)
OFFSETS = st.tuples(st.integers(-2, 2), st.integers(-2, 2))
SMALL = st.integers(-4, 4)
SEMIRING_VALUES = {
    REAL: SMALL,
    MINPLUS: SMALL,
    MAXPLUS: SMALL,
    BOOLEAN: st.booleans(),
}


def kernels(semiring: Semiring = REAL) -> st.SearchStrategy[Kernel]:
    """Kernels with up to 6 entries within radius 2, zero entries and empty kernels included."""
    values = SEMIRING_VALUES[semiring]
    return st.dictionaries(OFFSETS, values, max_size=6).map(lambda d: Kernel.of(d, semiring))


def images(semiring: Semiring = REAL) -> st.SearchStrategy[np.ndarray]:
    values = SEMIRING_VALUES[semiring]
    return st.tuples(st.integers(9, 12), st.integers(9, 12)).flatmap(
        lambda shape: st.lists(values, min_size=shape[0] * shape[1],
                               max_size=shape[0] * shape[1]).map(
            lambda v: np.array(v, dtype=bool if semiring is BOOLEAN else float).reshape(shape)))


def interior(image: np.ndarray, margin: int) -> np.ndarray:
    """The pixels whose reads within `margin` stay inside the image (zero fill never seen)."""
    h, w = image.shape
    return image[margin:h - margin, margin:w - margin]


# ----------------------------------------------------------------------- the (+, ×) ring
@SETTINGS
@given(kernels(), kernels(), kernels())
def test_sum_is_commutative_and_associative(a, b, c):
    assert a + b == b + a
    assert (a + b) + c == a + (b + c)
    assert a + Kernel.empty() == a


@SETTINGS
@given(kernels(), kernels(), kernels())
def test_composition_is_commutative_associative_with_unit(a, b, c):
    assert a * b == b * a
    assert (a * b) * c == a * (b * c)
    assert a * Kernel.unit() == a


FRACTIONS = st.fractions(min_value=-4, max_value=4, max_denominator=4)


@SETTINGS
@given(st.dictionaries(OFFSETS, FRACTIONS, max_size=6),
       st.dictionaries(OFFSETS, FRACTIONS, max_size=6))
def test_composition_is_the_sum_of_shifted_scaled_copies_with_entries_normalised(a, b):
    # Plain composition sums its products in place (a 3x3 box to the 40th took seconds when
    # each product was normalised): the same domain and values as the definition, and every
    # entry normalised (a whole Fraction is an int) as `Kernel.of` normalises its inputs.
    j, k = Kernel.of(a), Kernel.of(b)
    copies = Kernel.empty()
    for (x, y), c in k.entries:
        copies = copies + j.shift(x, y).scale(c)
    composed = j * k
    assert composed == copies
    assert not [c for _, c in composed.entries if isinstance(c, Fraction) and
                c.denominator == 1]


@SETTINGS
@given(kernels(), kernels(), kernels())
def test_composition_distributes_over_sum(a, b, c):
    assert a * (b + c) == a * b + a * c


@SETTINGS
@given(kernels(), kernels(), SMALL, SMALL)
def test_scale_laws(a, b, m, n):
    assert a.scale(m).scale(n) == a.scale(m * n)
    assert (a + b).scale(n) == a.scale(n) + b.scale(n)
    assert a.scale(n) == a * Kernel.unit(value=n)
    assert (a * b).scale(n) == a.scale(n) * b


@SETTINGS
@given(kernels(), kernels(), OFFSETS, OFFSETS)
def test_shift_laws(a, b, p, q):
    assert a.shift(*p).shift(*q) == a.shift(p[0] + q[0], p[1] + q[1])
    assert a.shift(*p) == a * Kernel.unit(*p)
    assert (a * b).shift(*p) == a.shift(*p) * b
    assert (a + b).shift(*p) == a.shift(*p) + b.shift(*p)


@SETTINGS
@given(kernels(), kernels())
def test_subtraction_and_negation(a, b):
    assert (a - b).same_values(a + (-b))
    assert (a - a).same_values(Kernel.empty())
    assert ((a - b) + b).same_values(a)
    negated = -a
    assert -negated == a


@SETTINGS
@given(kernels(), kernels())
def test_reflections(a, b):
    assert a.transpose().transpose() == a
    assert (a * b).transpose() == a.transpose() * b.transpose()
    assert a.flip() == a.mirror_x().mirror_y()
    assert (a * b).flip() == a.flip() * b.flip()
    rows = a.to_rows()
    assert a.transpose().to_rows() == [list(column) for column in zip(*rows, strict=True)]


@SETTINGS
@given(kernels(), st.integers(0, 3))
def test_power_is_repeated_composition(a, n):
    expected = Kernel.unit()
    for _ in range(n):
        expected = expected * a
    assert a.power(n) == expected


# ----------------------------------------------------------------------- application
@SETTINGS
@given(kernels(), kernels(), images())
def test_applying_a_composition_applies_the_factors_in_turn(j, k, image):
    margin = j.radius() + k.radius()
    whole = (j * k).apply(image)
    in_turn = j.apply(k.apply(image))
    assert np.array_equal(interior(whole, margin), interior(in_turn, margin))


@SETTINGS
@given(kernels(), kernels(), images())
def test_application_is_linear(a, b, image):
    assert np.array_equal((a + b).apply(image), a.apply(image) + b.apply(image))
    assert np.array_equal(a.scale(3).apply(image), 3 * a.apply(image))


@SETTINGS
@given(kernels(), images())
def test_apply_matches_scipy_correlate(k, image):
    expected = ndi.correlate(image, k.to_array(), mode="constant", cval=0.0)
    assert np.array_equal(k.apply(image), expected)


def test_shift_north_reads_the_row_above():
    image = np.arange(20, dtype=float).reshape(4, 5)
    north = Kernel.unit(0, 1).apply(image)
    east = Kernel.unit(1, 0).apply(image)
    assert np.array_equal(north[1:], image[:-1])
    assert np.array_equal(east[:, :-1], image[:, 1:])


# ----------------------------------------------------------------------- other semirings
IDEMPOTENT = [MINPLUS, MAXPLUS, BOOLEAN]


@pytest.mark.parametrize("semiring", IDEMPOTENT, ids=lambda s: s.name)
def test_semiring_laws(semiring):
    @SETTINGS
    @given(kernels(semiring), kernels(semiring), kernels(semiring))
    def laws(a, b, c):
        assert a + a == a  # ⊕ is idempotent: min, max, or
        assert a + b == b + a
        assert (a + b) + c == a + (b + c)
        assert a * b == b * a
        assert (a * b) * c == a * (b * c)
        assert a * (b + c) == a * b + a * c
        assert a * Kernel.unit(semiring=semiring) == a
        assert a * Kernel.empty(semiring) == Kernel.empty(semiring)

    laws()


def _naive_apply(kernel: Kernel, image: np.ndarray) -> np.ndarray:
    """out(p) = ⊕_o K(o) ⊗ I(p + o), reading the semiring's zero outside the image."""
    s = kernel.semiring
    h, w = image.shape
    out = np.full(image.shape, s.zero, dtype=image.dtype)
    for r, c in itertools.product(range(h), range(w)):
        acc = s.zero
        for (x, y), coef in kernel.entries:
            rr, cc = r - y, c + x  # north (y > 0) is the row above
            pixel = image[rr, cc].item() if 0 <= rr < h and 0 <= cc < w else s.zero
            acc = s.add(acc, s.mul(coef, pixel))
        out[r, c] = acc
    return out


@pytest.mark.parametrize("semiring", IDEMPOTENT, ids=lambda s: s.name)
def test_semiring_apply(semiring):
    @SETTINGS
    @given(kernels(semiring), kernels(semiring), images(semiring))
    def check(j, k, image):
        assert np.array_equal(k.apply(image), _naive_apply(k, image))
        margin = j.radius() + k.radius()
        assert np.array_equal(interior((j * k).apply(image), margin),
                              interior(j.apply(k.apply(image)), margin))

    check()


@pytest.mark.parametrize("semiring", IDEMPOTENT, ids=lambda s: s.name)
def test_subtraction_is_refused_without_additive_inverse(semiring):
    a = Kernel.unit(semiring=semiring)
    with pytest.raises(SemiringError, match=f"cannot subtract in the {semiring.name} semiring"):
        _ = a - a
    with pytest.raises(SemiringError, match="no additive inverse"):
        _ = -a


def test_mixing_semirings_is_refused():
    with pytest.raises(SemiringError, match="cannot compose a minplus kernel and a real kernel"):
        Kernel.unit(semiring=MINPLUS) * Kernel.unit()
    with pytest.raises(SemiringError, match="cannot add"):
        Kernel.unit(semiring=MAXPLUS) + Kernel.unit(semiring=BOOLEAN)
