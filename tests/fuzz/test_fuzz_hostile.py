"""Fuzzing the hostile surface (issue 27, item 6) as a test: huge coefficients and deep
nesting give a result or a located error in bounded time, never a traceback. The suite runs
`EXAMPLES` inputs per strategy; scripts/fuzz_campaign.py runs 10,000 each in child processes
with a timeout and a memory cap, and counts."""

from __future__ import annotations

import os

from hypothesis import HealthCheck, given, settings
from tests.fuzz.strategies import (
    check_outcome,
    deeply_nested_sources,
    large_value_sources,
    run_kalg,
)

EXAMPLES = int(os.environ.get("KALG_FUZZ_EXAMPLES", "60"))
SECONDS = 10.0

FUZZ = settings(max_examples=EXAMPLES, deadline=None, derandomize=EXAMPLES <= 200,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                       HealthCheck.function_scoped_fixture])


@FUZZ
@given(source=large_value_sources())
def test_huge_coefficients_check_cleanly(tmp_path_factory, source):
    path = tmp_path_factory.mktemp("big") / "b.kalg"
    path.write_text(source, encoding="utf-8")
    code, _, err, seconds = run_kalg(["check", str(path)])
    check_outcome(code, err, path)
    assert seconds < SECONDS


@FUZZ
@given(source=deeply_nested_sources())
def test_deep_nesting_checks_cleanly(tmp_path_factory, source):
    path = tmp_path_factory.mktemp("deep") / "d.kalg"
    path.write_text(source, encoding="utf-8")
    code, _, err, seconds = run_kalg(["check", str(path)])
    check_outcome(code, err, path)
    assert seconds < SECONDS
