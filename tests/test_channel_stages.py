"""Channel filters compiled as stages of one-input programs: each (output, channel) kernel gets
the e-graph's decompositions (one e-graph per channel), or the channels' common factor is
applied once to their mix; the program is verified on every input and never longer than the
constant-matrix and mix programs."""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

from kalg.algebra.channels import common_factor
from kalg.algebra.kernel import Kernel
from kalg.frontend import load_text
from kalg.targets.scamp5 import codegen
from kalg.targets.scamp5.channel_programs import STAGED
from kalg.targets.scamp5.machine.simulator import verify_numeric_channels
from kalg.targets.scamp5.machine.symbolic import verify_exact_channels
from kalg.targets.scamp5.pipeline import Settings, compile_file, compile_text

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
HEAD = "target scamp5 { registers: A..F, input: A B }\n"
GAUSS = Kernel.from_rows([[1, 2, 1], [2, 4, 2], [1, 2, 1]]).scale(Fraction(1, 16))
SOBEL = Kernel.from_rows([[1, 0, -1], [2, 0, -2], [1, 0, -1]]).scale(Fraction(1, 4))
BOX = Kernel.from_rows([[1, 1, 1], [1, 1, 1], [1, 1, 1]])


def _checked(text: str, ops: str = "all"):
    result = compile_text(text, "f.kalg", Settings(ops=ops))
    definition = load_text(text, "f.kalg").definition()
    verify_exact_channels(result.program, definition.channels, definition.inputs)
    rng = np.random.default_rng(3)
    verify_numeric_channels(result.program, definition.channels,
                            {c: rng.uniform(-1, 1, (24, 24)) for c in definition.inputs})
    matrix = codegen.matrix_channels(definition.channels, tuple("ABCDEF"), definition.inputs,
                                     ops)
    return result, matrix


def test_common_factor_is_the_polynomial_gcd_of_the_channels_kernels():
    # Gaussian (1+x)^2 (1+y)^2 / 16 and Sobel (1-x)(1+x)(1+y)^2 / 4 share (1+x)(1+y)^2
    factor, rests = common_factor({"A": GAUSS, "B": SOBEL})
    assert sorted(factor.taps.values()) == [1, 1, 1, 1, 2, 2]
    assert factor.compose(rests["A"]).same_values(GAUSS)
    assert factor.compose(rests["B"]).same_values(SOBEL)
    assert len(rests["A"].taps) == len(rests["B"].taps) == 2
    # no factor beyond a number or a shift: nothing to share
    assert common_factor({"A": GAUSS, "B": BOX}) is None
    # proportional kernels (a common mix): the factor is the whole kernel, the rests numbers
    factor, rests = common_factor({"A": GAUSS, "B": GAUSS.shift(1, 0).scale(-3)})
    assert len(rests["A"].taps) == len(rests["B"].taps) == 1
    assert factor.compose(rests["B"]).same_values(GAUSS.shift(1, 0).scale(-3))
    assert common_factor({"A": GAUSS}) is None


def test_structured_kernels_on_each_channel_compile_far_shorter_than_the_flat_matrix():
    # a Gaussian on A and a Sobel on B: the matrix program sees 15 flat taps over /16 (53
    # instructions); the staged program applies the shared column [1 2 1] (x) [1 1] once to
    # the mix of the two short rests, or the e-graph's separable programs of each channel
    result, matrix = _checked(HEAD + "kernel g = [1 2 1; 2 4 2; 1 2 1] / 16\n"
                              "kernel s = [1 0 -1; 2 0 -2; 1 0 -1] / 4\n"
                              "filter f = [C: g * A + s * B]\n")
    assert result.stats["candidate"] == STAGED
    assert len(result.program) <= 16 < len(matrix)


def test_two_outputs_of_structured_channel_kernels_subtracted_and_transposed():
    result, matrix = _checked(HEAD + "kernel g = [1 2 1; 2 4 2; 1 2 1] / 16\n"
                              "kernel s = [1 0 -1; 2 0 -2; 1 0 -1] / 4\n"
                              "filter f = [C: g * A + s * B, D: transpose(s) * A - g * B]\n")
    assert result.stats["candidate"] == STAGED
    assert 2 * len(result.program) < len(matrix)


def test_an_output_in_an_input_register_is_made_after_that_inputs_last_reader():
    # B is an output and an input: D reads B, so B is written last, from B in place
    result, _ = _checked(HEAD + "kernel g = [1 2 1; 2 4 2; 1 2 1] / 16\n"
                         "kernel s = [1 0 -1; 2 0 -2; 1 0 -1] / 4\n"
                         "filter f = [B: g * A + s * B, D: s * A + g * B]\n", ops="basic")
    assert result.stats["candidate"] == STAGED


