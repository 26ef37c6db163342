"""Filters and input channels as a new user meets them (issue 12, items 1, 2 and 4, on inputs
no other file of the project holds): one regression test per symptom found.

Every test compiles small filters only, so the file stays within seconds.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import kalg
from cli_run import run
from kalg.diagnostics import KalgError, ProgramMismatchError
from kalg.frontend import load_text
from kalg.targets.scamp5.machine.isa import Res
from kalg.targets.scamp5.machine.simulator import verify_numeric_channels
from kalg.targets.scamp5.machine.symbolic import verify_exact, verify_exact_channels

TWO = "target scamp5 { registers: A..F, input: A B }\n"
THREE = "target scamp5 { registers: A..F, input: A B C }\n"


def kalg_file(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "f.kalg"
    path.write_text(text, encoding="utf-8")
    return path


def located_error(capsys, tmp_path, text: str, *argv: str) -> tuple[int, str]:
    path = kalg_file(tmp_path, text)
    code, _, err = run(capsys, "optimize", path, *argv)
    assert "Traceback" not in err
    return code, err.replace(str(path), "f.kalg")


# ----------------------------------------------------------------------------- the language
def test_an_input_as_a_divisor_is_a_located_error_not_a_traceback(capsys, tmp_path):
    # `C: 2 / A` ended in "AttributeError: 'Channels' object has no attribute 'domain'"
    code, err = located_error(capsys, tmp_path, TWO + "filter f = [C: 2 / A]\n")
    assert code == 1
    assert err.startswith("f.kalg:2:18: error: a divisor must be a number, not a value of "
                          "the input(s) A")


def test_an_input_as_a_shift_offset_is_a_located_error_not_a_traceback(capsys, tmp_path):
    code, err = located_error(capsys, tmp_path, TWO + "filter f = [C: shift(A, B, 0)]\n")
    assert code == 1 and err.startswith("f.kalg:2:25: error: an offset must be a number")


@pytest.mark.parametrize("name", ["D", "G"])
def test_a_register_that_is_no_input_says_which_inputs_there_are(capsys, tmp_path, name):
    # said "unknown name 'D'", hint "known kernels here: x, y": not that D is a register but
    # not one of the inputs
    code, err = located_error(capsys, tmp_path,
                              TWO + f"filter f = [C: [1 2 1] * A + [1 1 1] * {name}]\n")
    assert code == 1
    assert err.startswith(f"f.kalg:2:40: error: '{name}' is not an input of the target (its "
                          "inputs are A, B")
    assert "inputs: A, B" in err


def test_a_misspelt_kernel_in_a_channel_filter_is_still_suggested(capsys, tmp_path):
    code, err = located_error(capsys, tmp_path, TWO + "kernel smooth = [1 2 1]\n"
                              "filter f = [C: smoth * A]\n")
    assert code == 1 and "unknown name 'smoth'" in err and "did you mean 'smooth'?" in err


def test_a_kernel_named_like_an_input_is_refused_at_its_name(capsys, tmp_path):
    # `kernel A = ...` then `C: A * A` said "two inputs cannot be composed" at the '*'
    code, err = located_error(capsys, tmp_path, TWO + "kernel A = [1 2 1]\n"
                              "filter f = [C: A * A]\n")
    assert code == 1
    assert err.startswith("f.kalg:2:8: error: 'A' names an input of the target (input: A B)")


def test_an_input_in_a_kernel_definition_says_inputs_belong_to_filters(capsys, tmp_path):
    # said "unknown name 'A'" though A is the target's input
    code, err = located_error(capsys, tmp_path, TWO + "kernel k = [1 2 1] * A\n")
    assert code == 1
    assert err.startswith("f.kalg:2:22: error: 'A' is an input: inputs are named only in a "
                          "filter's outputs")


@pytest.mark.parametrize(("text", "where", "hint"), [
    ("filter f = [C: A + B] with semiring minplus\n", "f.kalg:2:28:", "remove 'semiring"),
    ("semiring maxplus\nfilter f = [C: A + B]\n", "f.kalg:3:8:", "'with semiring real'"),
])
def test_a_channel_filter_in_another_semiring_is_refused_not_compiled_as_real(
        capsys, tmp_path, text, where, hint):
    # `with semiring minplus` was ignored: `C: A + B` compiled to add(C, A, B), a real sum
    code, err = located_error(capsys, tmp_path, TWO + text)
    assert code == 1
    assert err.startswith(f"{where} error: filter 'f' reads several inputs") and hint in err


# ----------------------------------------------------------------------------- zero outputs
def test_a_zero_output_of_a_channel_filter_is_cleared_not_a_failed_verification(capsys,
                                                                                 tmp_path):
    # `D: A - A` ended in "verification failed (this is a kalg bug)", exit 3: D was used as
    # scratch and never cleared
    path = kalg_file(tmp_path, TWO + "filter f = [C: [1 2 1] * A, D: A - A, E: 0 * B]\n")
    code, _, err = run(capsys, "optimize", path)
    assert code == 0 and "output(s) D, E zero on every input" in err
    result = kalg.compile(path)
    assert result.program[-2:] == [Res("D"), Res("E")]
    verify_exact_channels(result.program, result.kernels, ("A", "B"))


def test_a_channel_output_approximated_to_zero_says_the_approximation_made_it_zero(capsys,
                                                                                  tmp_path):
    # cleared with `res` like an output written as zero, though the user wrote weights
    code, err = located_error(capsys, tmp_path, TWO + "approx depth 4\n"
                              "filter f = [C: A - B, D: 0.001 * A + 0.002 * B]\n")
    assert code == 1
    assert err.startswith("f.kalg:3:1: error: 'f' output D approximated at depth 4 is zero")
    assert "raise the approximation's depth" in err


def test_a_zero_output_of_a_filter_compiles_to_clearing_its_register(capsys, tmp_path):
    # "'f' output C is the zero kernel: there is nothing to compute": a layer may well have
    # an output of zero weights; a zero kernel alone stays an error (test_user_rough_edges)
    path = kalg_file(tmp_path, "filter f = [B: [1 2 1] / 4, C: [1 1 1] - [1 1 1]]\n")
    code, _, err = run(capsys, "optimize", path)
    assert code == 0 and "output C is zero: the program clears its register (res)" in err
    alone = kalg.compile("filter f = [B: [1 2 1] / 4]")
    result = kalg.compile(path)
    assert result.program == [*alone.program, Res("C")]
    verify_exact(result.program, result.kernels, "A")


def test_a_filter_of_zero_outputs_only_clears_them(capsys):
    result = kalg.compile("filter f = [A: 0, B: 0 * x]", ops="basic")
    assert result.program == [Res("A"), Res("B")] and result.verified


# ----------------------------------------------------------------------------- the budget
def test_input_on_the_command_line_of_a_channel_filter_is_a_usage_error(capsys, tmp_path):
    # `--input D` was silently ignored: the program still read A and B
    code, err = located_error(capsys, tmp_path, TWO + "filter f = [C: A - B]\n",
                              "--input", "D")
    assert code == 2
    assert "reads the inputs A B (the target block's 'input:'), so --input D" in err


def test_a_budget_without_an_output_of_a_channel_filter_is_a_usage_error(capsys, tmp_path):
    # exit 1 and "register(s) E are not in the register budget A B C D of target scamp5"
    code, err = located_error(capsys, tmp_path, THREE + "filter f = [D: A - B, E: B - C]\n",
                              "--registers", "A,B,C,D")
    assert code == 2
    assert "the register budget A B C D must hold every input and output: E is an output" in err
    assert "add them to --registers" in err


def test_no_program_for_a_channel_filter_is_located_at_the_filter(capsys, tmp_path):
    code, err = located_error(capsys, tmp_path,
                              "target scamp5 { registers: A..D, input: A B }\n"
                              "filter f = [C: [1 2 1] * A, D: [1 2 1] * B, A: A + B, B: A - B]\n")
    # four outputs and two inputs on four registers: more than one program holds (a layer's
    # split is offered), located at the filter
    assert code == 1 and err.startswith("f.kalg:2:1: error: 'f' has 4 outputs, more than one "
                                        "program holds")


def test_op_set_all_prints_no_divq_on_a_channel_filter_even_where_basic_is_shorter():
    # Basic's staged program (34 instructions on A..E) halves with divq, which op set all does
    # not have; with three inputs and two outputs in five registers div has no scratch
    # register, so all's program is the flat matrix (183). A basic program was once printed as
    # op set all's. With a sixth register div has its scratch and all is the shorter.
    text = THREE + ("filter f = [\n"
                    "  D: [1 2 1; 2 4 2; 1 2 1] / 16 * A + [1 0 -1] / 2 * B - 3/4 * C,\n"
                    "  E: [0 1 0; 1 -4 1; 0 1 0] * B + C / 8,\n]\n")
    basic = kalg.compile(text, ops="basic", registers="A..E")
    for registers in ("A..E", "A..F"):
        full = kalg.compile(text, ops="all", registers=registers)
        assert full.verified and not any(i.mnemonic == "divq" for i in full.program)
    assert any(i.mnemonic == "divq" for i in basic.program)
    assert full.instructions <= basic.instructions


# ----------------------------------------------------------------------------- Python API
MOTION = TWO + ("kernel smooth = [1 2 1; 2 4 2; 1 2 1] / 16\n"
                "filter motion = [C: smooth * A - smooth * B, D: (A + B) / 2]\n")


@pytest.fixture(scope="module")
def motion() -> kalg.CompileResult:
    return kalg.compile(MOTION)


def test_kalg_simulate_checks_a_channel_filter_instead_of_passing_vacuously(motion):
    # kalg.simulate(program, channel_filter, image) checked nothing (the filter's `outputs`
    # are empty) and returned max_abs_error {} for any program
    result, other = motion, "add(C, A, B);\nsub(D, A, B);\n"
    image = np.random.default_rng(1).uniform(-1, 1, (20, 20, 2))
    with pytest.raises(ProgramMismatchError, match="register C differs"):
        kalg.simulate(other, MOTION, image)
    with pytest.raises(KalgError, match="reads 2 input channels"):
        kalg.simulate(result, MOTION, image[..., 0])


@pytest.mark.parametrize("form", ["array", "mapping", "planes", "random"])
def test_kalg_simulate_runs_a_channel_filter_on_an_image_per_input(motion, form):
    result = motion
    image = np.random.default_rng(1).uniform(-1, 1, (20, 20, 2))
    given = {"array": image, "mapping": {"A": image[..., 0], "B": image[..., 1]},
             "planes": [image[..., 0], image[..., 1]], "random": None}[form]
    run = kalg.simulate(result, MOTION, given)
    assert run.inputs == ("A", "B") and sorted(run.outputs) == ["C", "D"]
    if form != "random":
        want = (image[..., 0] + image[..., 1]) / 2
        assert np.allclose(run.outputs["D"][1:-1, 1:-1], want[1:-1, 1:-1])
    assert max(run.max_abs_error.values()) < 1e-12


def test_a_channel_filters_compile_result_gives_its_kernels_per_input(motion):
    # CompileResult.kernels was {} for a filter over several inputs
    result = motion
    assert result.inputs == ("A", "B")
    module = load_text(MOTION, "m.kalg")
    assert result.kernels == module.definition().channels
    verify_numeric_channels(result.program, result.kernels,
                            {c: np.ones((24, 24)) for c in "AB"})


def test_a_one_input_check_refuses_a_channel_filter():
    from kalg.api import load_targets

    with pytest.raises(KalgError, match="reads several inputs"):
        load_targets(MOTION)
