"""A search bounded by the longest program worth finding (issue 11, item 7: the slowest compiles).

A caller that already has a program of L instructions only wants a shorter one or a tie
(`codegen.generate(..., longest=L)`): the beam then stops at the first level beyond L, so a
candidate that cannot be that short costs at most L + 1 levels of the beam, counted in states,
never in seconds. The portfolio screens its candidates fewest values first and bounds each one
by the best program of the rung so far.
"""

from __future__ import annotations

from fractions import Fraction

import pytest

from kalg.algebra.kernel import Kernel
from kalg.targets.scamp5 import codegen, portfolio
from kalg.targets.scamp5.codegen import QUICK, generate
from kalg.targets.scamp5.codegen.heuristic import Weights
from kalg.targets.scamp5.codegen.limits import Budget
from kalg.targets.scamp5.codegen.memo import Memo
from kalg.targets.scamp5.codegen.search import Focus, _Search
from kalg.targets.scamp5.machine.symbolic import verify_exact
from kalg.targets.scamp5.optimize import direct_decomposition

from .dags import BENCH

REGISTERS = ("A", "B", "C", "D", "E", "F")


def _horner_5x5():
    """A candidate of about a hundred values whose program is long: Horner over a 5x5."""
    taps = {(x, y): (3 * x + 5 * y) % 7 - 3 for x in range(-2, 3) for y in range(-2, 3)}
    return direct_decomposition({"A": Kernel.of(taps).scale(Fraction(1, 8))})


def _search(decomp, longest):
    limits = QUICK
    memo = Memo()
    net = memo.network(decomp, 0)
    scorer = memo.scorer(net, "all", Weights())
    run = _Search(scorer, len(REGISTERS), limits, "A", Focus.TOP, Budget(limits, longest))
    return run, run.run()


def test_a_bounded_search_expands_no_level_beyond_the_bound():
    decomp = _horner_5x5()
    unbounded, found = _search(decomp, None)
    assert found and min(s.cost for s in found) > 12  # a long program: the bound matters
    for longest in (3, 8, 12):
        run, schedules = _search(decomp, longest)
        # levels 0..longest, at most a beam of states each
        assert run.expanded <= (longest + 1) * QUICK.beam < unbounded.expanded
        assert run.beyond and not schedules


def test_a_bound_no_program_reaches_changes_nothing():
    for name in ("analognet2", "sobel_xy"):
        decomp = BENCH[name]()
        assert generate(decomp, REGISTERS, "A", "all", QUICK, longest=10**6) == generate(
            decomp, REGISTERS, "A", "all", QUICK)


@pytest.mark.parametrize("name", ["analognet2", "box7"])
def test_a_bounded_program_is_never_longer_than_its_bound(name):
    decomp = BENCH[name]()
    full = len(generate(decomp, REGISTERS, "A", "all", QUICK))
    for longest in (full - 3, full):
        program = generate(decomp, REGISTERS, "A", "all", QUICK, longest=longest)
        if program is not None:
            assert len(program) <= longest
            verify_exact(program, decomp.output_kernels(), "A")


def test_a_candidate_that_cannot_beat_the_rung_is_searched_within_the_best_so_far(monkeypatch):
    # Screens go fewest live values first; each later one gets the rung's best length as its
    # bound (`longest`), and one that finds nothing within it (None) takes no part.
    lengths = {"small": 9, "large": 30, "mid": 7, "tie": 7}
    sizes = {"large": 300, "small": 10, "mid": 20, "tie": 20}
    calls = []

    def fake(name, registers, input_register, ops, limits, memo=None, longest=None):
        calls.append((name, limits, longest))
        if longest is not None and lengths[name] > longest:
            return None
        return ["instr"] * lengths[name]

    class Named(str):
        def live(self):
            return range(sizes[self])

        def output_kernels(self):
            return {}

    monkeypatch.setattr(codegen, "generate", fake)
    monkeypatch.setattr(portfolio, "bus_steps", lambda program: 0)
    monkeypatch.setattr(portfolio, "outside_op_set", lambda program, ops: None)  # stand-ins
    usable = {n: Named(n) for n in ("large", "small", "mid", "tie")}
    found = portfolio._rung(usable, REGISTERS, "A", "all", True, portfolio._NoDeadline(),
                            codegen.Memo())
    (length, _, order), name = found.key, found.name
    assert (length, name, order) == (7, "mid", 2)  # the tie goes to the earlier candidate
    screens = [(n, bound) for n, limits, bound in calls if limits is portfolio.SCREEN]
    assert screens == [("small", None), ("mid", 9), ("tie", 7), ("large", 7)]
    refines = [(n, bound) for n, limits, bound in calls if limits is not portfolio.SCREEN]
    assert refines == [("mid", 7), ("mid", 7)]
