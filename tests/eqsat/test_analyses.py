"""Every equality the Python analyses seed is exact, and the analyses find what they claim."""

import itertools
from fractions import Fraction

from hypothesis import given, settings
from hypothesis import strategies as st

from kalg.eqsat import analyses
from kalg.eqsat import terms as t
from kalg.kernel import Kernel

GAUSS3 = Kernel.from_rows([[1, 2, 1], [2, 4, 2], [1, 2, 1]]).scale(Fraction(1, 16))
GAUSS5 = Kernel.from_rows([[1, 4, 6, 4, 1]]).compose(Kernel.from_rows([[1], [4], [6], [4], [1]]))


def _all_seeds_exact(outputs: dict[str, Kernel]) -> analyses.Seeds:
    seeds = analyses.seed(outputs)
    for name, term in seeds.roots.items():
        assert t.evaluate(term, seeds.literals).same_values(outputs[name])
    for lit, term, analysis in seeds.unions:
        want, got = t.evaluate(lit, seeds.literals), t.evaluate(term, seeds.literals)
        assert got.same_values(want), f"{analysis}: {term} != {lit}"
    return seeds


integer_kernels = st.dictionaries(
    st.tuples(st.integers(-2, 2), st.integers(-2, 2)), st.integers(-8, 8), min_size=1, max_size=9,
).map(lambda taps: Kernel.of(taps).trimmed()).filter(lambda k: len(k) > 0)


@settings(max_examples=60, deadline=None)
@given(k=integer_kernels, halvings=st.integers(0, 4))
def test_every_seed_is_exact(k, halvings):
    _all_seeds_exact({"A": k.scale(Fraction(1, 2**halvings))})


def test_canonical_literals_are_shared_by_shifted_negated_halved_copies():
    k = Kernel.from_rows([[1, 2, 1]])
    variants = [k, -k.shift(1, 2), k.scale(Fraction(1, 8)), k.shift(-1, 0).scale(-1)]
    assert len({t.key_of(t.canonicalise(v).literal) for v in variants}) == 1


def test_gauss3_factors_into_four_binomials():
    fs = analyses.factors(t.canonicalise(GAUSS3).literal)
    assert sorted(t.key_of(f) for f in fs) == ["0,0:1 0,1:1"] * 2 + ["0,0:1 1,0:1"] * 2


def test_gauss5_seeds_gauss3_as_a_factor():
    seeds = _all_seeds_exact({"A": GAUSS5})
    assert t.key_of(t.canonicalise(GAUSS3).literal) in seeds.literals


def test_rank_two_kernel_is_not_separated():
    laplacian = Kernel.from_rows([[0, 1, 0], [1, -4, 1], [0, 1, 0]])
    literal = t.canonicalise(laplacian).literal
    assert analyses.factors(literal) == [literal]
    assert list(analyses.factorisations(literal, t.LiteralTable())) == []


def test_pair_split_finds_a_shifted_copy():
    k = Kernel.from_rows([[1, 2, 3, 0], [0, 1, 2, 3]], origin=(0, 0))
    terms = list(analyses.pair_splits(k, t.LiteralTable()))
    assert any("(Sh 1 -1)" in term for term in terms)


def test_naf_has_no_adjacent_digits():
    for n in range(1, 200):
        digits = analyses.naf(n)
        assert sum(s * 2**e for s, e in digits) == n
        exps = sorted(e for _, e in digits)
        assert all(b - a >= 2 for a, b in itertools.pairwise(exps))


def test_shared_factor_computes_gauss5_from_gauss3():
    gauss5 = GAUSS5.scale(Fraction(1, 256)).shift(1, 0)
    seeds = _all_seeds_exact({"A": gauss5, "B": GAUSS3})
    shared = [(lhs, term) for lhs, term, a in seeds.unions if a == "shared-factor"]
    assert shared == [(seeds.roots["A"], shared[0][1])]
    assert shared[0][1].endswith(seeds.roots["B"] + ")")  # B's own term, applied first


@settings(max_examples=40, deadline=None)
@given(q=integer_kernels, r=integer_kernels, halvings=st.integers(0, 3))
def test_quotient_is_exact_or_none(q, r, halvings):
    p = q.compose(r).scale(Fraction(1, 2**halvings)).shift(1, -1)
    found = analyses.quotient(p, q)
    assert (len(q) == 1) or (found is not None and found.compose(q).same_values(p))


def test_quotient_of_kernels_that_do_not_divide_is_none():
    laplacian = Kernel.from_rows([[0, 1, 0], [1, -4, 1], [0, 1, 0]])
    assert analyses.quotient(GAUSS3, laplacian) is None
    assert analyses.quotient(laplacian, Kernel.of({(0, 0): 1, (1, 0): 1})) is None


def test_large_coefficients_do_not_blow_up_the_seed_text():
    # Regression: doublings written as t + t doubled the text per step; a 9x9 binomial Gaussian
    # seeded a 15 MB term and a 13x13 one took the machine's memory.
    row = Kernel.from_rows([[1, 8, 28, 56, 70, 56, 28, 8, 1]])
    gauss9 = row.compose(row.transpose())
    seeds = _all_seeds_exact({"A": gauss9.scale(Fraction(1, 2**16))})
    assert max(len(term) for _, term, _ in seeds.unions) < 50_000
