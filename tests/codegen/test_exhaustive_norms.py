"""The exact search's norm bounds (`codegen.norms`) and its overwrite rule never cut a program
that exists: checked per macro, on every prefix of random programs, and against the search
with both turned off."""

from __future__ import annotations

import random
from fractions import Fraction

import pytest

from kalg.codegen.exhaustive import _exact, _instructions, _Search, tap_steps
from kalg.codegen.norms import FAMILY, UNITS, NormBound, norms
from kalg.scamp5.symbolic import initial_state, step

from .test_exhaustive_sound import SIX, _programs, _tap_heavy_program


def _norm(value) -> list[Fraction]:
    e, taps = _exact(value)
    return [Fraction(int(n), 1 << e) for n in norms(e, taps)]


def test_every_macro_writes_at_most_the_norms_of_what_it_reads():
    """N_h(result) <= the sum over the macro's terms of |coefficient| * N_h(register read),
    for every h and a sample of the macros of op set all (all kinds, a register read twice
    counted twice), on random register contents: the property the bound rests on."""
    rng = random.Random(5)
    templates = [t.instr for t in _instructions("all", SIX)]
    state = initial_state("A")
    for instr in rng.sample(templates, 60):  # random contents: a few instructions first
        if all(state[r] is not None for r in instr.reads()):
            state = step(state, instr)
    held = {r: _norm(v) for r, v in state.items() if v is not None and v.trimmed().taps}
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
        for value in states[-1].values():
            if value is None or not value.trimmed().taps:
                continue
            bound = NormBound(*_exact(value), len(SIX), tap_steps)
            for i, state in enumerate(states):
                held = [bound.units(_exact(state[r]), *_exact(state[r])) for r in SIX
                        if state[r] is not None and state[r].trimmed().taps]
                assert not bound.needs_more(held, length - i), (program, i)


def test_the_family_is_fixed_and_the_target_is_measured_exactly():
    """The kernels h do not depend on the target, and a value equal to the target measures
    exactly UNITS under every h that sees it."""
    assert len(FAMILY) > 40 and FAMILY[0] == {(0, 0): 1}
    e, taps = 1, ((-1, 0, 3), (0, 0, -2), (1, 1, 5))
    bound = NormBound(e, taps, 6, tap_steps)
    assert (bound.units(0, e, taps) == UNITS).all()


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
