"""The factor-chain candidate: large separable kernels as their factors applied in turn."""

from __future__ import annotations

from fractions import Fraction
from math import comb

from kalg.codegen import QUICK, factor_chain, generate
from kalg.kernel import Kernel

from .test_generate import check_program


def binomial_gaussian(n: int) -> Kernel:
    row = [comb(n - 1, k) for k in range(n)]
    return Kernel.from_rows([[a * b for b in row] for a in row]).scale(Fraction(1, 4 ** (n - 1)))


def test_large_binomial_gaussian_is_a_short_chain_not_thousands_of_instructions():
    # Regression: the 9x9 binomial Gaussian compiled to 2435 instructions after 3.5 minutes of
    # code generation (13x13 ran out of memory): no candidate held the (1+x)^8 (1+y)^8 chain.
    decomp = factor_chain({"A": binomial_gaussian(9)})
    assert decomp is not None and len(decomp.live()) <= 60
    program = generate(decomp, limits=QUICK)
    check_program(program, decomp, "all")
    assert len(program) <= 40


def test_long_chain_search_completes_instead_of_ending_in_the_fallback():
    # Regression: a fixed expansion cap ended the beam search of a 15x15 Gaussian's 28-factor
    # chain before any schedule was complete, so the fallback's 97 instructions were all.
    decomp = factor_chain({"A": binomial_gaussian(15)})
    program = generate(decomp, limits=QUICK)
    check_program(program, decomp, "all")
    assert len(program) <= 70


def test_chain_restores_the_offset_and_scale():
    # An uncentred kernel: sympy drops the monomial x^-1 y^-1; the chain must shift it back.
    k = Kernel.from_rows([[1, 1], [1, 1]], origin=(1, 1)).scale(Fraction(1, 4))
    decomp = factor_chain({"B": k})
    assert decomp is not None
    assert decomp.output_kernels() == {"B": k.trimmed()}


def test_no_chain_for_small_unfactorable_or_non_dyadic_kernels():
    assert factor_chain({"A": binomial_gaussian(3)}) is not None
    assert factor_chain({"A": Kernel.from_rows([[1, 2, 1]]).scale(Fraction(1, 4))}) is not None
    assert factor_chain({"A": Kernel.from_rows([[1, 3, 1]])}) is None  # irreducible
    random = Kernel.from_rows([[7, 5, 4], [2, 2, 0], [0, 0, 1]]).scale(Fraction(1, 8))
    assert factor_chain({"A": random}) is None
    assert factor_chain({"A": binomial_gaussian(3).scale(Fraction(1, 3))}) is None
