"""What the user wrote reaches the e-graph (issue 11): a kernel written as algebra and the same
kernel written as a matrix compile to programs of the same length, never longer than the
expression compiled as written (its structure applied directly, no search)."""

from __future__ import annotations

from pathlib import Path

import pytest

from kalg import frontend
from kalg.settings import Deadline
from kalg.targets.scamp5 import portfolio
from kalg.targets.scamp5.candidates import search_options
from kalg.targets.scamp5.machine.isa import REGISTERS
from kalg.targets.scamp5.optimize import optimize
from kalg.targets.scamp5.pipeline import Settings, compile_file

PAIRS = Path(__file__).resolve().parent / "data" / "algebra"


def _as_written_length(path: Path) -> int:
    definition = frontend.load_file(path).definition()
    optimized = optimize(definition.outputs, search_options("all", Settings(), Deadline(None)),
                         definition.structure)
    assert optimized.as_written is not None, "the algebra file has no written structure"
    candidates = {ops: {"as written": optimized.as_written} for ops in ("basic", "all")}
    budget = portfolio.Budget(REGISTERS, "A", "all", ("A",), REGISTERS)
    return len(portfolio.best_program(candidates, budget).program)


@pytest.mark.parametrize("name", ["unsharp3", "dog", "cross2", "binomial3"])
def test_algebra_and_matrix_compile_alike_and_never_longer_than_as_written(name):
    algebra = compile_file(PAIRS / f"{name}.algebra.kalg", Settings(ops="all"))
    matrix = compile_file(PAIRS / f"{name}.matrix.kalg", Settings(ops="all"))
    assert len(algebra.program) == len(matrix.program)
    assert len(algebra.program) <= _as_written_length(PAIRS / f"{name}.algebra.kalg")
