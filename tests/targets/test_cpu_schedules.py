"""The cpu's schedule search for kernels and banks (issue 28 item 6): every candidate is checked
against the reference before it is timed, the choice is cached with the compiled pipelines,
and a rerun with the cache compiles nothing and chooses the same."""

from __future__ import annotations

import json

import numpy as np
import pytest

from kalg.algebra.kernel import Kernel
from kalg.diagnostics import VerificationError
from kalg.targets.cpu import build, halide, schedules
from kalg.targets.cpu.borders import Border
from kalg.targets.cpu.plan import forms, plan_outputs, separable_taps
from kalg.targets.cpu.runner import correlate

BINOMIAL = "kernel g = [1 2 1; 2 4 2; 1 2 1] / 16\n"
BORDER = Border("replicate")


@pytest.fixture
def small_search(monkeypatch, tmp_path):
    """The search on, its own cache, two schedules, a small timing image and one round."""
    monkeypatch.setenv("KALG_CPU_SEARCH", "1")
    monkeypatch.setenv("KALG_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(schedules, "SCHEDULES", {"strips": None,
                                                  "strips-wide": (0, 0, 2, False)})
    monkeypatch.setattr(schedules, "SEARCH_SHAPE", (40, 64))
    monkeypatch.setattr(schedules, "ROUNDS", 1)
    return tmp_path


def _plan():
    return build(BINOMIAL).plan


def test_a_rank_one_kernel_has_the_separable_form_and_a_random_one_does_not():
    plan = _plan()
    assert forms(plan) == ["plan", "direct", "separable"]
    taps = [[-1, 1], [0, 2], [1, 1]]
    assert separable_taps(plan)[next(iter(plan.outputs))] == {"scale": 0.0625, "rows": taps,
                                                              "cols": taps}
    other = plan_outputs({"r": Kernel.from_rows([[1, 2, 0], [0, 1, 3], [2, 0, 1]])})
    assert separable_taps(other) is None
    assert forms(other) == ["plan", "direct"]


def _fake_compile(calls: list):
    def compile_one(form, schedule):
        calls.append((form, schedule))
        return lambda images, outs: None
    return compile_one


def test_the_search_checks_every_candidate_and_a_wrong_one_raises(small_search):
    plan, checked, calls = _plan(), [], []
    choice = schedules.choose(plan, BORDER, _fake_compile(calls), checked.append)
    assert len(checked) == len(calls) == len(set(calls)) == 3 + 1  # 3 forms, 1 more schedule
    assert choice.form in forms(plan) and choice.schedule in schedules.SCHEDULES

    def wrong(run):
        raise VerificationError("differs", "")
    plan2 = build("kernel h = [1 2 1; 2 4 2; 1 2 1]\n").plan  # another plan: not cached
    with pytest.raises(VerificationError):
        schedules.choose(plan2, BORDER, _fake_compile([]), wrong)


def test_the_forms_that_copy_the_input_are_also_timed_reading_it_in_place(small_search,
                                                                          monkeypatch):
    in_place = schedules.SCHEDULES.copy() | {"in-place": (0, 0, 1, False, True)}
    monkeypatch.setattr(schedules, "SCHEDULES", in_place)
    calls: list = []
    schedules.choose(_plan(), BORDER, _fake_compile(calls), lambda run: None)
    first = calls[:5]  # stage 1: each form under the fixed rule, and in place but the plan's
    assert sorted(map(str, first)) == sorted(map(str, [
        ("plan", None), ("direct", None), ("separable", None),
        ("direct", in_place["in-place"]), ("separable", in_place["in-place"])]))
    assert ("plan", in_place["in-place"]) not in calls  # it would not change the plan's passes


def test_a_cached_choice_compiles_nothing_and_is_the_same(small_search):
    plan, calls = _plan(), []
    first = schedules.choose(plan, BORDER, _fake_compile(calls), lambda run: None)
    path = small_search / f"kalg_choice_{schedules.choice_key(plan, BORDER)[:32]}.json"
    saved = json.loads(path.read_text())
    assert (saved["form"], saved["schedule"]) == (first.form, first.schedule)
    again: list = []
    second = schedules.choose(plan, BORDER, _fake_compile(again), lambda run: None)
    assert again == [] and second.cached
    assert (second.form, second.schedule) == (first.form, first.schedule)


def test_the_choice_is_keyed_by_the_plan_and_the_border():
    plan = _plan()
    other = build("kernel g = [1 2 1; 2 4 2; 1 2 1] / 8\n").plan
    keys = {schedules.choice_key(plan, BORDER), schedules.choice_key(other, BORDER),
            schedules.choice_key(plan, Border("wrap"))}
    assert len(keys) == 3


def test_the_searched_filter_equals_the_reference_and_its_rerun_loads_from_disk(
        small_search, monkeypatch):
    image = np.random.default_rng(2).uniform(-1, 1, (37, 45)).astype(np.float32)
    f = build(BINOMIAL)
    monkeypatch.setattr(schedules, "SCHEDULES", {"strips": None})  # two compiles, not four
    monkeypatch.setattr(schedules, "forms", lambda plan: ["plan", "separable"])
    out = f(image)
    want = correlate(next(iter(f.plan.kernels.values())), image, BORDER)
    assert np.max(np.abs(out - want)) < 1e-6
    choice = f.choices[BORDER]
    assert not choice.cached and set(choice.seconds) == {"plan/strips", "separable/strips"}

    def no_compile(*args, **kwargs):
        raise AssertionError("a cached choice recompiled a pipeline")
    monkeypatch.setattr(halide.Lowering, "pipeline", no_compile)
    g = build(BINOMIAL)
    assert np.array_equal(g(image), out)
    assert g.choices[BORDER].cached and g.sources[BORDER] == "disk cache"
    assert g.choices[BORDER].name == choice.name


@pytest.mark.parametrize("form", ["direct", "separable"])
def test_each_form_of_a_bank_equals_the_reference(form, monkeypatch, tmp_path):
    # the Sobel pair: both outputs of rank one, read from one input in one loop
    monkeypatch.setenv("KALG_CACHE_DIR", str(tmp_path))
    f = build("target cpu { }\n"
              "filter s = [gx: [1 0 -1; 2 0 -2; 1 0 -1], gy: [1 2 1; 0 0 0; -1 -2 -1]]\n")
    assert form in forms(f.plan)
    run = halide.compile_plan(f.plan, BORDER, form, (8, 16, 1, True)).run
    f._check(BORDER, run)  # VerificationError on any difference
    in_place = halide.compile_plan(f.plan, BORDER, form, schedules.SCHEDULES["in-place"]).run
    f._check(BORDER, in_place)
