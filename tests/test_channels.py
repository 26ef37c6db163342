"""Filters over several input channels: `input: A B` in the target block, outputs written as
sums of kernels applied to named inputs, compiled, verified on every input and simulated."""

from __future__ import annotations

import json
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

from kalg.algebra.kernel import Kernel
from kalg.cli import main
from kalg.diagnostics import KalgSemanticError
from kalg.frontend import load_file, load_text
from kalg.targets.scamp5.machine.isa import Add, Sub
from kalg.targets.scamp5.machine.simulator import verify_numeric_channels
from kalg.targets.scamp5.machine.symbolic import verify_exact_channels
from kalg.targets.scamp5.pipeline import Settings, compile_file

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
HEAD = "target scamp5 { registers: A..F, input: A B }\n"


def test_an_output_is_a_kernel_per_input():
    module = load_text(HEAD + "kernel k = [1 2 1] / 4\n"
                       "filter f = [C: k * A - shift(B, 1, 0), D: (A + B) * 3]\n", "f.kalg")
    channels = module.definition().channels
    assert module.target.inputs == ("A", "B")
    row = Kernel.from_rows([[1, 2, 1]]).scale(Fraction(1, 4))
    assert channels["C"] == {"A": row, "B": -Kernel.unit(1, 0)}
    assert channels["D"] == {"A": Kernel.unit().scale(3), "B": Kernel.unit().scale(3)}


@pytest.mark.parametrize(("text", "message"), [
    ("filter f = [C: [1 2 1] + A]", "names no input"),
    ("filter f = [C: [1 2 1] / 4]", "names no input"),
    ("filter f = [C: A * B]", "cannot be composed"),
])
def test_terms_must_apply_a_kernel_to_one_input(text, message):
    with pytest.raises(KalgSemanticError, match=message):
        load_text(HEAD + text + "\n", "f.kalg")


@pytest.mark.parametrize("ops", ["all", "basic"])
def test_the_layer_example_compiles_and_verifies_on_every_input(ops):
    path = EXAMPLES / "cnn_layer.kalg"
    result = compile_file(path, Settings(ops=ops))
    channels = load_file(path).definition().channels
    verify_exact_channels(result.program, channels, ("A", "B"))
    rng = np.random.default_rng(5)
    images = {c: rng.uniform(-1, 1, (20, 20)) for c in "AB"}
    verify_numeric_channels(result.program, channels, images)
    assert result.stats["candidate"] == "shared matrix"


@pytest.mark.parametrize("ops", ["all", "basic"])
def test_both_frames_of_a_pair_each_output_on_its_own_mix(ops):
    # C = smooth * (A - B), D = sobel_x * (A + B) / 2: each output's mix, then its kernel
    # compiled on it, the inputs kept for the output after; far shorter than the matrix
    from kalg.targets.scamp5 import codegen
    path = EXAMPLES / "frame_pair.kalg"
    result = compile_file(path, Settings(ops=ops))
    channels = load_file(path).definition().channels
    verify_exact_channels(result.program, channels, ("A", "B"))
    assert result.stats["candidate"] == "each output's mix of the inputs, then its kernel on it"
    matrix = codegen.matrix_channels(channels, tuple("ABCDEF"), ("A", "B"), ops)
    assert len(result.program) < len(matrix)


def test_a_wrong_program_fails_on_the_input_it_gets_wrong():
    channels = {"C": {"A": Kernel.unit(), "B": -Kernel.unit()}}
    verify_exact_channels([Sub("C", "A", "B")], channels, ("A", "B"))
    with pytest.raises(Exception, match="input B"):
        verify_exact_channels([Add("C", "A", "B")], channels, ("A", "B"))


def test_kalg_simulate_checks_a_program_over_two_inputs(tmp_path, capsys):
    program = tmp_path / "layer.scamp5"
    assert main(["optimize", str(EXAMPLES / "cnn_layer.kalg"), "-o", str(program)]) == 0
    assert main(["simulate", str(program), "--kernel", str(EXAMPLES / "cnn_layer.kalg"),
                 "--size", "32"]) == 0
    out = capsys.readouterr().out
    assert "exact    ok" in out and "numeric  ok" in out
    wrong = tmp_path / "wrong.scamp5"
    wrong.write_text(program.read_text().replace("sub(", "add(", 1))
    # A program that does not compute the kernel is the user's mismatch: exit 1, both checks.
    assert main(["simulate", str(wrong), "--kernel", str(EXAMPLES / "cnn_layer.kalg"),
                 "--size", "32"]) == 1
    out = capsys.readouterr().out
    assert "exact    FAILED" in out and "numeric  FAILED" in out


