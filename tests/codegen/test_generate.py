"""End-to-end tests of `kalg.targets.scamp5.codegen.generate` on hand-built decompositions of the
benchmarks.

Run with `-s` to see the table of instruction counts (`test_report_counts`).
"""

from __future__ import annotations

from functools import cache

import pytest

from kalg.algebra.decomp import DagBuilder
from kalg.diagnostics import RegisterPressureError
from kalg.targets.scamp5.codegen import QUICK, Limits, generate
from kalg.targets.scamp5.machine.isa import OP_SETS, Instr
from kalg.targets.scamp5.machine.symbolic import execute, verify_exact

from .dags import BENCH, CAIN_ALL, needs_three

REGISTERS = ("A", "B", "C", "D", "E", "F")

EXPECTED = {
    "sobel": (5, 7), "gauss3": (10, 12), "gauss3_split_halves": (10, 13), "box3": (6, 8),
    "box5": (8, 14), "box7": (10, 20), "laplacian": (5, 10), "sharpen": (7, 11),
    "gauss5": (19, 24), "sobel_xy": (9, 13), "sobel_shared": (5, 7), "many_live": (9, 10),
    "gauss5_gauss3": (20, 24), "analognet2": (23, 30), "box7_div64": (16, 27),
    "sobel_xy_div8": (10, 17),
}
"""(all, basic) instruction counts with the default limits: a regression guard. A change that
makes one longer must say why; one that makes it shorter should lower it here."""

DEFAULT_CHECKED = ("sobel", "box3", "box5", "laplacian", "sobel_xy", "sobel_shared")
"""Benchmarks compiled with the default (slower) limits in every run; the rest use QUICK."""


@cache
def compiled(name: str, op_set: str, quick: bool) -> tuple[Instr, ...]:
    return tuple(generate(BENCH[name](), REGISTERS, "A", op_set, QUICK if quick else None))


def check_program(program, decomp, op_set, registers=REGISTERS, input_register="A"):
    """Independent checks of a generated program (generate verifies too)."""
    verify_exact(program, decomp.output_kernels(), input_register)
    for instr in program:
        assert instr.violation() is None, instr
        assert type(instr) in OP_SETS[op_set], instr
        assert set(instr.registers()) <= set(registers), instr
    defined = {r: r == input_register for r in REGISTERS}
    for instr in program:
        assert all(defined[r] for r in instr.reads()), f"{instr} reads an undefined register"
        for r in instr.writes():
            defined[r] = True


@pytest.mark.parametrize("op_set", ["all", "basic"])
@pytest.mark.parametrize("name", sorted(BENCH))
def test_benchmark_programs_are_valid(name, op_set):
    program = compiled(name, op_set, quick=True)
    check_program(list(program), BENCH[name](), op_set)


@pytest.mark.parametrize("op_set", ["all", "basic"])
@pytest.mark.parametrize("name", DEFAULT_CHECKED)
def test_benchmark_counts_with_default_limits(name, op_set):
    program = compiled(name, op_set, quick=False)
    check_program(list(program), BENCH[name](), op_set)
    want = EXPECTED[name][0 if op_set == "all" else 1]
    assert len(program) <= want, "\n".join(map(str, program))
    if op_set == "all" and name in CAIN_ALL:
        assert len(program) <= CAIN_ALL[name]


def test_report_counts():
    """Instruction counts (QUICK limits) next to the default-limit guard and Cain's."""
    print(f"\n{'decomposition':22s} {'all':>4s} {'basic':>5s}   default  Cain(all)")
    for name in sorted(BENCH):
        counts = [len(compiled(name, ops, quick=True)) for ops in ("all", "basic")]
        print(f"{name:22s} {counts[0]:4d} {counts[1]:5d}   {EXPECTED[name]!s:8s} "
              f"{CAIN_ALL.get(name, '')}")


def test_deterministic():
    decomp = BENCH["sobel_xy"]()
    first = [str(i) for i in generate(decomp, limits=QUICK)]
    assert [str(i) for i in generate(decomp, limits=QUICK)] == first