@pytest.mark.parametrize(("example", "before"), [("cnn_layer", 32), ("frame_pair", 15)])
def test_channel_examples_are_never_longer_than_before_the_staged_candidate(example, before):
    # the lengths kalg gave before the staged candidate existed (matrix and mix programs):
    # another candidate may only make a channel program shorter
    result = compile_file(EXAMPLES / f"{example}.kalg", Settings())
    assert len(result.program) <= before


def test_two_outputs_applying_the_same_kernel_to_a_channel_share_one_e_graph_root():
    # regression: the channel's e-graph bound one term to two output names (KeyError k_C)
    from kalg.targets.scamp5.optimize import Options
    from kalg.targets.scamp5.optimize_channels import channel_terms
    found = channel_terms({"C": {"A": SOBEL, "B": GAUSS}, "D": {"A": SOBEL}}, "A", Options())
    assert sorted(found) == ["C", "D"]
    for out, candidates in found.items():
        for decomposition in candidates.values():
            (name, kernel), = decomposition.output_kernels().items()
            assert name == out and kernel.same_values(SOBEL)


def test_three_structured_outputs_on_six_registers_finish_the_rest_as_a_matrix():
    # two inputs kept and two outputs made leave too few registers for a third output's
    # stages: after any output the rest is finished by the constant-matrix program
    result, matrix = _checked(HEAD + "kernel box = [1 1 1; 1 1 1; 1 1 1] / 8\n"
                              "kernel g = [1 2 1; 2 4 2; 1 2 1] / 16\n"
                              "kernel s = [1 2 1; 0 0 0; -1 -2 -1] / 4\n"
                              "kernel l = [0 1 0; 1 -4 1; 0 1 0] / 4\n"
                              "filter f = [C: box * A - box * B, D: s * A - l * B,\n"
                              "            E: -g * A + transpose(s) * B]\n")
    assert result.stats["candidate"] == STAGED
    assert len(result.program) < 0.7 * len(matrix)


def test_a_terms_last_move_or_add_folds_into_the_accumulation():
    from kalg.targets.scamp5.channel_stages import _accumulate
    from kalg.targets.scamp5.machine.isa import Add, Add3, Mov, Sub
    step = [Add("E", "A", "F"), Mov("F", "E")]
    assert _accumulate(step, "C", "F", True, True) == [Add("E", "A", "F"), Sub("C", "C", "E")]
    step = [Mov("E", "A"), Add("F", "A", "E")]
    assert _accumulate(step, "C", "F", False, True) == [Mov("E", "A"), Add3("C", "C", "A", "E")]
    # no three-operand add in the op set, or the output is an operand: add the term
    assert _accumulate(step, "C", "F", False, False) == [*step, Add("C", "C", "F")]
    step = [Add("F", "C", "E")]
    assert _accumulate(step, "C", "F", False, True) == [*step, Add("C", "C", "F")]


def test_a_kernel_applied_to_the_difference_of_two_frames_is_applied_once_to_the_difference():
    # Regression: blur * (A - B) halved each frame four times (blur is over 16) before
    # subtracting (18 instructions with D); the rests' common scale now goes into the common
    # factor, so the difference is one `sub` and the blur runs once on it, and D = x·A - B is
    # one `subx`, not `movx` and `sub`
    result, matrix = _checked(HEAD + "kernel blur = [1 2 1] * transpose([1 2 1]) / 16\n"
                              "filter motion = [C: blur * (A - B), D: shift(A, 1, 0) - B]\n")
    assert len(result.program) <= 12 < len(matrix)


def test_each_outputs_mix_is_made_in_the_outputs_own_register():
    # Regression: with three inputs and two outputs on five registers the outputs' own mixes
    # found no register to hold the last output's mix (every other one was an input it reads)
    # and the matrix program won with 41 instructions; E = A - C was `sub` and `mov`
    text = ("target scamp5 { registers: A..E, input: A B C }\n"
            "kernel lap = [0 1 0; 1 -4 1; 0 1 0]\n"
            "filter rgb = [D: lap * (A + 2*B + C) / 4, E: A - C]\n")
    result = compile_text(text, "f.kalg", Settings())
    definition = load_text(text, "f.kalg").definition()
    verify_exact_channels(result.program, definition.channels, definition.inputs)
    assert len(result.program) <= 11


def test_outputs_in_input_registers_that_read_each_others_input_are_moved_into_place():
    # Regression (issue 11 audit): A: g * A + B and B: A - g * B each overwrite an input the
    # other reads, so no order made them in place and the flat matrix program won (54
    # instructions); they are now made in spare registers and moved into A and B last
    result, matrix = _checked(HEAD + "kernel g = [1 2 1] * transpose([1 2 1]) / 16\n"
                              "filter f = [A: g * A + B, B: A - g * B]\n")
    assert result.stats["candidate"] == STAGED
    assert len(result.program) <= 25 < len(matrix)
