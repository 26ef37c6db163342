"""The shortest program over one set of candidate decompositions (`best_program`): every
candidate screened, the most promising refined, on the worker processes; deterministic.

The budgets (screen, refine, the narrow refine) are the portfolio's
(`kalg.targets.scamp5.portfolio`): one definition serves its register rungs, the large-kernel path
and the filters' stages.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from kalg import effort, workers
from kalg.algebra.decomp import Decomposition
from kalg.diagnostics import RegisterPressureError
from kalg.settings import Deadline
from kalg.targets.scamp5 import codegen, portfolio
from kalg.targets.scamp5.candidates import FLAT_LARGE_VALUES
from kalg.targets.scamp5.machine.isa import Instr, bus_steps

SCREEN, REFINE, REFINE_NARROW = portfolio.SCREEN, portfolio.REFINE, portfolio.REFINE_NARROW

REFINED = 1
"""How many screened candidates are searched again with `REFINE`: the best one. The best is also
searched with `REFINE_NARROW`, so a second refine would cost a search per kernel for a candidate
that screened worse."""


REFINE_MARGIN = 0
"""...of those at most this many instructions longer than the best screened program."""


LARGE_REFINE_MARGIN = 4
"""In the large path, only candidates whose screened program is at most 1/this longer than the best
screened one are refined: refining shortens a program by a fraction of its length, so a
candidate a quarter longer than the best is not worth a refine's time."""


LARGE_REFINE_VALUES = FLAT_LARGE_VALUES
"""In the large path, candidates with at most this many live values are refined with `REFINE`,
except the separable ones (`SEPARABLE_REFINE_VALUES`): every admitted Horner, since a flat sum
is the candidate the code generator refines fastest per value."""


SEPARABLE_REFINE_VALUES = 64
"""The separable candidate screened shorter (row then column, or column then row) is refined only
up to this many live values: refining a long flat sum costs time that grows with its side for a
saving of a few instructions, while on mid-sized kernels it pays. The beam search is not
monotone in its budget, which costs time only: the shortest program wins."""


def best_program(candidates: dict[str, Decomposition], registers: tuple[str, ...],
                  input_register: str, ops: str, deadline: Deadline | None = None,
                  progress: Callable[[str], None] | None = None, large: bool = False,
                  ) -> tuple[list[Instr], str, str | None]:
    """The shortest program (then fewest bus steps) over all candidates and searches, the
    name of the candidate it came from, and why the search stopped early (None: it did not).
    Ties keep the earlier candidate (deterministic). Past the deadline no further search
    starts, and a running one stops with what it has; without any program that is an error.
    `large`: refine as `LARGE_REFINE_VALUES` says, no narrow refine."""
    deadline = deadline or Deadline(None)
    usable = portfolio.searchable(candidates)
    screens = [(name, order, SCREEN) for order, name in enumerate(usable)]
    longest = None  # the screens' best length, once known: a refine only wins within it

    def attempt(job: tuple[str, int, codegen.Limits], number: int, count: int):
        name, order, limits = job
        if deadline.passed():
            return None
        if progress:
            progress(f"code generation: search {number} of {count} ({name})")
        if large:
            limits = _flat_sum_limits(limits)
        try:
            program = portfolio.generate_within(usable[name], registers, input_register, ops,
                                                limits, deadline, longest=longest)
        except RegisterPressureError as err:
            return err
        if program is None:
            return None
        return (len(program), bus_steps(program), order), name, program

    found, pressure = _searched(attempt, screens, usable, 0)
    if found:  # screening done: refine the most promising
        refines = _large_refines(sorted(found), usable) if large else _refines(sorted(found))
        longest = min(found)[0][0]
        found += _searched(attempt, refines, usable, len(screens))[0]
    stop = portfolio.timeout_stop(deadline, found=bool(found))
    if not found:
        assert pressure is not None
        raise pressure
    _, winner, best = min(found, key=lambda f: f[0])
    return best, winner, stop


def _searched(attempt: Callable, jobs: list[tuple[str, int, codegen.Limits]], usable: dict,
              before: int) -> tuple[list, RegisterPressureError | None]:
    """The programs of independent searches `jobs` (`attempt(job, number, count)`), computed
    on the worker processes (`workers.ordered_map`, the candidates with most values first)
    and taken in the jobs' order, and the last RegisterPressureError among them (None: none)."""
    count = before + len(jobs)
    first = sorted(range(len(jobs)), key=lambda i: (-len(usable[jobs[i][0]].live()), i))
    outcomes = workers.ordered_map(lambda i: attempt(jobs[i], before + i + 1, count),
                                   len(jobs), first)
    found, pressure = [], None
    for outcome in outcomes:
        if isinstance(outcome, RegisterPressureError):
            pressure = outcome
        elif outcome is not None:
            found.append(outcome)
    return found, pressure


def _flat_sum_limits(limits: codegen.Limits) -> codegen.Limits:
    """`limits` without the centre-difference ranking (`Weights.self_difference`), for the
    large path: a difference against a neighbour in one `subx` pays where it is a large share
    of a short sum, while on the long flat sums of large kernels its three-way splits cost
    about four times the code generation for no shorter
    program on any large kernel of the suites."""
    kept = tuple(w for w in limits.portfolio if not w.self_difference)
    return dataclasses.replace(limits, portfolio=kept)


def _large_refines(screened: list, usable: dict) -> list[tuple[str, int, codegen.Limits]]:
    """The refines of the large path: see `LARGE_REFINE_VALUES`, `SEPARABLE_REFINE_VALUES`
    and `LARGE_REFINE_MARGIN`."""
    def bound(name: str) -> int:
        return SEPARABLE_REFINE_VALUES if name.startswith("separable") else LARGE_REFINE_VALUES
    best = screened[0][0][0]
    # One axis order of a separable kernel: the one screened shorter (the first on a tie).
    first = next((name for _, name, _ in screened if name.startswith("separable")), None)
    return [(name, order, REFINE) for (length, _, order), name, _ in screened
            if len(usable[name].live()) <= bound(name)
            and length <= best + best // LARGE_REFINE_MARGIN
            and (name == first or not name.startswith("separable"))]


def _refines(screened: list) -> list[tuple[str, int, codegen.Limits]]:
    """The searches after screening: `REFINED` candidates within `REFINE_MARGIN` of the best
    with `REFINE`, and the best once more with `REFINE_NARROW`."""
    jobs = [(name, order, REFINE) for (length, _, order), name, _ in screened[:REFINED]
            if length <= screened[0][0][0] + REFINE_MARGIN]
    (_, _, order), name, _ = screened[0]
    level = effort.current()  # a higher level runs these and wider searches (`kalg.effort`)
    wider = [] if not level.widens(screened[0][0][0]) else [
        *((n, o, level.widened(REFINE)) for (_, _, o), n, _ in screened[:level.refined]),
        (name, order, level.widened(REFINE_NARROW))]
    return [*jobs, (name, order, REFINE_NARROW), *wider]