def test_kalg_simulate_takes_an_image_of_the_filters_channels_and_json(tmp_path, capsys):
    # Regression (issue 11 audit): for a filter over several inputs `kalg simulate` refused
    # --image and --json ("checks random images only"); it now reads an HxWxC .npy (or a
    # colour image) as `kalg run` does, channel c the c-th input, and prints one JSON object
    program = tmp_path / "layer.scamp5"
    assert main(["optimize", str(EXAMPLES / "cnn_layer.kalg"), "-o", str(program)]) == 0
    np.save(tmp_path / "maps.npy", np.random.default_rng(2).uniform(-1, 1, (24, 20, 2)))
    capsys.readouterr()
    assert main(["simulate", str(program), "--kernel", str(EXAMPLES / "cnn_layer.kalg"),
                 "--image", str(tmp_path / "maps.npy"), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["verified"] and report["inputs"] == ["A", "B"]
    assert sorted(report["max_abs_error"]) == ["C", "D", "E"]
    np.save(tmp_path / "rgb.npy", np.zeros((8, 8, 3)))
    assert main(["simulate", str(program), "--kernel", str(EXAMPLES / "cnn_layer.kalg"),
                 "--image", str(tmp_path / "rgb.npy")]) == 1
    assert "give an HxWx2 array" in capsys.readouterr().err


APPROX = HEAD + ("approx depth 6 max_error 0.01\n"
                 "filter f = [C: [1 1 1] / 3 * A + [1 2 1] / 4 * B, D: A - B / 5]\n")


def test_non_dyadic_channel_kernels_are_approximated_under_an_approx_setting():
    definition = load_text(APPROX, "f.kalg").definition()
    exact, approximated = definition.exact_channels, definition.channels
    assert exact["C"]["A"] == Kernel.from_rows([[1, 1, 1]]).scale(Fraction(1, 3))
    for register, parts in approximated.items():
        depth, error = definition.approx_depth[register], definition.approx_error[register]
        assert 0 < error <= Fraction(1, 100) and depth <= 6
        for channel, kernel in parts.items():
            assert kernel.is_dyadic()  # one depth per output: each input divided once
            assert all(Fraction(c) * 2 ** depth == int(Fraction(c) * 2 ** depth)
                       for _, c in kernel.entries)
            diff = kernel - exact[register][channel]
            assert max(abs(Fraction(c)) for _, c in diff.entries) <= error
    assert approximated["C"]["B"] == exact["C"]["B"]  # dyadic kernels are kept as written


def test_an_approximated_channel_filter_compiles_and_reports_its_error(tmp_path):
    path = tmp_path / "f.kalg"
    path.write_text(APPROX)
    result = compile_file(path, Settings())
    definition = load_file(path).definition()
    verify_exact_channels(result.program, definition.channels, ("A", "B"))
    head = result.text.splitlines()
    notes = [line for line in head if line.startswith("// approximated output")]
    assert len(notes) == 2 and "* A" in notes[0] and "largest coefficient error" in notes[0]
    assert "not the kernel written" in notes[1]


def test_a_non_dyadic_channel_kernel_without_approx_is_a_located_error_for_scamp5(capsys):
    text = HEAD + "filter f = [C: [1 1 1] / 3 * A + B]\n"
    definition = load_text(text, "f.kalg").definition()  # the cpu target takes it exactly
    assert definition.channels["C"]["A"] == Kernel.from_rows([[1, 1, 1]]).scale(Fraction(1, 3))
    with pytest.raises(KalgSemanticError, match="output C on input A has the non-dyadic") as e:
        from kalg.targets.scamp5.pipeline import compile_text
        compile_text(text, "f.kalg", Settings())
    assert e.value.span.line == 2 and "approx" in (e.value.hint or "")


def test_the_cpu_takes_a_non_dyadic_channel_filter_exactly():
    from kalg.targets.cpu.plan import plan_channels
    definition = load_text(HEAD + "filter f = [C: [1 1 1] / 3 * A - [1 2] @ (0, 0) / 5 * B]\n",
                           "f.kalg").definition()
    plan = plan_channels(definition.channels, definition.inputs)
    rng = np.random.default_rng(0)
    a, b = rng.integers(-9, 10, (6, 7)), rng.integers(-9, 10, (6, 7))
    (got,) = plan.program.run([a, b], [plan.outputs["C"]])
    want = [[sum(Fraction(int(a[r, min(max(c + d, 0), 6)]), 3) for d in (-1, 0, 1))
             - Fraction(int(b[r, c]), 5) - Fraction(2 * int(b[r, min(c + 1, 6)]), 5)
             for c in range(7)] for r in range(6)]
    assert (got == np.array(want, dtype=object)).all()


def test_outputs_of_one_mix_of_the_inputs_compile_as_the_mix_then_the_filter():
    # colour_edges: both gradients read (A + 2B + C) / 4: the mix, then the e-graph's program
    # for the Sobel pair on it, far shorter than the constant-matrix program over 3 inputs
    from kalg.targets.scamp5 import codegen
    path = EXAMPLES / "colour_edges.kalg"
    result = compile_file(path, Settings())
    channels = load_file(path).definition().channels
    verify_exact_channels(result.program, channels, ("A", "B", "C"))
    assert "input in A B C" in result.text
    assert result.stats["candidate"] == "one mix of the inputs, then the filter on it"
    matrix = codegen.matrix_channels(channels, tuple("ABCDEF"), ("A", "B", "C"), "all")
    assert len(result.program) < len(matrix)


def test_common_mix_finds_the_mix_and_refuses_other_filters():
    from kalg.algebra.channels import common_mix
    k = Kernel.from_rows([[1, 2, 1]]).scale(Fraction(1, 4))
    mix, kernels = common_mix({"C": {"A": k.scale(3), "B": k.scale(-6)},
                               "D": {"A": Kernel.unit().scale(3), "B": Kernel.unit().scale(-6)}},
                              ("A", "B"))
    assert mix == {"A": 1, "B": -2} and kernels == {"C": k.scale(3), "D": Kernel.unit().scale(3)}
    assert common_mix({"C": {"A": k, "B": k}, "D": {"A": k, "B": -k}}, ("A", "B")) is None
    assert common_mix({"C": {"A": k, "B": k}, "D": {"A": k}}, ("A", "B")) is None
    # (A + 3B)/3 needs kernels over 3: not dyadic, no mix
    assert common_mix({"C": {"A": k.scale(Fraction(1, 3)), "B": k}}, ("A", "B")) is None


@pytest.mark.parametrize("seed", [1])
def test_a_random_filter_of_one_mix_is_verified_and_never_longer_than_the_matrix(seed):
    from kalg.targets.scamp5 import codegen
    from kalg.targets.scamp5.pipeline import compile_text
    rng = np.random.default_rng(seed)
    mix = [int(v) for v in rng.integers(1, 4, 3) * rng.choice([-1, 1], 3)]
    rows = [[" ".join(str(int(v)) for v in rng.integers(-2, 3, 3)) for _ in range(3)]
            for _ in range(2)]
    terms = " + ".join(f"{m} * {c}" for m, c in zip(mix, "ABC", strict=True))
    text = ("target scamp5 { registers: A..F, input: A B C }\n"
            f"filter f = [D: [{'; '.join(rows[0])}] / 4 * ({terms}),\n"
            f"            E: [{'; '.join(rows[1])}] / 4 * ({terms})]\n")
    result = compile_text(text, "f.kalg", Settings())
    channels = load_text(text, "f.kalg").definition().channels
    verify_exact_channels(result.program, channels, ("A", "B", "C"))
    matrix = codegen.matrix_channels(channels, tuple("ABCDEF"), ("A", "B", "C"), "all")
    assert matrix is None or len(result.program) <= len(matrix)


def test_a_mix_is_never_folded_into_an_input_it_reads():
    # regression: with 3A + 2B for the last output, the mix went into A and read the
    # updated A (add(A, A, A) twice: 4A); exact verification caught it as a kalg bug
    from kalg.targets.scamp5.pipeline import compile_text
    text = ("target scamp5 { registers: A..F, input: A B }\n"
            "filter f = [C: [2 1 0; -1 -1 -2; -2 -2 -2] / 4 * (3 * A + 2 * B),\n"
            "            D: [1 2 1; 1 0 0; 2 -1 2] / 4 * (-3 * A + 1 * B)]\n")
    result = compile_text(text, "f.kalg", Settings(ops="basic"))
    verify_exact_channels(result.program, load_text(text, "f.kalg").definition().channels,
                          ("A", "B"))


def test_exhaustive_on_a_filter_over_several_inputs_says_why_the_length_is_not_proven():
    # Regression (issue 11 audit): --exhaustive was silently ignored for a filter over several
    # inputs (a filter over one input says "not proven (... one output only)")
    result = compile_file(EXAMPLES / "frame_pair.kalg", Settings(exhaustive=True))
    assert "// length: not proven (the exhaustive search takes one input" in result.text
