"""Layers (issue 27, item 1): a filter with more outputs than registers compiles as a sequence of
programs read out in turn, or is refused with an error that says so and names the option.

The layers here are small (1x3 and 3x1 kernels on few registers), so the file stays within
seconds; the 8- and 16-filter examples are compiled by `scripts/layers_check.py` (docs/layers.md).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import kalg
from cli_run import run
from kalg.diagnostics import KalgError, UsageError
from kalg.frontend import load_text
from kalg.targets.scamp5.layers import plan_groups
from kalg.targets.scamp5.machine.isa import Res
from kalg.targets.scamp5.machine.simulator import simulate

FOUR = "filter four = [A: [1 2 1], B: [1 0 -1], C: [1; 2; 1], D: [1 1 1] / 2]\n"
"""Four outputs: on the registers A..D a program holds them all; on A..C it holds three."""

EIGHT = ("filter eight = [A: [1 2 1], B: [1 0 -1], C: [1; 2; 1], D: [1 1 1] / 2, "
         "E: [1 -2 1], F: [2 1 0], G: [1; -1; 0], H: [1 0 1] / 4]\n")


def kalg_file(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "layer.kalg"
    path.write_text(text, encoding="utf-8")
    return path


def replayed(result, image: np.ndarray) -> dict[str, np.ndarray]:
    """Each output as read out at its mark, from the whole sequence run on the simulator."""
    got = {}
    for readout in result.readouts:
        state = simulate(result.program[:readout.after], image, result.input_register)
        got |= {name: state[reg] for reg, name in readout.registers.items()}
    return got


# ----------------------------------------------------------------------------- refused
def test_eight_outputs_are_refused_with_the_split_option_not_register_g(capsys, tmp_path):
    code, _, err = run(capsys, "optimize", kalg_file(tmp_path, EIGHT))
    assert code == 1
    assert "8 outputs, more than one program holds: 6" in err
    assert "--split auto" in err and "'G'" not in err


def test_more_outputs_than_the_registers_given_is_a_usage_error_naming_split(capsys, tmp_path):
    code, _, err = run(capsys, "optimize", kalg_file(tmp_path, FOUR), "--registers", "A..C")
    assert code == 2 and "D is an output register of 'four'" in err
    assert "--split auto" in err and "Traceback" not in err


def test_a_split_larger_than_a_program_holds_is_a_usage_error():
    with pytest.raises(UsageError, match="at most 1 outputs"):
        kalg.compile(FOUR, registers="A..C", split=3)


def test_a_split_that_is_no_number_is_a_usage_error():
    with pytest.raises(UsageError, match="split must be"):
        kalg.compile(FOUR, split="half")


def test_a_split_in_the_target_block_other_than_auto_is_a_located_error():
    with pytest.raises(KalgError, match="split takes 'auto'"):
        load_text("target scamp5 { split: all }\n" + FOUR, "f.kalg")


# ----------------------------------------------------------------------------- compiled
@pytest.fixture(scope="module")
def four():
    """FOUR on the registers A..C: one output per program (a register for the input, one for
    its keeper), four programs."""
    return kalg.compile(FOUR, registers="A..C", split="auto")


def test_a_layer_compiles_as_programs_whose_readouts_hold_every_output(four):
    outputs = four.kernels
    read = [name for r in four.readouts for name in r.registers.values()]
    assert sorted(read) == sorted(outputs)  # every output read out once
    assert four.verified and len(four.readouts) == 4
    assert four.instructions == sum(r.instructions for r in four.readouts)
    image = np.random.default_rng(5).uniform(-1, 1, (24, 24))
    for name, value in replayed(four, image).items():
        want = outputs[name].apply(image)
        assert np.allclose(value[4:-4, 4:-4], want[4:-4, 4:-4])


def test_a_layer_keeps_its_input_for_the_programs_after_the_first(four):
    assert four.kept is not None  # a 1x3 kernel's program writes its input register
    assert str(four.program[0]) == "mov(C, A);"  # saved in the last register first
    assert four.readouts[-1].inputs == ("C",)  # the last program reads the keeper
    before_last = four.program[1:four.readouts[-2].after]
    assert "C" not in {r for i in before_last for r in i.writes()}


def test_the_program_text_marks_each_readout_and_what_each_program_writes(four):
    lines = four.text.splitlines()
    marks = [line for line in lines if line.startswith("// read out ")]
    assert len(marks) == 4 and all("(register = output)" in m for m in marks)
    assert four.text.count("scamp5_kernel_begin();") == 4
    assert sum(line.startswith("// writes: ") for line in lines) == 4
    assert "overwrites the input: A by instruction" in four.text


def test_optimize_json_reports_the_layer(capsys, tmp_path):
    path = kalg_file(tmp_path, "target scamp5 { registers: A..C, split: auto }\n" + FOUR)
    code, out, _ = run(capsys, "optimize", path, "--json")
    assert code == 0
    layer = json.loads(out)["layer"]
    assert sorted(n for p in layer["programs"] for n in p["outputs"].values()) == list("ABCD")
    assert layer["instructions"] == json.loads(out)["instructions"]


def test_simulate_checks_a_layers_text_readout_by_readout_not_kernel_begin_error(
        four, capsys, tmp_path):
    # a layer's text holds several programs: simulate used to stop at the second
    # scamp5_kernel_begin() ("must come once")
    kernel = kalg_file(tmp_path, FOUR)
    program = tmp_path / "four.scamp5"
    program.write_text(four.text, encoding="utf-8")
    code, out, err = run(capsys, "simulate", program, "--kernel", kernel, "--size", "24")
    assert code == 0, err
    assert out.count("exact ok") == 4 and "a layer of 4 programs" in out
    code, out, _ = run(capsys, "simulate", program, "--kernel", kernel, "--size", "24", "--json")
    assert json.loads(out)["verified"] and sorted(json.loads(out)["max_abs_error"]) == list("ABCD")


def test_simulate_of_a_layer_whose_readout_names_the_wrong_output_fails(four, capsys,
                                                                         tmp_path):
    kernel = kalg_file(tmp_path, FOUR)
    mark = next(line for line in four.text.splitlines() if line.startswith("// read out 1 "))
    _, name = mark.split(": ")[1].split(" = ")
    other = next(o for o in "ABCD" if o != name)
    program = tmp_path / "swapped.scamp5"
    program.write_text(four.text.replace(mark, mark.replace(f"= {name}", f"= {other}")))
    code, _, err = run(capsys, "simulate", program, "--kernel", kernel, "--size", "24")
    assert code == 1 and "error" in err
    dropped = tmp_path / "dropped.scamp5"  # the last readout's comment gone: never read out
    last = [line for line in four.text.splitlines() if line.startswith("// read out ")][-1]
    dropped.write_text(four.text.replace(last, "// (no readout)"))
    code, _, err = run(capsys, "simulate", dropped, "--kernel", kernel, "--size", "24")
    assert code == 1 and "never read out" in err


def test_a_layer_over_two_inputs_reads_out_every_output(capsys, tmp_path):
    text = ("target scamp5 { registers: A..F, input: A B }\n"
            "filter two = [C: [1 1 0] * A + [1] * B, D: [1 -1 0] * A, E: [1; 1; 0] * B, "
            "F: [1] * A - [2] * B, G: [1 0 1] * A]\n")
    result = kalg.compile(text, split="auto")
    assert len(result.readouts) == 3  # two outputs per program: two inputs, two keepers
    outputs = result.kernels
    rng = np.random.default_rng(1)
    images = {c: rng.uniform(-1, 1, (20, 20)) for c in ("A", "B")}
    for readout in result.readouts:
        prefix = result.program[:readout.after]
        for reg, name in readout.registers.items():
            got = sum(simulate([Res("B" if c == "A" else "A"), *prefix], images[c], c)[reg]
                      for c in ("A", "B"))
            want = sum(k.apply(images[c]) for c, k in outputs[name].items())
            assert np.allclose(got[3:-3, 3:-3], want[3:-3, 3:-3])
    program = tmp_path / "two.scamp5"  # and kalg simulate replays it the same way
    program.write_text(result.text, encoding="utf-8")
    code, out, err = run(capsys, "simulate", program, "--kernel", kalg_file(tmp_path, text),
                         "--size", "20")
    assert code == 0 and out.count("exact ok") == 3, err


# ----------------------------------------------------------------------------- the split
def test_the_split_groups_outputs_that_share_multiples():
    rows = {name: {("A", (x, 0)): c for x, c in enumerate(coefs)}
            for name, coefs in {"P": (3, 5), "Q": (1, 2), "R": (3, 5), "S": (4, 1)}.items()}
    assert plan_groups(rows, 2) == [("P", "R"), ("Q", "S")]


def test_the_split_is_balanced_and_deterministic():
    rng = np.random.default_rng(3)
    rows = {f"o{i:02d}": {("A", (x, y)): int(rng.integers(-8, 9)) for x in (-1, 0, 1)
                          for y in (-1, 0, 1)} for i in range(16)}
    groups = plan_groups(rows, 4)
    assert sorted(len(g) for g in groups) == [4, 4, 4, 4]
    assert groups == plan_groups(dict(reversed(rows.items())), 4)
