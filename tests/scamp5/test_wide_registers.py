"""The simulated wider register file (target scamp5_wide): registers G..Z in both simulators.

Real SCAMP-5 programs name A..F only (the target `scamp5` and the program-text parser stay
strict); kalg's simulators also run programs for a hypothetical wider file, for studies.
"""

from __future__ import annotations

import numpy as np
import pytest

from kalg.algebra.kernel import Kernel
from kalg.cli import main
from kalg.diagnostics import ProgramError
from kalg.targets.scamp5.machine.isa import SIMULATED_REGISTERS, Add, Dir, Movx
from kalg.targets.scamp5.machine.simulator import (
    ALL_REGISTERS,
    footprint,
    register_file,
    simulate,
    verify_numeric,
)
from kalg.targets.scamp5.machine.symbolic import execute, verify_exact
from kalg.targets.scamp5.machine.text import parse_program

WIDE = [Movx("G", "A", Dir.EAST), Add("R", "A", "G")]
"""R := A + A(east), through G."""
WANT = Kernel.from_rows([[0, 1, 1]])  # centred: the origin and its east neighbour


def test_program_naming_register_g_simulates_without_keyerror():
    # Regression: every program using a seventh register crashed the numeric verifier with
    # KeyError 'G' after code generation had succeeded.
    image = np.random.default_rng(1).uniform(-1, 1, (12, 12))
    result = simulate(WIDE, image)
    assert set(result) == {*ALL_REGISTERS, "G", "R"}
    assert np.allclose(result["R"][:, :-1], image[:, :-1] + image[:, 1:])
    assert np.isnan(result["B"]).all()
    verify_numeric(WIDE, {"R": WANT}, image)
    assert footprint(WIDE).east == 1


def test_symbolic_execution_knows_registers_beyond_f():
    state = execute(WIDE)
    assert state["G"] == Kernel.unit().shift(1, 0)
    verify_exact(WIDE, {"R": WANT})


def test_input_in_a_wide_register():
    image = np.arange(16.0).reshape(4, 4)
    result = simulate([Movx("B", "H", Dir.EAST)], image, input_register="H")
    assert np.array_equal(result["B"][:, :-1], image[:, 1:])


def test_real_programs_report_only_a_to_f_and_news():
    assert register_file([Movx("B", "A", Dir.EAST)]) == ALL_REGISTERS


def test_wide_target_compiles_and_says_it_is_simulated(capsys, tmp_path):
    source = tmp_path / "wide.kalg"
    source.write_text("target scamp5_wide { registers: A..R, input: A, ops: all }\n"
                      "filter f = [A: [1 2 1] / 4, G: [1 0 -1]]\n")
    code = main(["optimize", str(source), "--stats"])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert "SIMULATED register file" in out and "SIMULATED register file" in err
    assert "registers A B C D E F G H I J K L M N O P Q R" in out


def test_real_target_still_rejects_register_g_and_names_the_opt_in(capsys, tmp_path):
    source = tmp_path / "wide.kalg"
    source.write_text("target scamp5 { registers: A..H }\nkernel k = [1 2 1] / 4\n")
    code = main(["optimize", str(source)])
    out, err = capsys.readouterr()
    assert code == 1 and out == ""
    assert "G, H" in err and "scamp5_wide" in err and "Traceback" not in err


WIDE_TEXT = "scamp5_kernel_begin();\nmovx(G, A, east);\nadd(R, A, G);\nscamp5_kernel_end();\n"


def test_program_text_names_g_only_with_the_simulated_register_file():
    assert parse_program(WIDE_TEXT, registers=SIMULATED_REGISTERS) == WIDE
    with pytest.raises(ProgramError, match="does not exist on SCAMP-5") as err:
        parse_program(WIDE_TEXT)
    assert "--simulated-registers" in err.value.hint


def test_simulate_command_checks_a_wide_program_with_the_flag(tmp_path, capsys):
    # Regression: `kalg simulate` said "unknown register 'G'" for every scamp5_wide program.
    program, kernel = tmp_path / "w.scamp5", tmp_path / "w.kalg"
    program.write_text(WIDE_TEXT)
    kernel.write_text("target scamp5_wide { registers: A..R, input: A, ops: all }\n"
                      "filter f = [R: [0 1 1]]\n")
    argv = ["simulate", str(program), "--kernel", str(kernel), "--size", "16"]
    assert main([*argv, "--simulated-registers"]) == 0
    assert "exact    ok" in capsys.readouterr().out
    assert main(argv) == 1
    assert "--simulated-registers" in capsys.readouterr().err
