"""The factor-chain candidate: large separable kernels as their factors applied in turn."""

from __future__ import annotations

from fractions import Fraction
from math import comb

from hypothesis import given, settings
from hypothesis import strategies as st

from kalg.algebra.kernel import Kernel
from kalg.targets.scamp5 import portfolio
from kalg.targets.scamp5.codegen import QUICK, factor_chain, generate
from kalg.targets.scamp5.machine.isa import REGISTERS

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


def _shortest(decomp) -> int:
    """The portfolio's program length for one candidate (op set all, A..F, input A)."""
    budget = portfolio.Resources(REGISTERS, "A", "all", tuple(decomp.output_kernels()), REGISTERS)
    candidates = {ops: {"chain": decomp} for ops in portfolio.OP_ORDER}
    return len(portfolio.best_on_ladder(candidates, budget).program)


def test_a_halving_meets_the_factor_after_it_so_a_binomial_gaussian_takes_two_per_factor():
    # Each (1 + s)/2 is div then subx with div's scratch -v/2: the halving rides on the sum.
    # Halving after each factor instead left the first factor unhalved and a lone div at the
    # end (gauss3: 9 instructions, gauss5: 17).
    for n, most in ((3, 8), (5, 16)):
        assert _shortest(factor_chain({"A": binomial_gaussian(n)}, halve_first=True)) <= most


def test_filter_outputs_share_their_common_factors_and_continue_from_each_other():
    # gauss5 = gauss3 · gauss3: the chain of gauss5 starts from gauss3's finished value.
    g3, g5 = binomial_gaussian(3), binomial_gaussian(5)
    decomp = factor_chain({"A": g5, "B": g3}, halve_first=True)
    built = decomp.output_kernels()
    assert built["A"].same_values(g5) and built["B"].same_values(g3)
    alone = factor_chain({"A": g5}, halve_first=True)
    assert len(decomp.values) == len(alone.values) + 1  # B is one move of a shared value
    assert _shortest(decomp) <= 16


def test_split_chain_applies_a_smooth_kernel_minus_a_tap_as_a_chain_and_a_subtraction():
    # g3 - g5 = g3·(1 - g3): the factor 1 - g3 is g3's chain and the input subtracted.
    g3, g5 = binomial_gaussian(3), binomial_gaussian(5)
    dog = (g3 - g5).trimmed()
    assert factor_chain({"A": dog}) is not None  # the plain chain applies 16 - F by digits
    decomp = factor_chain({"A": dog}, split=True)
    assert decomp is not None and decomp.output_kernels()["A"].same_values(dog)
    assert _shortest(decomp) <= 18
    unsharp = (Kernel.unit(value=2) - g5).trimmed()  # 2 - g5: negated split, no lone negation
    decomp = factor_chain({"A": unsharp}, split=True)
    assert decomp is not None and decomp.output_kernels()["A"].same_values(unsharp)
    assert not any(v.op.name == "NEG" for v in decomp.values)


def test_no_split_chain_without_a_factor_that_is_factorable_plus_a_tap():
    assert factor_chain({"A": binomial_gaussian(3)}, split=True) is None  # nothing to split
    random = Kernel.from_rows([[7, 5, 4], [2, 2, 0], [0, 0, 1]]).scale(Fraction(1, 8))
    assert factor_chain({"A": random}, split=True) is None
    assert factor_chain({"A": binomial_gaussian(3).scale(Fraction(1, 3))}, split=True) is None


BINOMIALS = st.tuples(st.sampled_from([1, -1]), st.integers(-1, 1), st.integers(-1, 1)).filter(
    lambda b: b[1:] != (0, 0))


@settings(max_examples=40, deadline=None)
@given(st.lists(BINOMIALS, min_size=2, max_size=4), st.integers(-40, 40).filter(bool),
       st.integers(-1, 1), st.integers(-1, 1), st.integers(0, 5), st.booleans())
def test_split_chain_is_exactly_the_kernel(binomials, c, px, py, halvings, negate):
    # Numeric soundness: S = Π (1 ± x^a y^b), K = ±(S + c·x^px y^py) / 2^h, whatever the chain.
    s = Kernel.unit()
    for sign, a, b in binomials:
        s = s.compose(Kernel.of({(0, 0): 1, (a, b): sign}))
    k = (s + Kernel.unit(px, py, value=c)).scale(Fraction(-1 if negate else 1, 2**halvings))
    if not k.trimmed().entries:
        return
    for split in (False, True):
        decomp = factor_chain({"A": k}, split=split)
        assert decomp is None or decomp.output_kernels()["A"].same_values(k)


def test_one_horner_serves_the_direct_candidate_and_a_chains_integer_factor():
    # One Horner (optimize.horner): from the lowest plane up (halving) for the direct
    # candidate, from the top plane down (doubling, never halving) for a chain's factor.
    from kalg.algebra.decomp import DagBuilder, Op
    from kalg.targets.scamp5.optimize import horner

    factor = Kernel.from_rows([[1, 6, 3]])
    for from_top in (False, True):
        b = DagBuilder()
        made = b.build({"A": horner(b, factor, from_top=from_top)})
        assert made.output_kernels()["A"].same_values(factor)
        assert any(v.op is Op.HALF for v in made.values) is not from_top
