"""The schedule search decides only speed: every schedule gives the same bytes, and the choice
is measured once per machine and then read from the cache."""

from __future__ import annotations

import json

import numpy as np

from kalg.frontend import load_text
from kalg.targets.cpu import pipelines
from kalg.targets.cpu.pipelines import build_pipeline

SOURCE = """kernel k = [1 2 1; 2 4 2; 1 2 1] / 16
pipeline p(img) {
  let s = conv(k, img)
  out o = abs(conv([-1 0 1], s)) + max(s, img) * img
}
"""


def test_every_schedule_gives_the_same_bytes(cached):
    f = build_pipeline(load_text(SOURCE).definition(), schedule="fused")
    image = [np.random.default_rng(2).random((50, 90), dtype=np.float32)]
    outs = {s: f.run(image, f.border, s)[0] for s in ("fused", "root")}
    for out in outs.values():
        assert out.tobytes() == outs["fused"].tobytes()


def test_search_chooses_a_measured_schedule_once_and_caches_it(tmp_path, monkeypatch):
    monkeypatch.setenv("KALG_CACHE_DIR", str(tmp_path))  # its own: no cached choice
    monkeypatch.setattr(pipelines, "SEARCH", ("fused", "fused-16"))
    monkeypatch.setattr(pipelines, "SEARCH_SHAPE", (64, 96))
    definition = load_text(SOURCE).definition()
    f = build_pipeline(definition)
    chosen = f.schedule(f.border)
    assert chosen in ("fused", "fused-16")
    (cached,) = tmp_path.glob("kalg_schedule_*.json")
    assert json.loads(cached.read_text())["schedule"] == chosen
    again = build_pipeline(definition)
    monkeypatch.setattr(pipelines, "_median_time", lambda *a: 1 / 0)  # must not measure
    assert again.schedule(again.border) == chosen


def test_a_constant_border_around_a_pointwise_stage_a_conv_reads_runs(cached):
    # constant_exterior was given its bounds before its value: a TypeError traceback for any
    # pipeline with `border constant` whose conv reads a pointwise stage
    text = """pipeline p(img) {
  out o = conv([1 1 1; 1 1 1; 1 1 1] / 9, abs(img))
} with border constant 2
"""
    f = build_pipeline(load_text(text).definition(), schedule="fused")
    image = np.random.default_rng(3).standard_normal((20, 30)).astype(np.float32)
    out = f(image)  # checked against the reference before its first result
    assert np.isclose(out[0, 0], (abs(image[:2, :2]).sum() + 5 * 2) / 9, rtol=1e-6)  # 5 outside
