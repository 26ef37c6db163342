"""The kernel families of the comparison with Cain (`kalg.families`, issue 26): seeded and
deterministic, and each draws what its documentation says."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from kalg import frontend
from kalg.families import DIVISORS, FAMILIES, OPERATORS, draw, images, ring_turn

COUNT = 20


def arrays(d):
    return [a for a, _ in d.outputs.values()]


@pytest.mark.parametrize("family", list(FAMILIES))
def test_a_family_is_the_same_for_the_same_seed_and_new_for_another(family):
    first, again, other = draw(family, COUNT, 7), draw(family, COUNT, 7), draw(family, COUNT, 8)
    assert [d.kalg_text() for d in first] == [d.kalg_text() for d in again]
    assert [d.kalg_text() for d in first] != [d.kalg_text() for d in other]
    assert len(first) == COUNT and len({d.name for d in first}) == COUNT


@pytest.mark.parametrize("family", list(FAMILIES))
def test_a_draw_reads_back_as_the_kernels_it_holds(family):
    for d in draw(family, 4, 3):
        module = frontend.check(frontend.parse(d.kalg_text(), "<draw>"))
        outputs = module.definition(d.name).outputs
        assert sorted(outputs) == sorted(d.outputs)
        for reg, (a, shift) in d.outputs.items():
            half = a.shape[0] // 2
            want = {(x - half, half - y): Fraction(int(a[y, x]), 2 ** shift)
                    for y in range(a.shape[0]) for x in range(a.shape[1]) if a[y, x]}
            got = {k: Fraction(v) for k, v in outputs[reg].taps.items() if v}
            assert got == want


def test_dense_3x3_kernels_have_the_documented_entries_and_divisors():
    for family, low in (("dense3u", 0), ("dense3s", -8)):
        draws = draw(family, COUNT, 11)
        for i, d in enumerate(draws):
            ((a, shift),) = d.outputs.values()
            assert a.shape == (3, 3) and a.any() and low <= a.min() and a.max() <= 8
            assert 2 ** shift == DIVISORS[i % 3]
        assert min(arrays(d)[0].min() for d in draws) < 0 if low else True


def test_quantised_weights_take_only_their_levels_in_both_sizes():
    for family, levels, shift in (("ternary", {-1, 0, 1}, 0), ("quant2", {-3, -1, 1, 3}, 2)):
        for i, d in enumerate(draw(family, COUNT, 5)):
            ((a, s),) = d.outputs.values()
            assert set(np.unique(a)) <= levels and s == shift
            assert a.shape == ((3, 3) if i % 2 == 0 else (5, 5))


def test_operators_are_rotations_or_reflections_of_the_named_operator_and_distinct():
    draws = draw("operators", COUNT, 2)
    seen = set()
    for d in draws:
        ((a, _),) = d.outputs.values()
        base = OPERATORS[d.name.split("_", 2)[2].rsplit("_", 1)[0]]
        assert any(np.array_equal(a, b) for b in images(base))
        seen.add(a.tobytes())
    assert len(seen) == COUNT


def test_the_images_of_a_compass_operator_are_its_eight_turns_and_their_mirrors():
    kirsch = OPERATORS["kirsch"]
    assert len(images(kirsch)) == 8  # its mirror images are turns of it
    assert len(images(OPERATORS["corner"])) == 8
    assert len(images(OPERATORS["laplace8"])) == 1
    assert np.array_equal(ring_turn(kirsch, 8), kirsch)
    assert np.array_equal(ring_turn(ring_turn(kirsch, 2), -2), kirsch)


def test_large_kernels_alternate_5x5_and_7x7_and_isotropic_ones_keep_every_symmetry():
    for family in ("dense57", "isotropic"):
        for i, d in enumerate(draw(family, COUNT, 9)):
            ((a, _),) = d.outputs.values()
            assert a.shape == ((5, 5) if i % 2 == 0 else (7, 7))
            if family == "isotropic":
                assert np.array_equal(a, a.T) and np.array_equal(a, np.rot90(a))
                assert a[a.shape[0] // 2, a.shape[1] // 2] == a.max() > 0


def test_banks_have_two_to_five_outputs_on_six_registers():
    for family in ("bank3", "rotbank"):
        draws = draw(family, COUNT, 4)
        for i, d in enumerate(draws):
            assert list(d.outputs) == list("ABCDE"[:2 + i % 4])
            assert len({a.tobytes() for a in arrays(d)}) == len(d.outputs)
            assert "registers: A..F" in d.kalg_text()


def test_a_bank_of_rotations_holds_turns_of_its_first_kernel():
    for d in draw("rotbank", COUNT, 6):
        first, *rest = arrays(d)
        turns = [ring_turn(first, k) for k in range(8)]
        assert all(any(np.array_equal(a, t) for t in turns) for a in rest)


def test_an_unknown_family_is_refused_with_the_known_ones():
    with pytest.raises(ValueError, match="dense3u"):
        draw("dense9", 1, 0)
