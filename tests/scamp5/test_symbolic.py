"""Exact symbolic execution: the kernels registers hold, and what `verify_exact` reports."""

from __future__ import annotations

from fractions import Fraction

import pytest

from kalg.algebra.kernel import Kernel
from kalg.diagnostics import VerificationError
from kalg.targets.scamp5.machine.isa import NEWS, Add, Dir, Div, Diva, Movx, Sub
from kalg.targets.scamp5.machine.symbolic import execute, initial_state, verify_exact


def test_registers_hold_the_kernels_they_compute() -> None:
    state = execute([Movx("B", "A", Dir.EAST), Sub("C", "B", "A"), Diva("C", "D", "E")])
    assert state["B"] == Kernel.unit(1, 0)
    assert state["C"] == Kernel.of({(0, 0): Fraction(-1, 2), (1, 0): Fraction(1, 2)})
    assert state["D"] == state["E"] == Kernel.of({(0, 0): Fraction(1, 2), (1, 0): Fraction(-1, 2)})
    assert state[NEWS] == state["D"]
    assert state["F"] is None


def test_three_argument_div_destroys_its_source() -> None:
    state = execute([Div("B", "C", "A"), Add("D", "A", "B")])
    assert state["B"] == Kernel.unit(value=Fraction(1, 2))
    assert state["A"] is None and state["D"] is None


def test_undefined_output_is_reported() -> None:
    with pytest.raises(VerificationError, match=r"register C holds no defined value; expected"):
        verify_exact([Movx("B", "A", Dir.EAST)], {"C": Kernel.unit()})


def test_input_register_is_checked() -> None:
    assert initial_state("C")["C"] == Kernel.unit()
    assert initial_state("G")["G"] == Kernel.unit()  # the simulated wider file (scamp5_wide)
    with pytest.raises(ValueError, match="input register"):
        initial_state("NEWS")
