"""Symmetry breaking by the target's grid symmetries (`codegen.dihedral`) in the exact search:
the macros are closed under the symmetries, and a search that keys states by their orbit
proves the same lengths as brute force and as the search without it, on fewer nodes."""

from __future__ import annotations

import random
from fractions import Fraction

import pytest

from kalg.algebra.kernel import Kernel
from kalg.targets.scamp5.exact.dihedral import GROUP, image, stabilizer
from kalg.targets.scamp5.exact.exhaustive import _exact, _instructions, _Search
from kalg.targets.scamp5.machine.symbolic import initial_state, step

from .test_exhaustive_sound import _brute_force

SIX = ("A", "B", "C", "D", "E", "F")


def _effects(instr) -> frozenset:
    return frozenset((dest, None if form is None else frozenset(
        (coef, reg, offset) for coef, reg, offset in form)) for dest, form in instr.effects()
        if dest != "NEWS")


def _moved(effects, g) -> frozenset:
    a, b, c, d = g
    return frozenset((dest, None if form is None else frozenset(
        (coef, reg, (a * x + b * y, c * x + d * y)) for coef, reg, (x, y) in form))
        for dest, form in effects)


def test_every_grid_symmetry_maps_the_instruction_set_onto_itself():
    """The premise of the symmetry breaking: g(program) is a program of the same length for
    every g of the group (op set all, three registers: every macro shape occurs)."""
    effects = {_effects(t.instr) for t in _instructions("all", ("A", "B", "C", "D"))}
    for g in GROUP:
        assert {_moved(e, g) for e in effects} == effects, g


def test_the_stabilizer_lists_exactly_the_symmetries_a_kernel_keeps():
    box = _exact(Kernel.from_rows([[1, 1, 1]] * 3))[1]
    assert len(stabilizer(box)) == 7
    sobel = _exact(Kernel.from_rows([[1, 0, -1], [2, 0, -2], [1, 0, -1]]))[1]
    assert stabilizer(sobel) == ((1, 0, 0, -1),)  # north-south mirror only
    assert stabilizer(_exact(Kernel.from_rows([[1, 2, 3]]))[1]) == ((1, 0, 0, -1),)
    assert stabilizer(_exact(Kernel.from_rows([[1, 2, 3], [0, 0, 4], [0, 0, 0]]))[1]) == ()
    for g in stabilizer(box):
        assert image(box, g) == box


def test_symmetric_kernels_get_their_brute_force_shortest_length():
    """Symmetric kernels left in A by random programs of 3 instructions on three registers:
    the search with symmetry breaking proves the brute-force minimum (when at most 2, else
    3), as the search without it does."""
    registers = ("A", "B", "C")
    exact = _brute_force(registers, 2)
    rng = random.Random(11)
    templates = [t.instr for t in _instructions("all", registers)]
    targets: dict[tuple, Kernel] = {}
    for _ in range(60_000):
        state = initial_state("A")
        for _ in range(3):
            instr = rng.choice([t for t in templates
                                if all(state[r] is not None for r in t.reads())])
            state = step(state, instr)
        value = state["A"]
        if value is not None and value.taps and stabilizer(_exact(value)[1]):
            targets.setdefault(_exact(value), value)
        if len(targets) >= 30:
            break
    assert len(targets) >= 20
    lengths = set()
    for key, kernel in sorted(targets.items()):
        want = exact.get(key, 3)
        lengths.add(want)
        for symmetry in (True, False):
            search = _Search(kernel, registers, "A", "A", "all", 400_000, 10**6, None,
                             symmetry=symmetry)
            outcome = search.run(4)
            assert outcome.proven and len(outcome.program) == want, (kernel, symmetry)
    assert {2, 3} <= lengths


@pytest.mark.parametrize("rows", [
    [[1, 1, 1], [1, 1, 1], [1, 1, 1]],
    [[0, 1, 0], [1, -4, 1], [0, 1, 0]],
    [[1, 0, -1], [2, 0, -2], [1, 0, -1]],
])
def test_symmetry_breaking_proves_the_same_bound_on_fewer_nodes(rows):
    kernel = Kernel.from_rows(rows)
    runs = {}
    for symmetry in (True, False):
        search = _Search(kernel, SIX, "A", "A", "all", 2_000_000, 2_000_000, None,
                         symmetry=symmetry)
        runs[symmetry] = search.run(4)
    assert runs[True].stopped is None and runs[False].stopped is None
    assert (runs[True].lower, runs[True].program is None) == \
        (runs[False].lower, runs[False].program is None)
    assert runs[True].nodes < runs[False].nodes


def test_a_random_program_of_a_symmetric_kernel_is_never_beaten_by_a_wrong_proof():
    """Symmetrised random programs: run a random 2-instruction program and its mirror image
    into two registers and add them (a kernel with the mirror symmetry, made by at most 5
    instructions); the search must find a program at most that long."""
    rng = random.Random(5)
    templates = [t.instr for t in _instructions("all", ("A", "B"))]
    mirror = (-1, 0, 0, 1)
    checked = 0
    while checked < 4:
        state = initial_state("A")
        for _ in range(2):
            instr = rng.choice([t for t in templates
                                if all(state[r] is not None for r in t.reads())])
            state = step(state, instr)
        value = state["B"] if state["B"] is not None else state["A"]
        if value is None or not value.taps:
            continue
        e, taps = _exact(value)
        both = {}
        for x, y, n in (*taps, *image(taps, mirror)):
            both[(x, y)] = both.get((x, y), 0) + n
        kernel = Kernel.of({k: Fraction(v, 1 << e) for k, v in both.items() if v})
        if not kernel.taps:
            continue
        search = _Search(kernel, SIX, "A", "A", "all", 3_000_000, 2_000_000, None)
        assert search.symmetries
        outcome = search.run(5)
        assert outcome.program is not None, kernel
        checked += 1
