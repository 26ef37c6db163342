"""Filters as a constant-matrix multiplication over the input divided once (`codegen.matrix`):
programs for every filter of up to five outputs on six registers, in both op sets."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from kalg.algebra.kernel import Kernel
from kalg.targets.scamp5.codegen import matrix_filter
from kalg.targets.scamp5.codegen.matrix import matrix_program
from kalg.targets.scamp5.machine.isa import OP_SETS, SIMULATED_REGISTERS
from kalg.targets.scamp5.machine.simulator import verify_numeric
from kalg.targets.scamp5.machine.symbolic import verify_exact

SIX = ("A", "B", "C", "D", "E", "F")


def random_filter(outputs: int, seed: int, registers=SIX) -> dict[str, Kernel]:
    """`outputs` random 3x3 kernels of integers 0..8 over 8 (none all zero), in A, B, ..."""
    rng = np.random.default_rng(seed)
    kernels = {}
    while len(kernels) < outputs:
        weights = rng.integers(0, 9, size=(3, 3))
        if weights.any():
            kernels[registers[len(kernels)]] = Kernel.from_rows(weights.tolist()).scale(
                Fraction(1, 8))
    return kernels


def check(program, outputs, op_set, registers=SIX):
    verify_exact(program, outputs, "A")
    image = np.random.default_rng(1).uniform(-1, 1, (24, 24))
    verify_numeric(program, outputs, image, "A")
    for instr in program:
        assert instr.violation() is None, instr
        assert type(instr) in OP_SETS[op_set], instr
        assert set(instr.registers()) <= set(registers), instr


@pytest.mark.parametrize("op_set", ["all", "basic"])
@pytest.mark.parametrize("outputs", [4, 5])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_four_and_five_random_outputs_fit_six_registers(outputs, seed, op_set):
    # Regression: "no program for the 4 output(s) fits in 6 register(s)" for random 3x3
    # filters (/8) with op set all; with the input divided once into a shared s, every output
    # is one accumulator over s and a shrinking pool of its multiples.
    filt = random_filter(outputs, seed)
    program = matrix_filter(filt, SIX, "A", op_set)
    assert program is not None
    check(program, filt, op_set)


def test_sharing_the_divided_input_beats_separate_programs_with_many_registers():
    # Ten outputs on 18 (simulated) registers: the divisions are paid once and the multiples of
    # s are shared, so the program is far shorter than ten separate ones (each >= 8 here).
    registers = SIMULATED_REGISTERS[:18]
    filt = random_filter(10, 0, registers)
    program = matrix_filter(filt, registers, "A", "all")
    check(program, filt, "all", registers)
    assert len(program) <= 85


def test_signed_and_integer_kernels():
    sobel = Kernel.from_rows([[1, 0, -1], [2, 0, -2], [1, 0, -1]])
    outputs = {"A": sobel, "B": sobel.transpose(), "C": Kernel.from_rows([[0, 0, 0], [0, 0, 0],
                                                                         [0, 0, 0]])}
    for op_set in ("all", "basic"):
        program = matrix_filter(outputs, SIX, "A", op_set)
        check(program, outputs, op_set)


def test_non_dyadic_kernels_get_no_matrix_program():
    third = Kernel.from_rows([[1, 1, 1]]).scale(Fraction(1, 3))
    assert matrix_filter({"A": third}, SIX, "A", "all") is None


def test_deterministic():
    filt = random_filter(5, 4)
    first = [str(i) for i in matrix_filter(filt, SIX, "A", "all")]
    assert first == [str(i) for i in matrix_filter(filt, SIX, "A", "all")]


@pytest.mark.parametrize("outputs", [2, 3])
def test_dropping_div_copies_never_lengthens_and_shortens_tight_filters(outputs):
    # Follow-up to issue 12: on six registers the halvings ran out of room for pools that keep
    # div's unwanted copies, so those pools were given up and the program was longer (a random
    # 2-output filter: 26 instead of 22). Dropping the copies only where the build would fail
    # must never lengthen a program and must shorten some.
    lengths = []
    for seed in (100, 101, 102):
        filt = random_filter(outputs, seed)
        parts = {reg: {"A": k} for reg, k in filt.items()}
        kept = matrix_program(parts, SIX, ("A",), "all", drop_copies=False)
        program = matrix_filter(filt, SIX, "A", "all")
        check(program, filt, "all")
        lengths.append((len(program), len(kept)))
    assert all(new <= old for new, old in lengths), lengths
    assert any(new < old for new, old in lengths), lengths


def test_five_random_outputs_are_not_longer_than_their_kernels_compiled_alone():
    # Regression: sample 5 of docs/scaling.md's study (seed 5, five outputs on six registers)
    # took 64 instructions against 63 for its kernels each compiled alone with the whole
    # register file (13 + 9 + 14 + 14 + 13, `kalg optimize` of each, measured): a walk added
    # one pool value per instruction where the 3-operand add takes two.
    outputs = random_filter(5, 5)
    program = matrix_filter(outputs, SIX, "A", "all")
    check(program, outputs, "all")
    assert len(program) <= 63
    assert any(type(i).__name__ == "Add3" for i in program)


def test_a_walk_given_a_start_begins_there_and_visits_every_offset_once():
    """`matrix._walk` (exact up to `MAX_EXACT_PATH` offsets, greedy beyond): a walk given
    one of its offsets as `start` begins there (the output register already holds that
    value: `codegen.filling`), and every walk visits every offset once."""
    from kalg.targets.scamp5.codegen import matrix

    rng = np.random.default_rng(7)
    for count in (1, 3, 6, matrix.MAX_EXACT_PATH + 2):
        places = rng.choice(81, size=count, replace=False)
        offsets = [(int(p) // 9 - 4, int(p) % 9 - 4) for p in places]
        atoms = {d: [("B", bool(rng.integers(2)))] for d in offsets}
        for fused in (True, False):
            for start in offsets[:2]:
                path = matrix._walk(atoms, atoms, fused, start)
                assert path[0] == start and sorted(path) == sorted(offsets)
            for start in (None, (9, 9)):
                assert sorted(matrix._walk(atoms, atoms, fused, start)) == sorted(offsets)
