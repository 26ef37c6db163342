"""Tests of power-of-two approximation and canonical signed-digit expansion
(kalg.algebra.approx)."""

import doctest
import itertools
from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kalg.algebra import approx
from kalg.algebra.approx import (
    ApproximationError,
    approximate,
    choose_depth,
    pow2_digits,
    round_to_depth,
)
from kalg.algebra.kernel import MINPLUS, Kernel

SETTINGS = settings(max_examples=100, deadline=None)
FRACTIONS = st.fractions(min_value=-20, max_value=20, max_denominator=1000)
DEPTHS = st.integers(0, 12)
DYADICS = st.builds(lambda n, k: Fraction(n, 2**k), st.integers(-5000, 5000), st.integers(0, 10))


def test_doctests():
    assert doctest.testmod(approx).failed == 0


def test_auke_example_one():
    # Debrunner et al. 2019, Example 1: 0.6 at depth 3 becomes 1/2 + 1/8 = 0.625
    assert round_to_depth(Fraction("0.6"), 3) == Fraction(5, 8)
    assert pow2_digits(Fraction(5, 8)) == [(1, -1), (1, -3)]


@SETTINGS
@given(FRACTIONS, DEPTHS)
def test_rounding_is_nearest_multiple(value, depth):
    rounded = round_to_depth(value, depth)
    step = Fraction(1, 2**depth)
    assert (rounded / step).denominator == 1
    assert abs(value - rounded) <= step / 2
    assert round_to_depth(-value, depth) == -rounded


@SETTINGS
@given(DYADICS, st.integers(10, 14))
def test_rounding_keeps_values_that_are_already_multiples(value, depth):
    assert round_to_depth(value, depth) == value


def test_halves_round_away_from_zero():
    assert round_to_depth(Fraction(1, 2), 0) == 1
    assert round_to_depth(Fraction(-3, 2), 0) == -2


@SETTINGS
@given(DYADICS)
def test_pow2_digits_sum_to_the_value_and_are_non_adjacent(value):
    digits = pow2_digits(value)
    assert sum(sign * Fraction(2) ** exponent for sign, exponent in digits) == value
    exponents = [e for _, e in digits]
    assert exponents == sorted(exponents, reverse=True)
    assert all(high - low >= 2 for high, low in itertools.pairwise(exponents))
    assert all(sign in (1, -1) for sign, _ in digits)


def _fewest_signed_digits(n: int) -> int:
    """The fewest ±2^k terms summing to n, by exhaustive recursion (independent of NAF)."""
    n = abs(n)
    if n <= 1:
        return n
    if n % 2 == 0:
        return _fewest_signed_digits(n // 2)
    return 1 + min(_fewest_signed_digits((n - 1) // 2), _fewest_signed_digits((n + 1) // 2))


def test_pow2_digits_are_the_fewest_possible():
    for n in range(-300, 301):
        assert len(pow2_digits(n)) == _fewest_signed_digits(n), n
        assert len(pow2_digits(Fraction(n, 64))) == _fewest_signed_digits(n), n


def test_pow2_digits_refuses_non_dyadic_values():
    with pytest.raises(ValueError, match="not dyadic"):
        pow2_digits(Fraction(1, 3))
    assert pow2_digits(0) == []


def _third() -> Kernel:
    return Kernel.from_rows([[1, 1, 1]]).scale(Fraction(1, 3))


def test_approximate_at_a_fixed_depth():
    kernel, error = approximate(_third(), 4)
    assert kernel.taps == {(-1, 0): Fraction(5, 16), (0, 0): Fraction(5, 16),
                           (1, 0): Fraction(5, 16)}
    assert error == Fraction(1, 3) - Fraction(5, 16)


def test_max_error_picks_the_smallest_sufficient_depth():
    # errors of 1/3 by depth: 1/3, 1/6, 1/12, 1/24, 1/48, 1/96 ...
    assert choose_depth(_third(), 10, Fraction(1, 20)) == 3
    kernel, error = approximate(_third(), 10, Fraction(1, 20))
    assert error == Fraction(1, 24)
    assert kernel.is_dyadic()


def test_unreachable_max_error_is_an_error():
    with pytest.raises(ApproximationError, match="no approximation depth up to 2"):
        approximate(_third(), 2, Fraction(1, 100))


@SETTINGS
@given(st.dictionaries(st.tuples(st.integers(-2, 2), st.integers(-2, 2)), FRACTIONS,
                       min_size=1, max_size=6), DEPTHS)
def test_approximate_reports_the_largest_coefficient_error(taps, depth):
    kernel = Kernel.of(taps)
    rounded, error = approximate(kernel, depth)
    assert rounded.domain == kernel.domain
    errors = [abs(Fraction(c) - Fraction(rounded.taps[o])) for o, c in kernel.entries]
    assert error == max(errors)
    assert error <= Fraction(1, 2 ** (depth + 1))


def test_only_real_kernels_are_approximated():
    with pytest.raises(ValueError, match="only real kernels"):
        approximate(Kernel.unit(semiring=MINPLUS), 3)
