"""Canny as a pipeline: `shift` reads a neighbour (0 beyond the image), and examples/canny.kalg
computes OpenCV's non-maximum suppression and double threshold exactly, so that its strong and
weak maps, joined by hysteresis, are cv2.Canny's edges on real-ish images."""

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


def hysteresis(strong: np.ndarray, weak: np.ndarray) -> np.ndarray:
    """The 8-connected regions of `weak` that hold a `strong` pixel."""
    labels, _ = ndimage.label(weak > 0, structure=np.ones((3, 3)))
    return np.isin(labels, np.unique(labels[strong > 0])) & (labels > 0)


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
def test_canny_stages_joined_by_hysteresis_are_opencvs_edges(name):
    image = images()[name]
    graph = load_file(CANNY).definition().pipeline
    out = reference.evaluate(graph, [image.astype(np.float64)])
    edges = hysteresis(out["strong"], out["weak"])
    assert np.array_equal(edges, cv2.Canny(image, 50, 150) > 0)
    assert edges.any()


def test_compiled_canny_stages_equal_the_reference(cached):
    f = kalg.compile(CANNY, target="cpu", schedule="tiled").program
    graph = load_file(CANNY).definition().pipeline
    for image in images().values():
        got = f(image.astype(np.float32))
        want = reference.evaluate(graph, [image.astype(np.float64)])
        assert all(np.array_equal(got[k], want[k]) for k in ("strong", "weak"))
