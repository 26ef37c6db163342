"""The exact search's norm bounds (`codegen.norms`) and its overwrite rule never cut a program
that exists: checked per macro, on every prefix of random programs, and against the search
with both turned off."""

from __future__ import annotations

import random
from fractions import Fraction

import numpy as np
import pytest

from kalg.algebra.kernel import Kernel
from kalg.targets.scamp5.exact.exhaustive import _exact, _instructions, _Search, tap_steps
from kalg.targets.scamp5.exact.norms import FAMILY, POINTS, TORUS, UNITS, NormBound, norms, torus
from kalg.targets.scamp5.machine.symbolic import initial_state, step

from .test_exhaustive_sound import SIX, _programs, _tap_heavy_program


def _norm(value) -> list[Fraction]:
    e, taps = _exact(value)
    return [Fraction(int(n), 1 << e) for n in norms(e, taps)]


def _wave(value) -> list[float]:
    e, taps = _exact(value)
    return [g / (1 << e) for g in torus(taps)]


def test_every_macro_writes_at_most_the_norms_of_what_it_reads():
    """N_h(result) <= the sum over the macro's terms of |coefficient| * N_h(register read),
    for every h, and the same for every torus point's |v(z)|, for a sample of the macros of
    op set all (all kinds, a register read twice counted twice), on random register
    contents: the property the bound rests on."""
    rng = random.Random(5)
    templates = [t.instr for t in _instructions("all", SIX)]
    state = initial_state("A")
    for instr in rng.sample(templates, 60):  # random contents: a few instructions first
        if all(state[r] is not None for r in instr.reads()):
            state = step(state, instr)
    held = {r: _norm(v) for r, v in state.items() if v is not None and v.trimmed().taps}
    waves = {r: _wave(v) for r, v in state.items() if v is not None and v.trimmed().taps}
    assert len(held) >= 4
    usable = [t for t in templates if all(r in held for r in t.reads())]
    kinds = {t.mnemonic for t in usable}
    checked = 0
    for instr in rng.sample(usable, 500):
        after = step(state, instr)
        for dest, form in instr.effects():
            if form is None or after.get(dest) is None or not after[dest].trimmed().taps:
                continue
            limit = [sum(abs(c) * held[r][i] for c, r, _ in form) for i in range(len(FAMILY))]
            got = _norm(after[dest])
            assert all(g <= m for g, m in zip(got, limit, strict=True)), instr
            limit = [sum(float(abs(c)) * waves[r][i] for c, r, _ in form)
                     for i in range(len(POINTS))]
            got = _wave(after[dest])
            assert all(g <= m + 1e-9 for g, m in zip(got, limit, strict=True)), instr
            checked += 1
    assert checked > 400 and {"add", "sub2x", "div", "diva"} <= kinds


@pytest.mark.parametrize("seed", range(3))
def test_the_norm_bound_never_exceeds_the_instructions_a_random_program_takes(seed):
    """After i of L instructions, no norm proves that more than L - i are needed for any value
    the program holds at the end: on tap-gathering programs and on programs with every
    instruction used."""
    rng = random.Random(seed)
    templates = [t.instr for t in _instructions("all", SIX)]
    cases = [_tap_heavy_program(rng, templates, rng.randint(2, 6)) for _ in range(25)]
    cases += [(p, s) for p, s, _ in _programs(400 + seed, 5, 6)]
    for program, states in cases:
        length = len(program)
        for value in (states[-1][r] for r in SIX):  # registers (NEWS is no value held)
            if value is None or not value.trimmed().taps:
                continue
            bound = NormBound(*_exact(value), len(SIX), tap_steps)
            for i, state in enumerate(states):
                held = [bound.units(_exact(state[r]), *_exact(state[r])) for r in SIX
                        if state[r] is not None and state[r].trimmed().taps]
                assert not bound.needs_more(held, length - i), (program, i)


def test_the_family_is_fixed_and_the_target_is_measured_exactly():
    """The kernels h and the torus points do not depend on the target, and a value equal to
    the target measures exactly UNITS under every h and point that sees it."""
    assert len(FAMILY) > 40 and FAMILY[0] == {(0, 0): 1}
    assert len(POINTS) == (TORUS * TORUS + 4) // 2  # one of each conjugate pair
    e, taps = 1, ((-1, 0, 3), (0, 0, -2), (1, 1, 5))
    bound = NormBound(e, taps, 6, tap_steps)
    assert len(bound.waves) > 0
    assert (bound.units(0, e, taps) == UNITS).all()


