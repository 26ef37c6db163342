"""The fallback schedule is valid on its own (generate only uses it when the search fails)."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kalg.codegen.network import normalise
from kalg.codegen.regalloc import allocate
from kalg.codegen.sequential import sequential
from kalg.scamp5.symbolic import verify_exact

from .dags import BENCH
from .test_generate import REGISTERS, check_program
from .test_random_dags import decompositions

_TOO_DEEP = pytest.mark.xfail(reason="nested sums over div chains (3 registers each) need more "
                               "than 6 registers without search", strict=True)
CASES = [(name, op_set) for name in ("sobel_xy", "laplacian", "many_live", "gauss3", "analognet2")
         for op_set in ("all", "basic")]


@pytest.mark.parametrize(("name", "op_set"), [
    pytest.param(n, o, marks=_TOO_DEEP) if (n in ("gauss3", "analognet2") and o == "all")
    else (n, o) for n, o in CASES])
def test_sequential_schedule_is_correct(name, op_set):
    decomp = BENCH[name]()
    program = allocate(sequential(normalise(decomp), op_set), REGISTERS, "A")
    assert program is not None
    check_program(program, decomp, op_set)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=decompositions(), op_set=st.sampled_from(["all", "basic"]))
def test_sequential_on_random_dags(case, op_set):
    decomp, regs = case
    program = allocate(sequential(normalise(decomp, 4), op_set), regs, "A")
    if program is not None:  # a tight budget may not fit without search
        verify_exact(program, decomp.output_kernels(), "A")
