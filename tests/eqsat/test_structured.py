"""The structured-sum analyses (issue 11) and the term of what the user wrote: each finds the
decomposition it claims on a kernel built that way (positive), proposes nothing where its
structure is absent (negative), and every term it proposes is exact (numeric soundness; the
random-kernel check of every seed is `test_analyses.test_every_seed_is_exact`)."""

from __future__ import annotations

from fractions import Fraction

from kalg.algebra.kernel import Kernel
from kalg.eqsat import analyses
from kalg.eqsat import terms as t
from kalg.frontend import check, parse

ROW = Kernel.of({(-1, 0): 1, (0, 0): 2, (1, 0): 1})
GAUSS3 = ROW.compose(ROW.transpose())
GAUSS5 = GAUSS3.compose(GAUSS3)
BOX5 = Kernel.from_rows([[1] * 5] * 5)


def _terms(analysis, k: Kernel) -> list[tuple[str, Kernel, dict]]:
    """(term, its value, literals) for each term `analysis` proposes for k's literal."""
    table = t.LiteralTable()
    literal = t.canonicalise(k).literal
    out = []
    for term in analysis(literal, table):
        value = t.evaluate(term, table.literals)
        assert value.same_values(literal), f"{analysis.__name__}: {term} is not exact"
        out.append((term, value, table.literals))
    return out


def _literals(term: str, literals: dict) -> list[Kernel]:
    return [literals[key] for key in analyses._LITERAL.findall(term)]


# ------------------------------------------------------------------ separable plus rest
def test_unsharp_mask_is_a_separable_kernel_plus_a_scaled_identity():
    found = _terms(analyses.peel_splits, Kernel.unit(value=512) - GAUSS5)
    assert found, "no split of 2 - g5"
    term, _, literals = found[0]
    parts = _literals(term, literals)
    assert any(len(p) == 1 for p in parts)  # the identity, scaled
    assert any(len(p) == 5 for p in parts)  # a 5-tap row or column of g5


def test_box_minus_its_centre_is_the_box_minus_one_tap():
    term, _, literals = _terms(analyses.peel_splits, BOX5 - Kernel.unit())[0]
    assert sorted(len(p) for p in _literals(term, literals)) == [1, 5, 5]


def test_sum_of_two_separable_kernels_is_found_over_the_rationals():
    # Rank 2: a 5x5 Gaussian minus 16 times a 3x3 one (a difference of Gaussians).
    k = GAUSS5 - GAUSS3.scale(16)
    pivot = analyses._peel({o: Fraction(c) for o, c in k.entries}, (-2, -2))
    assert pivot is not None
    _row, _col, rest = pivot
    assert analyses.separation(rest) is not None  # the rest is rank 1 too


def test_peel_proposes_nothing_for_a_separable_or_a_random_dense_kernel():
    assert not _terms(analyses.peel_splits, GAUSS3)  # rank 1: separation's job
    dense = Kernel.from_rows([[3, -5, 7], [5, 1, -6], [-3, 9, 2]])
    assert not _terms(analyses.peel_splits, dense)  # no part cheaper than the whole


# ------------------------------------------------------------------ factorable plus a tap
def test_a_factorable_kernel_with_its_centre_changed_is_found():
    cross = Kernel.from_rows([[0, 1, 0], [1, 1, 1], [0, 1, 0]])
    smooth = GAUSS3.compose(cross.compose(Kernel.of({(0, 0): 1, (1, 0): 1})))
    k = smooth + Kernel.unit(value=7)
    found = _terms(analyses.pivot_splits, k)
    assert found
    term, _, literals = found[0]
    assert any(len(p) == 1 for p in _literals(term, literals))


def test_pivot_split_proposes_nothing_when_no_tap_change_gives_a_binomial_factor():
    assert not _terms(analyses.pivot_splits, Kernel.from_rows([[3, -5, 7], [5, 1, -6],
                                                                [-3, 9, 2]]))


def test_factorable_plus_tap_gives_the_smooth_part_and_the_tap_of_a_difference_of_gaussians():
    # 16·g5 - 256·g3 = 16·F3·(F3 - 16): its factor F3 - 16 is F3 and the tap -16 (the chain
    # applies it as F3's own chain minus the input).
    factor = GAUSS3 - Kernel.unit(value=16)
    (s, tap), *_ = analyses.factorable_plus_tap(factor)
    assert (s + tap).same_values(factor.trimmed())
    assert s.same_values(GAUSS3) and tap.same_values(Kernel.unit(value=-16))
    assert not analyses.factorable_plus_tap(Kernel.from_rows([[3, -5, 7], [5, 1, -6],
                                                               [-3, 9, 2]]))


# ------------------------------------------------------------------ coefficient classes
def test_taps_sharing_an_odd_magnitude_are_applied_to_one_multiple_of_the_input():
    k = Kernel.from_rows([[3, 0, -3], [6, 1, -6], [3, 0, -3]])
    term, _, _ = _terms(analyses.coefficient_classes, k)[0]
    assert '(Lit "0,0:3")' in term  # 3·input made once
    constants = {key for key in analyses._LITERAL.findall(term) if " " not in key}
    assert constants - {"0,0:1"} == {"0,0:3"}  # one multiple, shared by the 3s and the 6s


def test_coefficient_classes_propose_nothing_when_no_odd_magnitude_repeats():
    assert not _terms(analyses.coefficient_classes, Kernel.from_rows([[1, 2, 1], [2, 4, 2],
                                                                      [1, 2, 1]]))
    assert not _terms(analyses.coefficient_classes, Kernel.from_rows([[3, 5, 1]]))


def test_constant_chain_makes_five_from_three():
    table = t.LiteralTable()
    table.term(Kernel.unit(value=3))
    five = Kernel.unit(value=5)
    table.term(five)
    terms = list(analyses.constant_chain(five, table))
    assert terms and all(t.evaluate(x, table.literals).same_values(five) for x in terms)
    assert not list(analyses.constant_chain(Kernel.unit(value=3), table))  # nothing smaller


# ------------------------------------------------------------------ what the user wrote
def _written(text: str, name: str):
    definition = check(parse(text, "t.kalg")).definition(name)
    return definition.structure.get("A"), definition.outputs["A"]


def test_the_written_term_is_exact_and_keeps_named_sub_kernels():
    text = ("kernel g3 = (1 + x) * (1 + x^-1) * (1 + y) * (1 + y^-1) / 16\n"
            "kernel dog = g3 * g3 - g3\n")
    tree, k = _written(text, "dog")
    table = t.LiteralTable()
    term = analyses.written_term(tree, table)
    assert term is not None and t.evaluate(term, table.literals).same_values(k)
    g3 = analyses.written_term(_written(text, "g3")[0], t.LiteralTable())
    assert term.count(g3) == 3  # g3's own term, three times: one e-class in the e-graph


def test_a_matrix_has_no_written_structure_and_a_zero_part_no_term():
    assert _written("kernel m = [1 2 1]\n", "m")[0] is None
    tree, _ = _written("kernel z = (x - x) + [1 2 1]\n", "z")
    assert analyses.written_term(tree, t.LiteralTable()) is None


def test_transpose_of_written_algebra_is_pushed_to_its_leaves():
    tree, k = _written("kernel r = transpose((1 + x) * [1 2 1])\n", "r")
    table = t.LiteralTable()
    term = analyses.written_term(tree, table)
    assert term is not None and t.evaluate(term, table.literals).same_values(k)
