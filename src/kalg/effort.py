"""How hard kalg searches (`kalg optimize --effort LEVEL`): named levels of count budgets.

A level widens the code generator's refine searches (the wide beam search each screened
candidate may get again: `programs`, `portfolio`), the lower bound's exact search
(`exact.bounds`) and the goal-bag search of op set all (`codegen.goalbag`: 60000, 120000 and
240000 bags made; it runs its searches in a fixed order, so a larger count sees every program a
smaller one saw, and it takes filters of up to 2000 bags per tap: 30 taps at default, a whole
7x7 kernel at high and max, `goalbag.max_taps`). Every budget is a count, so a level's program
is the same on any machine, busy or idle. A level above `default` runs every search `default`
runs as well, and the shortest program wins, so its program is never longer than default's from
the code generator.

Levels (`LEVELS`):

* ``default`` the budgets every other page of the documentation measures;
* ``high``    each refine search with 4x the expansions and 2x the beam and moves, and the
              best 3 screened candidates refined (not just the best), where the best screened
              program has at most 40 instructions (`Effort.up_to`), and each output of a
              filter also compiled alone as its stage of the outputs one at a time
              (`Effort.own_stages`);
* ``max``     8x the expansions, 2x the beam and moves, the best 5 candidates refined (also
              up to 40 instructions), the own stages too, and the bound's exact search with
              100000 nodes. Measured (docs/cain-families.md, before the own stages): 15-37 s
              of CPU on 3x3 kernels, 72-141 s on banks and large kernels, so not yet within
              the 60 s of CPU the issue asks for there.

The level in force is a context variable (`using`), set by the pipeline for one compile and
read by the searches: the forked workers of `kalg.workers` inherit it.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Iterator
from contextvars import ContextVar
from dataclasses import dataclass


@dataclass(frozen=True)
class Effort:
    """The budgets of one level, as multiples of the default's."""

    name: str
    expansions: int = 1
    """Factor on a refine search's expansions (per search and in all)."""
    beam: int = 1
    """Factor on a refine search's beam width and moves evaluated per state."""
    refined: int = 1
    """How many of the best screened candidates get the wider refine search."""
    bound_nodes: int | None = None
    """Node budget of the lower bound's exact search (None: `Settings.bound_nodes`)."""
    goal_bags: int = 60_000
    """Bags the goal-bag search makes (`codegen.goalbag`, op set all), a count. The default
    lets both of its narrowest searches (beam 24) run to their end on a dense 3x3 kernel, so
    that the anytime search returns a program on the common case rather than stopping inside
    its first search: one such search makes 2,000-21,000 bags on a 3x3 kernel and
    7,000-110,000 on a 5x5 one (docs/cain-families.md, "The goal-bag budget")."""
    own_stages: bool = False
    """Whether each stage of a filter's outputs one at a time (`filters.output_stage`) also
    gets the output's kernel compiled alone, moved into the stage (`codegen.relocate`), so
    that a filter is never longer than its outputs compiled alone, summed, where each of those
    programs fits its stage. It costs one whole compile per output (bank3 of seed 1073043852:
    26 -> 45 s of CPU at default), so high and max only."""
    up_to: int = 40
    """The wider searches run only where the screened program has at most this many
    instructions: their cost grows with the program's length (a 7x7 dense kernel's ~45
    instructions took more than two minutes of CPU), and short programs are where they win."""

    def widens(self, length: int) -> bool:
        """Whether a candidate screened at `length` instructions gets the wider searches."""
        return not self.default and length <= self.up_to

    def widened(self, limits):
        """`limits` (a `codegen.Limits`) scaled by this level."""
        return dataclasses.replace(
            limits, beam=limits.beam * self.beam, moves=limits.moves * self.beam,
            expansions=limits.expansions * self.expansions,
            total_expansions=limits.total_expansions * self.expansions)

    @property
    def default(self) -> bool:
        return self.expansions == self.beam == self.refined == 1


LEVELS = {
    "default": Effort("default"),
    "high": Effort("high", expansions=4, beam=2, refined=3, goal_bags=120_000,
                   own_stages=True),
    "max": Effort("max", expansions=8, beam=2, refined=5, bound_nodes=100_000,
                  goal_bags=240_000, own_stages=True),
}

_CURRENT: ContextVar[Effort] = ContextVar("effort", default=LEVELS["default"])


def current() -> Effort:
    """The level in force (default outside `using`)."""
    return _CURRENT.get()


@contextlib.contextmanager
def using(name: str) -> Iterator[Effort]:
    """Run the block at level `name` (a key of `LEVELS`)."""
    if name not in LEVELS:
        raise ValueError(f"unknown effort {name!r}; choose one of {', '.join(LEVELS)}")
    token = _CURRENT.set(LEVELS[name])
    try:
        yield LEVELS[name]
    finally:
        _CURRENT.reset(token)