def test_torus_values_are_never_measured_below_their_size():
    """A value's torus units are at least UNITS * |v(z)| / |target(z)| computed exactly
    enough (the floating-point evaluation is rounded up, never down): checked on random
    kernels against a high-precision evaluation, and on multiples of the target whose exact
    measure is an integer number of units (where rounding down would show)."""
    import cmath
    rng = random.Random(9)
    target = (2, ((-1, 1, -3), (0, 0, 5), (1, -1, 3), (0, 1, 1)))
    bound = NormBound(*target, 6, tap_steps)
    n = len(bound.useful)

    def exact_units(e, taps):
        out = []
        for i in bound.waves.tolist():
            a, b = POINTS[i].tolist()
            z = [cmath.exp(2j * cmath.pi * k / TORUS) for k in range(TORUS)]
            val = abs(sum(c * z[(a * x + b * y) % TORUS] for x, y, c in taps)) / 2 ** e
            tv = abs(sum(c * z[(a * x + b * y) % TORUS] for x, y, c in target[1])) / 2 ** 2
            out.append(val / tv * UNITS)
        return out

    for k in range(200):
        e = rng.randint(0, 3)
        if k % 4 == 0:  # the target times 1/4 .. 4: exactly 16, 32, ... units
            scale = rng.choice((1, 2, 4, 8, 16))
            taps, e = tuple((x, y, c * scale) for x, y, c in target[1]), 4
        else:
            taps = tuple(sorted({(rng.randint(-2, 2), rng.randint(-2, 2)): rng.randint(-9, 9)
                                 or 1 for _ in range(rng.randint(1, 8))}.items()))
            taps = tuple((x, y, c) for (x, y), c in taps)
        got = bound.units(("v", k), e, taps)[n:]
        for g, want in zip(got.tolist(), exact_units(e, taps), strict=True):
            assert g >= min(UNITS, want - 1e-9), (taps, e)


@pytest.mark.parametrize(("length", "seed"), [(3, 1), (4, 2), (4, 3), (5, 4)])
def test_the_new_pruning_proves_the_same_lengths_as_the_search_without_it(length, seed):
    """Kernels of random programs (every instruction used): the search with the overwrite rule
    and the norm bounds proves the same shortest length as the search without them."""
    for program, states, out in _programs(500 + seed, length, 2):
        target = states[-1][out]
        got = []
        for flags in ({}, {"dominance": False, "norms": False}):
            search = _Search(target, SIX, "A", out, "all", 10**7, 2 * 10**6, None, **flags)
            outcome = search.run(length)
            assert outcome.stopped is None and outcome.proven, (program, flags)
            got.append(len(outcome.program))
        assert got[0] == got[1] <= length, program


@pytest.mark.parametrize("seed", range(2))
def test_a_value_two_instructions_from_the_end_always_passes_the_torus_test(seed):
    """Programs of 3 to 6 instructions (every instruction used): the value w written three
    instructions before the end, with the values held before it, is never judged unable to
    make any value the program ends with in two more instructions (`within_two`)."""
    rng = random.Random(20 + seed)
    templates = [t.instr for t in _instructions("all", SIX)]
    cases = [_tap_heavy_program(rng, templates, rng.randint(3, 6)) for _ in range(25)]
    cases += [(p, s) for p, s, _ in _programs(600 + seed, 5, 6)]
    checked = 0
    for program, states in cases:
        instr, before, after = program[-3], states[-4], states[-3]
        written = [d for d, form in instr.effects() if d in SIX and form is not None]
        if len(written) != 1 or after[written[0]] is None:
            continue
        w = _exact(after[written[0]])
        for value in (states[-1][r] for r in SIX):
            if value is None or not value.trimmed().taps:
                continue
            bound = NormBound(*_exact(value), len(SIX), tap_steps)
            n = len(bound.useful)
            held = [bound.units(_exact(before[r]), *_exact(before[r]))[n:][bound.strong]
                    for r in SIX
                    if before[r] is not None and before[r].trimmed().taps]
            made, err = bound.scaled(*w)
            assert bound.within_two(np.array(held, dtype=float), made[None, :],
                                    err[None, :])[0], (program, value)
            checked += 1
    assert checked > 40


def test_the_search_computes_every_value_at_the_torus_points_from_the_held_ones():
    """`_Search._wave_values` (a template's value at the torus points, combined linearly
    from the held values') equals evaluating the template's exact value, within the error
    it reports."""
    rng = random.Random(3)
    templates = [t.instr for t in _instructions("all", SIX)]
    _, states = _tap_heavy_program(rng, templates, 4)
    state = states[-1]
    search = _Search(Kernel.from_rows([[1, 2, 0], [0, -3, 1], [1, 0, 1]]), SIX, "A", "A",
                     "all", 10**6, 10**6, None)
    regs = [search.pool.intern(*_exact(state[r])) if state[r] is not None
            and state[r].trimmed().taps else -1 for r in SIX]
    defined = sum(1 << k for k, v in enumerate(regs) if v >= 0)
    free = [k for k, v in enumerate(regs) if v < 0 and k != 0]
    _, singles, _ = search._plan(defined, free)
    made, err = search._wave_values(regs, singles)
    for row, k in enumerate(singles.tolist()[:300]):
        (_, fid, getter), = search.values[k]
        exact = search.pool.values[search._value((0, fid, getter), regs)]
        want, _ = search.norms.scaled(*exact)
        assert np.all(np.abs(made[row] - want) <= err[row] + 1e-9 * np.abs(want)), k
