"""Fuzzing as a test (issue 14): whatever bytes a user gives kalg, it answers in bounded time
with exit 0 or 1, an error located as FILE:LINE:COL, and never a traceback.

The suite runs `EXAMPLES` inputs per strategy; `KALG_FUZZ_EXAMPLES=10000` runs a campaign
(see tests/fuzz/campaign.sh)."""

from __future__ import annotations

import os

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tests.fuzz.strategies import (
    check_outcome,
    deeply_nested_sources,
    kalg_sources,
    large_value_sources,
    layer_sources,
    mutated_examples,
    pipeline_sources,
    program_texts,
    run_kalg,
)

EXAMPLES = int(os.environ.get("KALG_FUZZ_EXAMPLES", "200"))
SECONDS = 10.0
"""Bound on one `kalg check` or `kalg simulate` run (they take milliseconds; generous for a
loaded machine)."""

FUZZ = settings(max_examples=EXAMPLES, deadline=None, derandomize=EXAMPLES <= 200,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                       HealthCheck.function_scoped_fixture])


@FUZZ
@given(source=kalg_sources())
def test_generated_kalg_sources_check_cleanly(tmp_path_factory, source):
    path = tmp_path_factory.mktemp("src") / "f.kalg"
    path.write_text(source, encoding="utf-8")
    code, _, err, seconds = run_kalg(["check", str(path)])
    check_outcome(code, err, path)
    assert seconds < SECONDS


@settings(FUZZ, max_examples=min(EXAMPLES, 100))
@given(source=st.one_of(large_value_sources(), deeply_nested_sources()))
def test_huge_coefficients_and_deep_nesting_check_cleanly(tmp_path_factory, source):
    """Issue 27: coefficients of 2^31 to 10^60 and expressions 150-600 levels deep give a
    result or a located error (scripts/fuzz_campaign.py runs 10,000 of each)."""
    path = tmp_path_factory.mktemp("hostile") / "h.kalg"
    path.write_text(source, encoding="utf-8")
    code, _, err, seconds = run_kalg(["check", str(path)])
    check_outcome(code, err, path)
    assert seconds < SECONDS


@FUZZ
@given(data=mutated_examples())
def test_mutated_examples_check_cleanly(tmp_path_factory, data):
    path = tmp_path_factory.mktemp("mut") / "m.kalg"
    path.write_bytes(data)
    code, _, err, seconds = run_kalg(["check", str(path)])
    check_outcome(code, err, path)
    assert seconds < SECONDS


@FUZZ
@given(text=program_texts())
def test_generated_programs_simulate_cleanly(tmp_path_factory, text):
    from tests.fuzz.strategies import ROOT

    path = tmp_path_factory.mktemp("prog") / "p.scamp5"
    path.write_text(text, encoding="utf-8")
    code, _, err, seconds = run_kalg(["simulate", str(path), "--kernel",
                                      str(ROOT / "examples" / "sobel.kalg"), "--size", "12"])
    # a program that parses but computes something else is the whole program's fault: its
    # error has no line; every error in the text itself is located
    located = "does not compute the kernel" not in err and "no interior" not in err
    check_outcome(code, err, path, located=located)
    assert seconds < SECONDS


@settings(FUZZ, max_examples=min(EXAMPLES, 40))
@given(source=st.one_of(layer_sources(), pipeline_sources()))
def test_layers_and_pipelines_check_cleanly(tmp_path_factory, source):
    """Issue 27's new surface: filters with more outputs than registers (with and without a
    split, several inputs) and pipeline blocks (pointwise stages, cycles, use before
    definition, on the cpu and SCAMP-5 targets) give a result or a located error
    (scripts/fuzz_campaign.py runs thousands, and compiles layers and batches)."""
    path = tmp_path_factory.mktemp("new") / "n.kalg"
    path.write_text(source, encoding="utf-8")
    code, _, err, seconds = run_kalg(["check", str(path)])
    check_outcome(code, err, path)
    assert seconds < SECONDS
