"""The pipeline examples compute what the OpenCV calls they name compute: the numpy reference
on random images (fast), and the compiled Halide pipelines (a few, each compiled once)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import kalg
from kalg.cli import main
from kalg.dataflow import reference
from kalg.frontend import load_file
from kalg.targets.cpu.bench_pipelines import opencv_chains
from kalg.targets.cpu.borders import Border

cv2 = pytest.importorskip("cv2")
ROOT = Path(__file__).resolve().parents[2]


OPENCV = opencv_chains()


def _close(got, want):
    """Equal to float32 rounding: within a few ulps of the largest magnitude."""
    return np.max(np.abs(got - want)) <= 1e-6 * max(1.0, float(np.max(np.abs(want))))


@pytest.mark.parametrize("name", list(OPENCV))
@pytest.mark.parametrize("shape", [(37, 53), (4, 3)])
def test_example_reference_equals_opencv(name, shape):
    image = np.random.default_rng(7).random(shape, dtype=np.float32)
    graph = load_file(ROOT / "examples" / f"{name}.kalg").definition().pipeline
    (got,) = reference.evaluate(graph, [image], Border("replicate")).values()
    assert _close(got, OPENCV[name](image))


@pytest.mark.parametrize("name", ["harris", "unsharp"])
def test_compiled_example_equals_opencv(name, cached):
    f = kalg.compile(ROOT / "examples" / f"{name}.kalg", target="cpu", schedule="fused").program
    for shape in [(61, 47), (2, 5)]:
        image = np.random.default_rng(3).random(shape, dtype=np.float32)
        assert _close(f(image), OPENCV[name](image))


def test_every_pointwise_operation_compiles_to_the_reference(cached):
    source = """kernel k = [1 2 1] / 4
pipeline p(a, b) {
  let s = conv(k, a) - b / 2
  out mix = select(s >= 0, min(s, a), max(-s, abs(b))) + clamp(a * b, -1/4, 1/4)
  out root = sqrt(abs(s)) + (a != b) + (a == a) + (s < 1) + (s <= 1) - (s > 2)
} with border reflect101
"""
    f = kalg.compile(source, target="cpu", schedule="tiled").program
    rng = np.random.default_rng(5)
    a, b = (rng.uniform(-1, 1, (33, 70)).astype(np.float32) for _ in range(2))
    got = f([a, b])
    graph = load_file_text(source)
    want = reference.evaluate(graph, [a, b], Border("reflect101"))
    for name in ("mix", "root"):
        assert np.max(np.abs(got[name] - want[name])) <= 1e-5


def load_file_text(source: str):
    from kalg.frontend import load_text
    return load_text(source).definition().pipeline


def test_kalg_run_applies_a_pipeline_to_an_image(tmp_path, cached):
    image = np.random.default_rng(1).random((20, 30), dtype=np.float32)
    np.save(tmp_path / "in.npy", image)
    out = tmp_path / "out.npy"
    assert main(["run", str(ROOT / "examples" / "unsharp.kalg"), "--image",
                 str(tmp_path / "in.npy"), "-o", str(out), "--schedule", "fused"]) == 0
    assert _close(np.load(out), OPENCV["unsharp"](image))
