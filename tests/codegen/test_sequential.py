"""The fallback schedule is valid on its own (generate only uses it when the search fails)."""

from __future__ import annotations

import importlib
from fractions import Fraction
from math import comb

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kalg.algebra.decomp import DagBuilder
from kalg.algebra.kernel import Kernel
from kalg.targets.scamp5.codegen.network import normalise
from kalg.targets.scamp5.codegen.regalloc import allocate
from kalg.targets.scamp5.codegen.sequential import sequential
from kalg.targets.scamp5.machine.symbolic import verify_exact
from kalg.targets.scamp5.optimize import direct_decomposition

from .dags import BENCH
from .test_generate import REGISTERS, check_program
from .test_random_dags import decompositions

CASES = [(name, op_set) for name in ("sobel_xy", "laplacian", "many_live", "gauss3", "analognet2")
         for op_set in ("all", "basic")]


_TOO_DEEP = pytest.mark.xfail(reason="analognet2's sums read several div chains each (3 registers "
                               "per div) while a running sum is held: more than 6 registers "
                               "without search", strict=True)


@pytest.mark.parametrize(("name", "op_set"), [
    pytest.param(n, o, marks=_TOO_DEEP) if (n, o) == ("analognet2", "all") else (n, o)
    for n, o in CASES])
def test_sequential_schedule_is_correct(name, op_set):
    # gauss3 with op set all used to need more than 6 registers (a nested sum over a div chain
    # computed while a running sum was held): the deepest nodes now come first. The unshared
    # order is the second fallback (analognet2 basic fits only that way).
    decomp = BENCH[name]()
    schedules = [sequential(normalise(decomp), op_set, share) for share in (True, False)]
    programs = [allocate(s, REGISTERS, "A") for s in schedules if s is not None]
    program = next((p for p in programs if p is not None), None)
    assert program is not None
    check_program(program, decomp, op_set)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=decompositions(), op_set=st.sampled_from(["all", "basic"]))
def test_sequential_on_random_dags(case, op_set):
    decomp, regs = case
    schedule = sequential(normalise(decomp, 4), op_set)
    program = None if schedule is None else allocate(schedule, regs, "A")
    if program is not None:  # a tight budget may not fit without search
        verify_exact(program, decomp.output_kernels(), "A")


def _chain(factors: int) -> DagBuilder:
    """(1 + x)^factors / 2^factors, each factor reading the previous value twice (a chain the
    e-graph produces for binomial Gaussians)."""
    b = DagBuilder()
    v = b.input
    for _ in range(factors):
        v = b.half(b.add(v, b.shift(v, 1, 0)))
    return b.build({"A": v})


def test_fallback_on_a_factor_chain_is_linear_not_exponential():
    # Regression: the fallback recomputed a node for every term reading it, so (1 + x)^n took
    # 2^n recomputations (a 9x9 binomial Gaussian spent minutes in it, a 13x13 ran out of memory).
    decomp = _chain(14)
    schedule = sequential(normalise(decomp), "all")
    assert schedule is not None and len(schedule.steps) <= 4 * 14
    program = allocate(schedule, REGISTERS, "A")
    assert program is not None
    check_program(program, decomp, "all")


def test_fallback_of_a_long_horner_chain_fits_six_registers():
    # Regression: the fallback held a running sum at every level of a Horner chain of halvings,
    # so a 9x9 binomial Gaussian's digit-plane candidate needed 16 registers and failed.
    outputs = {"A": Kernel.from_rows([[comb(8, i) * comb(8, j) for j in range(9)]
                                      for i in range(9)]).scale(Fraction(1, 4 ** 8))}
    decomp = direct_decomposition(outputs)
    program = allocate(sequential(normalise(decomp), "all"), REGISTERS, "A")
    assert program is not None
    check_program(program, decomp, "all")


def test_fallback_gives_up_past_its_step_cap(monkeypatch):
    module = importlib.import_module("kalg.targets.scamp5.codegen.sequential")
    monkeypatch.setattr(module, "MAX_STEPS", 10)
    assert sequential(normalise(_chain(14)), "all") is None
    assert sequential(normalise(_chain(2)), "all") is not None
