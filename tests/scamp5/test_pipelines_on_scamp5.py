"""Pipelines on SCAMP-5: sums, scalings and the vendor's analogue abs compile to one verified
program; every other pointwise stage is a located error. The Sobel bank's compile is the slow
part (about 15 s of CPU): the example compiles once, through the command line."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import kalg
from kalg.cli import main
from kalg.dataflow import reference
from kalg.diagnostics import KalgError, ProgramError
from kalg.frontend import load_file
from kalg.targets.cpu.borders import Border
from kalg.targets.scamp5.machine import piecewise
from kalg.targets.scamp5.machine.isa import Abs, Dir, Mov, Movx, Sub
from kalg.targets.scamp5.machine.simulator import footprint, simulate
from kalg.targets.scamp5.machine.symbolic import execute
from kalg.targets.scamp5.machine.text import format_program, parse_program

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "sobel_magnitude.kalg"


def _interior(program, shape):
    return footprint(program).interior(shape)


@pytest.fixture(scope="module")
def sobel_cli(tmp_path_factory):
    """`kalg optimize --target scamp5` on the example: (exit status, stdout)."""
    out = tmp_path_factory.mktemp("sobel") / "sobel.scamp5"
    status = main(["optimize", "--target", "scamp5", str(EXAMPLE), "-o", str(out)])
    return status, out.read_text() if out.exists() else ""


def test_abs_macro_writes_the_absolute_value_and_leaves_minus_x_on_news():
    image = np.array([[-3.0, 0.0, 2.5]])
    result = simulate([Abs("B", "A")], image)
    assert np.array_equal(result["B"], [[3.0, 0.0, 2.5]])
    assert np.array_equal(result["NEWS"], -image)
    assert np.array_equal(result["A"], image)  # x0 kept


def test_abs_macro_round_trips_as_text_and_needs_two_registers():
    program = [Movx("B", "A", Dir.EAST), Abs("C", "B")]
    assert parse_program(format_program(program)) == program
    with pytest.raises(ProgramError, match="abs needs y != x0"):
        parse_program("abs(A, A);")


def test_a_kernel_check_of_a_program_with_abs_is_an_error_not_a_wrong_kernel():
    with pytest.raises(ProgramError, match="not linear"):
        execute([Abs("B", "A")])


def test_piecewise_execution_names_an_abs_by_its_operand_up_to_sign():
    forward = piecewise.execute([Movx("C", "A", Dir.EAST), Sub("D", "C", "A"), Abs("E", "D")],
                                {"A": "img"})
    backward = piecewise.execute([Movx("C", "A", Dir.EAST), Sub("D", "A", "C"), Abs("F", "D"),
                                  Mov("E", "F")], {"A": "img"})
    assert piecewise.key(forward["E"]) == piecewise.key(backward["E"])
    assert piecewise.key(forward["E"]) != piecewise.key(forward["D"])


def test_abs_of_a_single_kernel_compiles_and_equals_numpy():
    text = "pipeline edge(img) {\n  out e = abs(conv([-1 0 1], img)) / 2\n}\n"
    result = kalg.compile(text, target="scamp5")
    assert result.verified
    assert sum(isinstance(i, Abs) for i in result.program) == 1
    graph = kalg.frontend.load_text(text).definition().pipeline
    image = np.random.default_rng(7).integers(0, 256, (40, 40)).astype(float)
    register = result.stats["outputs"]["e"]
    got = simulate(result.program, image)[register]
    want = reference.evaluate(graph, [image], Border("replicate"))["e"]
    rows, cols = _interior(result.program, image.shape)
    assert np.array_equal(got[rows, cols], want[rows, cols])


def test_sobel_magnitude_example_compiles_from_the_command_line(sobel_cli):
    status, text = sobel_cli
    assert status == 0
    assert "// outputs: magnitude in " in text
    assert "verified: exactly (symbolic over the input and each abs taken)" in text
    program = parse_program(text)
    assert sum(isinstance(i, Abs) for i in program) == 2


def test_sobel_magnitude_program_equals_numpy_on_an_image(sobel_cli):
    _, text = sobel_cli
    program = parse_program(text)
    register = text.split("// outputs: magnitude in ")[1][0]
    image = np.random.default_rng(11).integers(0, 256, (64, 64)).astype(float)
    sx = np.array([[-1, 0, 1], [-2, 0, 2], [-1, 0, 1]], float)
    padded = np.pad(image, 1)
    gx = sum(sx[r, c] * padded[r:r + 64, c:c + 64] for r in range(3) for c in range(3))
    gy = sum(sx[c, r] * padded[r:r + 64, c:c + 64] for r in range(3) for c in range(3))
    got = simulate(program, image)[register]
    rows, cols = _interior(program, image.shape)  # where zero fill reaches no value read
    assert np.array_equal(got[rows, cols], (np.abs(gx) + np.abs(gy))[rows, cols])


def test_sobel_magnitude_example_means_opencvs_sobel_magnitude():
    cv2 = pytest.importorskip("cv2")
    graph = load_file(EXAMPLE).definition().pipeline
    image = np.random.default_rng(3).integers(0, 256, (30, 40)).astype(np.float32)
    b = cv2.BORDER_REPLICATE
    want = (np.abs(cv2.Sobel(image, cv2.CV_32F, 1, 0, borderType=b))
            + np.abs(cv2.Sobel(image, cv2.CV_32F, 0, 1, borderType=b)))
    got = reference.evaluate(graph, [image], Border("replicate"))["magnitude"]
    assert np.array_equal(got, want)


@pytest.mark.parametrize(("stage", "what"), [("gx * gy", "a product of two images"),
                                              ("min(gx, gy)", "min"),
                                              ("select(gx > 0, gx, gy)", "a comparison")])
def test_other_pointwise_stages_on_scamp5_are_located_errors(stage, what):
    text = ("kernel sx = [-1 0 1; -2 0 2; -1 0 1]\npipeline p(img) {\n"
            "  let gx = conv(sx, img)\n  let gy = conv(transpose(sx), img)\n"
            f"  out o = {stage}\n}}\n")
    with pytest.raises(KalgError) as info:
        kalg.compile(text, target="scamp5")
    assert f"stage 'o': {what}" in info.value.message
    assert "cannot run on scamp5" in info.value.message
    assert info.value.span.line == 5


def test_a_pipeline_of_two_images_on_scamp5_is_a_located_error():
    with pytest.raises(KalgError, match="reads 2 images: on scamp5 a pipeline reads one"):
        kalg.compile("pipeline p(a, b) {\n  out o = abs(a - b)\n}\n", target="scamp5")


def test_simulating_a_program_with_abs_against_a_kernel_is_an_error_not_a_traceback(
        tmp_path, capsys):
    program = tmp_path / "p.scamp5"
    program.write_text("movx(B, A, east);\nsub(C, B, A);\nabs(D, C);\n")
    kernel = tmp_path / "k.kalg"
    kernel.write_text("kernel k = [-1 1] @ (0, 0)\n")
    assert main(["simulate", str(program), "--kernel", str(kernel)]) == 1
    assert "abs(D, C); is not linear" in capsys.readouterr().err
