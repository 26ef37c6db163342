"""`kalg optimize --effort` (issue 26): named levels of count budgets; a higher level runs what
default runs and more, so its program is never longer, and the same on any machine."""

from __future__ import annotations

import pytest

from kalg import effort
from kalg.targets.scamp5.codegen import Limits
from kalg.targets.scamp5.pipeline import Settings, compile_text

TEXT = ("target scamp5 { registers: A..F, input: A, ops: all }\n"
        "kernel k = [1 2 1 ; 0 0 0 ; -1 -2 -1]\n")


def test_default_is_in_force_outside_a_level_and_restored_after_one():
    assert effort.current().name == "default" and effort.current().default
    with effort.using("max") as level:
        assert effort.current() is level and not level.default
    assert effort.current().name == "default"


def test_a_level_scales_every_refine_budget_by_counts():
    limits = Limits(expansions=1000, total_expansions=2000)
    wide = effort.LEVELS["max"].widened(limits)
    assert (wide.expansions, wide.total_expansions) == (8000, 16000)
    assert (wide.beam, wide.moves) == (2 * limits.beam, 2 * limits.moves)
    assert effort.LEVELS["default"].widened(limits) == limits


def test_an_unknown_level_is_refused_with_the_known_ones():
    with pytest.raises(ValueError, match="default, high, max"), effort.using("extreme"):
        pass


def test_a_higher_level_is_never_longer():
    default = compile_text(TEXT, settings=Settings())
    high = compile_text(TEXT, settings=Settings(effort="high"))
    assert len(high.program) <= len(default.program)
