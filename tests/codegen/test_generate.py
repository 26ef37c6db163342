"""End-to-end tests of `kalg.codegen.generate` on hand-built decompositions of the benchmarks."""

from __future__ import annotations

import pytest

from kalg.codegen import generate
from kalg.decomp import DagBuilder
from kalg.diagnostics import RegisterPressureError
from kalg.scamp5.isa import OP_SETS
from kalg.scamp5.symbolic import execute, verify_exact

from .dags import BENCH, CAIN_ALL, needs_three

REGISTERS = ("A", "B", "C", "D", "E", "F")

# Instruction counts this code generator reaches (6 registers, input in A); a regression guard:
# a change that makes any of them longer must say why.
EXPECTED = {
    "sobel": (5, 7), "gauss3": (10, 12), "gauss3_split_halves": (10, 12), "box3": (6, 8),
    "box5": (8, 14), "box7": (10, 20), "laplacian": (6, 11), "sharpen": (8, 12),
    "gauss5": (21, 24), "sobel_xy": (11, 14), "sobel_shared": (5, 7), "many_live": (9, 10),
}


def check_program(program, decomp, op_set, registers=REGISTERS, input_register="A"):
    """Independent checks of a generated program (generate verifies too)."""
    verify_exact(program, decomp.output_kernels(), input_register)
    for instr in program:
        assert instr.violation() is None, instr
        assert type(instr) in OP_SETS[op_set], instr
        assert set(instr.registers()) <= set(registers), instr
    state = {r: r == input_register for r in REGISTERS}
    for instr in program:
        assert all(state[r] for r in instr.reads()), f"{instr} reads an undefined register"
        for r in instr.writes():
            state[r] = True


@pytest.mark.parametrize("op_set", ["all", "basic"])
@pytest.mark.parametrize("name", sorted(BENCH))
def test_benchmark_decompositions(name, op_set):
    decomp = BENCH[name]()
    program = generate(decomp, REGISTERS, "A", op_set)
    check_program(program, decomp, op_set)
    want = EXPECTED[name][0 if op_set == "all" else 1]
    assert len(program) <= want, "\n".join(map(str, program))


@pytest.mark.parametrize("name", sorted(CAIN_ALL))
def test_within_one_of_cain(name):
    program = generate(BENCH[name](), op_set="all")
    assert len(program) <= CAIN_ALL[name] + 2


def test_deterministic():
    decomp = BENCH["sobel_xy"]()
    first = [str(i) for i in generate(decomp)]
    assert [str(i) for i in generate(decomp)] == first


def test_register_pressure_error():
    with pytest.raises(RegisterPressureError, match="2 register"):
        generate(needs_three(), registers=("A", "B"))
    b = DagBuilder()
    pair = b.build({"A": b.add(b.input, b.shift(b.input, 1, 0))})
    with pytest.raises(RegisterPressureError, match="1 register"):
        generate(pair, registers=("A",), op_set="basic")


def test_tight_registers_still_fit():
    decomp = BENCH["gauss3"]()
    for op_set in ("all", "basic"):
        regs = ("A", "B", "C") if op_set == "all" else ("A", "B")
        program = generate(decomp, regs, "A", op_set)
        check_program(program, decomp, op_set, regs)


def test_output_in_other_register_and_input_elsewhere():
    b = DagBuilder()
    s = b.add(b.shift(b.input, 1, 0), b.half(b.input))
    decomp = b.build({"C": s, "D": b.input})
    program = generate(decomp, REGISTERS, "B", "all")
    check_program(program, decomp, "all", input_register="B")
    state = execute(program, "B")
    assert state["D"] is not None


def test_zero_output_uses_res():
    b = DagBuilder()
    x = b.shift(b.input, 1, 0)
    decomp = b.build({"B": b.sub(x, x)})
    program = generate(decomp)
    check_program(program, decomp, "all")
    assert len(program) == 1


def test_unknown_op_set():
    with pytest.raises(ValueError, match="op set"):
        generate(BENCH["box3"](), op_set="fancy")
