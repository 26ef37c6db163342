"""Property: every small decomposition compiles to a verified program or raises pressure."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kalg.algebra.decomp import DagBuilder, Decomposition
from kalg.diagnostics import RegisterPressureError
from kalg.targets.scamp5.codegen import Limits, generate

from .test_generate import check_program

SMALL = Limits(beam=8, children=8, moves=16, expansions=300)
"""A small search budget: the property is about validity, not length."""

_OPS = ("shift", "add", "sub", "neg", "half")


@st.composite
def decompositions(draw, max_ops: int = 7) -> tuple[Decomposition, tuple[str, ...]]:
    b = DagBuilder()
    values = [b.input]
    for _ in range(draw(st.integers(1, max_ops))):
        op = draw(st.sampled_from(_OPS))
        a = draw(st.sampled_from(values))
        if op == "shift":
            v = b.shift(a, draw(st.integers(-2, 2)), draw(st.integers(-2, 2)))
        elif op in ("add", "sub"):
            c = draw(st.sampled_from(values))
            v = b.add(a, c) if op == "add" else b.sub(a, c)
        else:
            v = b.neg(a) if op == "neg" else b.half(a)
        values.append(v)
    n_regs = draw(st.integers(2, 6))
    regs = ("A", "B", "C", "D", "E", "F")[:n_regs]
    outs = draw(st.lists(st.sampled_from(regs), min_size=1, max_size=min(3, n_regs), unique=True))
    chosen = {r: draw(st.sampled_from(values[1:])) for r in outs}
    return b.build(chosen), regs


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=decompositions(), op_set=st.sampled_from(["all", "basic"]),
       input_register=st.sampled_from(["A", "B"]))
def test_random_dag_compiles_or_reports_pressure(case, op_set, input_register):
    decomp, regs = case
    try:
        program = generate(decomp, regs, input_register, op_set, limits=SMALL)
    except RegisterPressureError:
        return
    check_program(program, decomp, op_set, regs, input_register)
