"""The pipeline language as a user meets it: what a block means (its graph), and a located error
for each mistake. No Halide here."""

from __future__ import annotations

import numpy as np
import pytest

from kalg.cli import main
from kalg.dataflow import reference
from kalg.diagnostics import KalgError
from kalg.frontend import load_text
from kalg.frontend.report import format_module
from kalg.targets.cpu.borders import Border

SOBEL = "kernel sx = [-1 0 1; -2 0 2; -1 0 1]\n"


def graph(body: str, head: str = SOBEL):
    return load_text(head + body).definition().pipeline


def test_star_between_images_multiplies_pixels_and_inside_conv_composes_kernels():
    g = graph("pipeline p(img) {\n  out o = conv(sx * transpose(sx), img) * img\n}")
    ops = [g.nodes[i].op for i in g.live()]
    assert ops == ["input", "conv", "mul"]
    conv = next(g.nodes[i] for i in g.live() if g.nodes[i].op == "conv")
    assert conv.param.bounds() == (-2, 2, -2, 2)  # a 5x5 kernel: the composition


def test_the_same_stage_written_twice_is_one_node():
    g = graph("pipeline p(img) {\n  let a = conv(sx, img)\n  out o = conv(sx, img) * a\n}")
    assert [g.nodes[i].op for i in g.live()] == ["input", "conv", "mul"]


def test_reference_applies_the_border_at_each_conv():
    g = graph("pipeline p(img) {\n  out o = conv([1 1 1], conv([1 1 1], img))\n}", "")
    image = np.arange(5.0).reshape(1, 5)
    # replicate: the first conv gives 1 3 6 9 11, which the second extends by its own border
    # (1 1 3 6 9 11 11), not by the input's: 5 10 18 26 31
    twice = np.array([[5, 10, 18, 26, 31]], float)
    assert np.array_equal(reference.evaluate(g, [image], Border("replicate"))["o"], twice)


def test_check_prints_a_pipeline_that_loads_back_to_the_same_values():
    module = load_text(SOBEL + "pipeline p(img) {\n  let g = conv(sx, img)\n"
                       "  out o = select(abs(g) > 1/2, sqrt(g * g), clamp(g, -1, 1))\n}")
    again = load_text(format_module(module)).definition().pipeline
    image = [np.random.default_rng(0).uniform(-2, 2, (9, 7))]
    b = Border("replicate")
    assert np.array_equal(reference.evaluate(module.definition().pipeline, image, b)["o"],
                          reference.evaluate(again, image, b)["o"])


ERRORS = [
    ("pipeline p(img) {\n  let a = b + img\n  let b = img\n  out o = a\n}", 2, 11,
     "'b' is used before its definition on line 4"),
    ("pipeline p(img) {\n  let a = b + img\n  let b = a * 2\n  out o = b\n}", 2, 11,
     "a cycle: a -> b -> a"),
    ("pipeline p(img) {\n  out o = sx * img\n}", 2, 11, "'sx' is a kernel, not an image"),
    ("pipeline p(img) {\n  out o = blur(img)\n}", 2, 11, "unknown function 'blur'"),
    ("pipeline p(img) {\n  out o = select(img > 0, img)\n}", 2, 11, "select takes 3 arguments"),
    ("pipeline p(img) {\n  out o = conv(img, img)\n}", 2, 16, "'img' is an image"),
    ("pipeline p(img) {\n  out o = img / img\n}", 2, 15, "divides only by a constant"),
    ("pipeline p(img) {\n  let o = img\n}", 1, 10, "has no 'out NAME = ...' stage"),
    ("pipeline p(img) {\n  out o = transpose(img)\n}", 2, 11, "a function of kernels"),
    ("kernel k = sx > 1\n", 1, 15, "only inside a pipeline"),
]


@pytest.mark.parametrize(("body", "line", "column", "message"), ERRORS,
                         ids=[e[3][:30] for e in ERRORS])
def test_pipeline_mistakes_are_located_errors(body, line, column, message):
    with pytest.raises(KalgError) as info:
        load_text(SOBEL + body, "p.kalg")
    err = info.value
    assert message in err.message
    assert (err.span.line - 1, err.span.column) == (line, column)


@pytest.mark.parametrize(("stage", "what"), [("gx * gx", "a product of two images"),
                                              ("sqrt(gx)", "a square root"),
                                              ("gx > 0", "a comparison")])
def test_a_stage_scamp5_cannot_run_is_a_located_error_naming_stage_and_target(
        tmp_path, capsys, stage, what):
    path = tmp_path / "p.kalg"
    path.write_text(SOBEL + f"pipeline p(img) {{\n  let gx = conv(sx, img)\n"
                    f"  out o = {stage}\n}}\n")
    assert main(["optimize", str(path)]) == 1
    err = capsys.readouterr().err
    assert "p.kalg:4:" in err
    assert f"stage 'o': {what} cannot run on scamp5" in err
    assert "--target cpu" in err


def test_simulate_against_a_pipeline_is_an_error_not_a_vacuous_pass(tmp_path, capsys):
    program = tmp_path / "p.scamp5"
    program.write_text("scamp5_kernel_begin();\nmov(B, A);\nscamp5_kernel_end();\n")
    kernel = tmp_path / "p.kalg"
    kernel.write_text(SOBEL + "pipeline p(img) {\n  out o = conv(sx, img)\n}\n")
    assert main(["simulate", str(program), "--kernel", str(kernel)]) == 1
    assert "is a pipeline" in capsys.readouterr().err


def test_a_pipeline_planned_as_a_kernel_is_a_located_error_not_a_crash():
    from kalg.diagnostics import KalgSemanticError
    from kalg.targets.cpu.runner import plan_definition
    definition = load_text(SOBEL + "pipeline p(img) {\n  out o = conv(sx, img)\n}\n",
                           "p.kalg").definition()
    with pytest.raises(KalgSemanticError, match="is a pipeline"):
        plan_definition(definition)
