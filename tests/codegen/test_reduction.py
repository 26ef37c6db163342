"""The backward reduction of a filter that fills the register file (`codegen.reduction`): its
steps, replayed forwards by in-place instructions, give back the filter's outputs exactly."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from kalg.algebra.kernel import Kernel
from kalg.algebra.random_kernels import random_kernels
from kalg.targets.scamp5.codegen.matrix import _integer_matrix
from kalg.targets.scamp5.codegen.reduction import reductions, replay
from kalg.targets.scamp5.machine.symbolic import initial_state, mismatches, run

REGISTERS = tuple("ABCDEF")


def rows_of(seed: int) -> dict:
    kernels = {r: {"A": Kernel.from_rows(np.asarray(w).tolist()).scale(Fraction(1, 8))}
               for r, w in zip(REGISTERS, random_kernels(6, seed), strict=True)}
    _, rows = _integer_matrix(kernels)
    return rows


def as_kernel(row: dict) -> Kernel:
    return Kernel.of({d: Fraction(c, 8) for (_, d), c in row.items()})


@pytest.mark.parametrize("ops", ["all", "basic"])
@pytest.mark.parametrize("seed", [0, 7, 103])
def test_the_reduction_replayed_in_place_gives_back_the_outputs(seed, ops):
    rows = rows_of(seed)
    states = reductions(rows, REGISTERS, (1, 4, 6))
    assert [len(steps) for _, steps in states] == [1, 4, 6]
    mass = sum(abs(c) for row in rows.values() for c in row.values())
    for reduced, steps in states:
        # every step lowers the coefficient mass and keeps the outputs within 3x3
        now = sum(abs(c) for row in reduced.values() for c in row.values())
        assert now <= mass - len(steps)
        assert all(max(abs(d[0]), abs(d[1])) <= 1 for row in reduced.values() for _, d in row)
        program = replay(steps, ops == "all")
        # in place: each instruction writes one register and reads it
        assert all(len(i.writes()) == 1 and set(i.writes()) <= set(i.reads()) for i in program)
        state = {**initial_state("A"), **{r: as_kernel(row) for r, row in reduced.items()}}
        final = run(state, program)
        assert not mismatches(final, {r: as_kernel(row) for r, row in rows.items()})


def test_the_reduction_ends_where_no_step_lowers_the_mass():
    # a state past the greedy's end is left out, not repeated
    rows = rows_of(0)
    assert reductions(rows, REGISTERS, (100,)) == []
    reached = reductions(rows, REGISTERS, tuple(range(1, 30)))
    assert 0 < len(reached) < 29
    assert [len(steps) for _, steps in reached] == list(range(1, len(reached) + 1))
