"""Every equality the Python analyses seed is exact, and the analyses find what they claim."""

import itertools
from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kalg.algebra.kernel import Kernel
from kalg.eqsat import analyses
from kalg.eqsat import terms as t

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


SHARPEN = Kernel.from_rows([[0, -1, 0], [-1, 5, -1], [0, -1, 0]])


def _axis_parts(k: Kernel) -> list[list[Kernel]]:
    """The kernels each axis split of k sums, evaluated back from the seeded terms."""
    table = t.LiteralTable()
    literal = t.canonicalise(k).literal
    out = []
    for term in analyses.axis_splits(literal, table):
        parts, stack = [], [t.parse(term)]
        while stack:
            node = stack.pop()
            if node[0] == "KAdd":
                stack.extend(node[1:])
            else:
                parts.append(t.evaluate(_text(node), table.literals))
        out.append(parts)
    return out


def _text(node) -> str:
    return node if isinstance(node, str) else f"({' '.join(_text(p) for p in node)})"


def test_sharpen_missed_10_instruction_basic_program_is_seeded_as_axis_split():
    # Regression (issue 5): sharpen = 5 - N - S - E - W is irreducible, so no factorisation
    # and no pair split reached (1 - x^-1)(1 - x) + (1 - y^-1)(1 - y) + 1 (10 basic instrs).
    splits = _axis_parts(SHARPEN)
    assert splits, "sharpen has an axis split"
    literal = t.canonicalise(SHARPEN).literal
    parts = splits[0]
    total = parts[0]
    for p in parts[1:]:
        total = total + p
    assert total.same_values(literal)
    rows = [p for p in parts if len(p) == 3]
    assert len(rows) == 2, parts
    for p in rows:  # each line part is ±(1 - x)^2 or ±(1 - y)^2 up to shift: two binomials
        fs = analyses.factors(t.canonicalise(p).literal)
        assert len([f for f in fs if len(f) > 1]) == 2, p
    assert sorted(len(p) for p in parts) == [1, 3, 3]


@pytest.mark.parametrize("rows", [
    [[0, -1, 0], [-2, 7, -2], [0, -1, 0]],  # unequal row and column weights
    [[-1, 3, -1]],                           # one-dimensional: 3 - x^-1 - x = (1-x)(1-x^-1) + 1
    [[0, 1, 0], [1, -4, 1], [0, 1, 0]],      # Laplacian: no rest at all
    [[0, 0, 1, 0, 0], [0, 0, -4, 0, 0], [1, -4, 13, -4, 1], [0, 0, -4, 0, 0], [0, 0, 1, 0, 0]],
])
def test_laplacian_like_kernels_are_axis_split_into_factoring_parts(rows):
    k = Kernel.from_rows(rows)
    splits = _axis_parts(k)
    assert splits, rows
    literal = t.canonicalise(k).literal
    for parts in splits:
        total = parts[0]
        for p in parts[1:]:
            total = total + p
        assert total.same_values(literal)
    assert any(len([f for f in analyses.factors(t.canonicalise(p).literal) if len(f) > 1]) >= 2
               for p in splits[0])


def test_axis_split_is_not_offered_when_it_cannot_save_additions():
    # [1 -2 1] = (1 - x)^2 already: splitting off a pivot share (e.g. [-3 -2 1] + 4) costs more.
    literal = t.canonicalise(Kernel.from_rows([[1, -2, 1]])).literal
    assert list(analyses.axis_splits(literal, t.LiteralTable())) == []
    assert list(analyses.axis_splits(t.canonicalise(GAUSS3).literal, t.LiteralTable())) == []


def test_factors_memo_gives_gauss5_as_eight_binomials():
    k = t.canonicalise(GAUSS5).literal
    assert analyses.factors(k) is analyses.factors(k)
    assert sorted(t.key_of(f) for f in analyses.factors(k)) == (
        ["0,0:1 0,1:1"] * 4 + ["0,0:1 1,0:1"] * 4)


def _binomial(*taps: tuple[tuple[int, int], int]) -> Kernel:
    return Kernel.of(dict(taps))


def test_factors_come_in_the_order_the_programs_were_made_with():
    # The order (fewest powers of x, then multiplicity, then coefficients; content last) steers
    # which of several equally short decompositions the chain and the e-graph pick: these
    # lists are what kalg's factoring gave when the golden programs were made (sympy's).
    a, b = _binomial(((0, 0), 1), ((1, 0), 1)), _binomial(((0, 0), 1), ((0, 1), 1))
    c = _binomial(((0, 0), 1), ((0, 1), -2), ((1, 1), 1))
    d = _binomial(((0, 0), 2), ((1, 0), -1))
    k = a.compose(a).compose(b).compose(c).compose(d).compose(d).scale(-3)
    assert [t.key_of(f) for f in analyses.factors(k)] == [
        "0,0:1 0,1:1", "0,0:1 0,1:-2 1,1:1", "0,0:-2 1,0:1", "0,0:-2 1,0:1", "0,0:1 1,0:1",
        "0,0:1 1,0:1", "0,0:-3"]
    k = b.compose(b).compose(d).compose(c).scale(6)
    assert [t.key_of(f) for f in analyses.factors(k)] == [
        "0,0:1 0,1:1", "0,0:1 0,1:1", "0,0:-2 1,0:1", "0,0:1 0,1:-2 1,1:1", "0,0:-6"]


@settings(max_examples=150, deadline=None)
@given(integer_kernels, st.integers(1, 3))
def test_factors_are_irreducible_and_multiply_back_to_the_kernel(k, power):
    k = k.power(power).trimmed()
    k = k.shift(-k.bounds()[0], -k.bounds()[2])  # a polynomial: no negative powers
    fs = analyses.factors(k)
    product = Kernel.unit()
    for f in fs:
        product = product.compose(f)
    (px, py), (kx, ky) = min(product.trimmed().taps), min(k.trimmed().taps)
    assert product.shift(kx - px, ky - py).same_values(k)  # equal up to the monomial dropped
    for f in fs[:-1] if fs and len(fs[-1]) == 1 else fs:
        assert len(f) > 1 and analyses.factors(f) == [f]  # irreducible, primitive, sign +


def test_sole_namer_literals_credit_their_analysis():
    seeds = analyses.seed({"A": SHARPEN})
    row = t.key_of(t.canonicalise(Kernel.from_rows([[1, -2, 1]])).literal)
    assert seeds.introduced.get(row) == "axis-split"
    assert t.key_of(t.canonicalise(SHARPEN).literal) not in seeds.introduced
