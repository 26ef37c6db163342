"""Rank-1 separability: every separable kernel is seeded as row ∘ column, and nothing else is."""

from fractions import Fraction

from hypothesis import given, settings
from hypothesis import strategies as st

from kalg.algebra.kernel import Kernel
from kalg.eqsat import analyses
from kalg.eqsat import terms as t

taps_1d = st.lists(st.integers(-9, 9), min_size=2, max_size=5).filter(
    lambda cs: cs[0] != 0 and cs[-1] != 0)


def _row(cs: list[int]) -> Kernel:
    return Kernel.of({(i, 0): c for i, c in enumerate(cs) if c})


def _col(cs: list[int]) -> Kernel:
    return Kernel.of({(0, i): c for i, c in enumerate(cs) if c})


@settings(max_examples=80, deadline=None)
@given(row=taps_1d, col=taps_1d, dx=st.integers(-2, 2), dy=st.integers(-2, 2),
       halvings=st.integers(0, 3))
def test_every_rank_one_kernel_is_separated_exactly(row, col, dx, dy, halvings):
    k = _row(row).compose(_col(col)).shift(dx, dy).scale(Fraction(1, 2**halvings))
    parts = analyses.separation(k)
    assert parts is not None
    r, c = parts
    assert r.compose(c).same_values(k)
    assert {y for _, y in r.domain} == {0} and {x for x, _ in c.domain} == {0}


def test_separation_is_found_where_the_factor_split_limit_hides_it():
    # six distinct irreducible factors per axis: 4095 splits, `factorisations` stops at 40
    row = Kernel.unit()
    for f in ([1, 1], [1, 1, 1], [1, -1, 1], [1, 0, 1], [2, 1], [1, 2]):
        row = row.compose(Kernel.from_rows([f], origin=(0, 0)))
    literal = t.canonicalise(row.compose(row.transpose())).literal
    table = t.LiteralTable()
    r, c = (table.term(part) for part in analyses.separation(literal))
    row_col = t.compose(r, c)
    assert {row_col, t.compose(c, r)}.isdisjoint(analyses.factorisations(literal, table))
    assert ("separable", row_col) in set(analyses.analyse(literal, table))


def test_rank_two_and_single_line_kernels_are_not_separated():
    laplacian = Kernel.from_rows([[0, 1, 0], [1, -4, 1], [0, 1, 0]])
    assert analyses.separation(laplacian) is None
    assert analyses.separation(Kernel.from_rows([[1, 2, 1]])) is None
    assert analyses.separation(Kernel.from_rows([[1, 2], [2, 3]], origin=(0, 0))) is None


def test_separable_seed_is_a_composition_of_two_literals():
    gauss3 = Kernel.from_rows([[1, 2, 1], [2, 4, 2], [1, 2, 1]])
    literal = t.canonicalise(gauss3).literal
    terms = [term for name, term in analyses.analyse(literal, t.LiteralTable())
             if name == "separable"]
    assert len(terms) == 1 and terms[0].startswith("(KCompose")
