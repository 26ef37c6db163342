"""The exact search: shortest programs of tiny kernels, honest bounds, verified output only."""

from __future__ import annotations

import pytest

from kalg.algebra.kernel import Kernel
from kalg.diagnostics import VerificationError
from kalg.targets.scamp5.exact import exhaustive
from kalg.targets.scamp5.exact.exhaustive import _instructions, shortest_program
from kalg.targets.scamp5.machine.symbolic import execute, initial_state, step

SOBEL = Kernel.from_rows([[1, 0, -1], [2, 0, -2], [1, 0, -1]])


@pytest.mark.parametrize(("rows", "length"), [
    ([[1]], 0),                 # the input is already the kernel
    ([[0, 0, 1]], 1),           # one movx
    ([[1, 0, 1]], 2),           # mov2x then addx (the code generator's doctest)
    ([[1, 1, 1]], 3),
    ([[1, 2, 1]], 3),
])
def test_finds_the_known_shortest_program_of_tiny_kernels(rows, length):
    kernel = Kernel.from_rows(rows)
    outcome = shortest_program(kernel, nodes=50_000)
    assert outcome.proven and outcome.stopped is None
    assert len(outcome.program) == length == outcome.lower
    assert execute(outcome.program)["A"].same_values(kernel)


def test_output_register_other_than_the_input_is_honoured():
    outcome = shortest_program(Kernel.from_rows([[1, 2, 1]]), output="D", nodes=50_000)
    assert outcome.proven
    assert execute(outcome.program)["D"].same_values(Kernel.from_rows([[1, 2, 1]]))


def _two_instruction_program_exists(kernel, registers):
    """Brute force over every pair of instructions (op set all) reading no undefined register:
    does one leave `kernel` in A?"""
    templates = [t.instr for t in _instructions("all", registers)]
    start = initial_state("A")
    for first in templates:
        if any(start[r] is None for r in first.reads()):
            continue
        middle = step(start, first)
        for second in templates:
            if any(middle[r] is None for r in second.reads()):
                continue
            got = step(middle, second)["A"]
            if got is not None and got.same_values(kernel):
                return True
    return False


def test_the_proven_length_is_a_true_lower_bound_by_brute_force():
    """[1 2 1] on three registers: the search proves 3; no program of 2 exists."""
    kernel = Kernel.from_rows([[1, 2, 1]])
    registers = ("A", "B", "C")
    outcome = shortest_program(kernel, registers=registers, nodes=50_000)
    assert outcome.proven and outcome.lower == 3
    assert not _two_instruction_program_exists(kernel, registers)
    assert _two_instruction_program_exists(Kernel.from_rows([[1, 0, 1]]), registers)


def test_a_bounded_search_claims_only_what_it_searched():
    outcome = shortest_program(SOBEL, nodes=3_000)
    assert outcome.program is None and outcome.stopped == "nodes"
    assert not outcome.proven and 1 <= outcome.lower <= 5  # Cain's sobel has 5
    assert "proven shortest" not in outcome.describe("all", 6)
    assert f"no program shorter than {outcome.lower}" in outcome.describe("all", 6)


def test_more_registers_never_give_a_longer_proven_program():
    kernel = Kernel.from_rows([[1, 2, 1]])
    few = shortest_program(kernel, registers=("A", "B", "C"), nodes=50_000)
    many = shortest_program(kernel, nodes=50_000)
    assert few.proven and many.proven and len(many.program) <= len(few.program)


def test_never_returns_an_unverified_program(monkeypatch):
    """A program that fails kalg's verifier is an error, never a result."""
    def wrong(program, kernel, out, inp, op_set, registers):
        raise VerificationError("simulated mismatch")
    monkeypatch.setattr(exhaustive, "verify", wrong)
    with pytest.raises(VerificationError):
        shortest_program(Kernel.from_rows([[1, 0, 1]]), nodes=50_000)