def test_register_pressure_error():
    with pytest.raises(RegisterPressureError, match="2 register"):
        generate(needs_three(), registers=("A", "B"), limits=QUICK)
    b = DagBuilder()
    pair = b.build({"A": b.add(b.input, b.shift(b.input, 1, 0))})
    with pytest.raises(RegisterPressureError, match="1 register"):
        generate(pair, registers=("A",), op_set="basic", limits=QUICK)


@pytest.mark.parametrize("op_set", ["all", "basic"])
def test_tight_registers_still_fit(op_set):
    decomp = BENCH["gauss3"]()
    regs = ("A", "B", "C") if op_set == "all" else ("A", "B")
    check_program(generate(decomp, regs, "A", op_set, QUICK), decomp, op_set, regs)


def test_six_registers_are_tight_for_many_live_values():
    decomp = BENCH["many_live"]()  # five outputs and the input: all six registers in use
    for op_set in ("all", "basic"):
        check_program(generate(decomp, op_set=op_set, limits=QUICK), decomp, op_set)


def test_input_elsewhere_and_an_output_that_is_the_input():
    b = DagBuilder()
    s = b.add(b.shift(b.input, 1, 0), b.half(b.input))
    decomp = b.build({"C": s, "D": b.input})
    program = generate(decomp, REGISTERS, "B", "all", QUICK)
    check_program(program, decomp, "all", input_register="B")
    assert execute(program, "B")["D"] is not None


def test_zero_output_uses_res():
    b = DagBuilder()
    x = b.shift(b.input, 1, 0)
    decomp = b.build({"B": b.sub(x, x)})
    program = generate(decomp, limits=QUICK)
    check_program(program, decomp, "all")
    assert [i.mnemonic for i in program] == ["res"]


def test_bad_arguments():
    with pytest.raises(ValueError, match="op set"):
        generate(BENCH["box3"](), op_set="fancy")
    with pytest.raises(ValueError, match="input register"):
        generate(BENCH["box3"](), registers=("B", "C"))


def test_wall_clock_cap_still_returns_a_verified_program():
    decomp = BENCH["gauss5"]()
    program = generate(decomp, limits=Limits(seconds=0.01))
    check_program(program, decomp, "all")


def test_a_self_difference_folded_into_a_sum_reuses_a_wanted_value():
    """(s_E + s_S - 2)·A next to B = (s_N - 1)·A: C = (s_NE·A - B) read from the south,
    minus A, i.e. `sub2x(D, A, north, east, B); subx(C, D, south, A)` (two instructions, not
    three). The operand s_NE·A - B is farther from home than C's terms, so only a move that
    looks one step ahead to the wanted B offers it (the optimal Laplacian's shape)."""
    b = DagBuilder()
    a = b.input
    north_diff = b.sub(b.shift(a, 0, 1), a)
    pair = b.sub(b.add(b.shift(a, 1, 0), b.shift(a, 0, -1)), b.add(a, a))
    decomp = b.build({"B": north_diff, "C": pair})
    program = generate(decomp, REGISTERS, "A", "all")
    verify_exact(program, decomp.output_kernels(), "A")
    assert len(program) == 3


def test_the_centre_difference_laplacian_compiles_to_five():
    """N + E + S + W - 4C written flat: (N - C) + (W - C) + ((E - C) + (S - C)), the last
    folded into one `sub2x` on the wanted N - C and one `subx` (the proven optimum, 5; the
    first two rankings alone find 6)."""
    b = DagBuilder()
    a = b.input
    parts = [b.sub(b.shift(a, dx, dy), a) for dx, dy in ((0, 1), (1, 0), (0, -1), (-1, 0))]
    decomp = b.build({"A": b.add(b.add(parts[0], parts[1]), b.add(parts[2], parts[3]))})
    program = generate(decomp, REGISTERS, "A", "all")
    verify_exact(program, decomp.output_kernels(), "A")
    assert len(program) == 5
