"""Canny as a pipeline: `shift` reads a neighbour (0 beyond the image), `fixpoint` repeats a
stage until it no longer changes, and examples/canny.kalg (OpenCV's non-maximum suppression,
double threshold and hysteresis) gives cv2.Canny's edges on real-ish images, in the reference
and compiled for the cpu."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import kalg
from kalg.dataflow import reference
from kalg.diagnostics import KalgError
from kalg.frontend import load_file, load_text

cv2 = pytest.importorskip("cv2")
ndimage = pytest.importorskip("scipy.ndimage")
ROOT = Path(__file__).resolve().parents[2]
CANNY = ROOT / "examples" / "canny.kalg"


def images() -> dict[str, np.ndarray]:
    """8-bit test images: noise, smooth blobs, a blurred disc, a sharp square."""
    rng = np.random.default_rng(0)
    blobs = cv2.GaussianBlur(rng.integers(0, 256, (96, 128)).astype(np.uint8), (0, 0), 3)
    yy, xx = np.mgrid[0:100, 0:120]
    disc = ((xx - 60) ** 2 + (yy - 50) ** 2 < 900).astype(np.uint8) * 180 + 30
    square = np.zeros((90, 90), np.uint8)
    square[20:70, 25:60] = 200
    return {"noise": rng.integers(0, 256, (60, 80)).astype(np.uint8),
            "blobs": cv2.normalize(blobs, None, 0, 255, cv2.NORM_MINMAX),
            "disc": cv2.GaussianBlur(disc, (5, 5), 1.2), "square": square}


def test_shift_reads_the_neighbour_and_zero_beyond_the_image():
    graph = load_text("pipeline p(a) {\n  out o = shift(a, 1, 1)\n}\n").definition().pipeline
    image = np.arange(12.0).reshape(3, 4)
    # dx = 1: the column east; dy = 1: the row north (above)
    want = [[0, 0, 0, 0], [1, 2, 3, 0], [5, 6, 7, 0]]
    assert np.array_equal(reference.evaluate(graph, [image])["o"], want)


@pytest.mark.parametrize("offsets", ["1/2, 0", "a, 0", "0, 65"])
def test_shift_offsets_are_whole_numbers_or_a_located_error(offsets):
    with pytest.raises(KalgError, match="shift's offsets are whole numbers") as info:
        load_text(f"pipeline p(a) {{\n  out o = shift(a, {offsets})\n}}\n")
    assert info.value.span.line == 2


@pytest.mark.parametrize("name", list(images()))
def test_canny_example_is_opencvs_canny(name):
    image = images()[name]
    graph = load_file(CANNY).definition().pipeline
    edges = reference.evaluate(graph, [image.astype(np.float64)])["edges"]
    assert np.array_equal(edges, cv2.Canny(image, 50, 150))
    assert edges.any()


GROW = """pipeline grow(seed, mask) {
  let region = fixpoint(seed, mask * (conv([1 1 1; 1 1 1; 1 1 1], region) > 0), BOUND)
  out filled = region
}
"""


def test_a_fixpoint_grows_a_region_until_nothing_changes():
    graph = load_text(GROW.replace("BOUND", "100")).definition().pipeline
    mask = np.zeros((5, 9))
    mask[2, 1:8] = 1
    seed = np.zeros((5, 9))
    seed[2, 1] = 1
    assert np.array_equal(reference.evaluate(graph, [seed, mask])["filled"], mask)


def test_a_fixpoint_that_reaches_its_bound_is_an_error_naming_the_stage():
    graph = load_text(GROW.replace("BOUND", "3"), "g.kalg").definition().pipeline
    mask = np.ones((1, 9))
    seed = np.zeros((1, 9))
    seed[0, 0] = 1
    with pytest.raises(KalgError, match="stage 'region' still changes after 3 iterations") as e:
        reference.evaluate(graph, [seed, mask])
    assert e.value.span.line == 2


@pytest.mark.parametrize(("bound", "message"), [("0", "a fixpoint's bound is a whole number"),
                                                ("1/2", "a fixpoint's bound is a whole number")])
def test_fixpoint_mistakes_are_located_errors(bound, message):
    with pytest.raises(KalgError, match=message) as info:
        load_text(GROW.replace("BOUND", bound))
    assert info.value.span.line == 2


def test_a_pipeline_with_a_fixpoint_prints_as_text_that_loads_back():
    from kalg.frontend.report import format_module
    module = load_file(CANNY)
    again = load_text(format_module(module)).definition().pipeline
    image = images()["disc"].astype(np.float64)
    assert np.array_equal(reference.evaluate(again, [image])["edges"],
                          reference.evaluate(module.definition().pipeline, [image])["edges"])


def test_compiled_canny_is_opencvs_canny(cached):
    f = kalg.compile(CANNY, target="cpu", schedule="tiled").program
    for image in images().values():
        assert np.array_equal(f(image.astype(np.float32)), cv2.Canny(image, 50, 150))


def test_compiled_fixpoint_grows_a_region_even_where_random_images_never_settle(cached):
    # the check before first use runs random images on which this fixpoint oscillates: the
    # compiled pipeline must fail there as the reference does, and compile all the same
    f = kalg.compile(GROW.replace("BOUND", "100"), target="cpu", schedule="tiled").program
    mask = np.zeros((5, 9), np.float32)
    mask[2, 1:8] = 1
    seed = np.zeros((5, 9), np.float32)
    seed[2, 1] = 1
    assert np.array_equal(f([seed, mask]), mask)
    assert f.iterations == 7  # one pixel a step, then one step that changes nothing
