"""How much the code generator may search: the knobs, and the budget one `generate` call shares.

Every bound is a count (states kept, moves tried, states expanded), so the same input gives the
same program on any machine; a wall-clock cap exists for callers that prefer a deadline.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from kalg.targets.scamp5.codegen.heuristic import Weights


@dataclass(frozen=True, slots=True)
class Limits:
    """Search bounds. Unless `seconds` is set, the result depends only on these, never on
    the clock.

    With the defaults one decomposition of the benchmark kind takes a fraction of a second to
    about two seconds (8000 expansions in all at most; about a millisecond each).
    """

    beam: int = 48
    """States kept per instruction count."""
    children: int = 24
    """Best children kept per expanded state."""
    moves: int = 48
    """Moves per state that get a full evaluation (the best by a cheap local ranking among
    those that fit the register budget)."""
    moves_per_goal: int = 64
    """A goal's own moves considered, best first (moves reusing wanted values always are)."""
    expansions: int = 3000
    """States expanded before one search stops with what it has."""
    total_expansions: int = 8000
    """States expanded over all the searches of one `generate` call: past it, searches that
    have found something stop and later ones are skipped (the fallback schedule remains)."""
    portfolio: tuple[Weights, ...] = (Weights(), Weights(shift=0.7),
                                      Weights(self_difference=True))
    """Ranking weights to search with, one search each (the shortest program wins): a beam
    misses different things under different rankings; two cover the benchmarks, the third
    finds the centre-difference Laplacians (`Weights.self_difference`)."""
    solutions: int = 4
    """Complete schedules kept (register allocation tries them in order)."""
    in_sequence: bool = True
    """Also compile a filter's outputs one after another when the joint search found a program
    (the shorter wins). When False, the sequence is tried only if the joint search found none:
    screening saves the time, the refine of the best candidate still compares both."""
    extend: bool = True
    """Whether a search that has found nothing within `expansions` may go on for long programs
    (`search.LONG`); off for the portfolio's cheap rungs, where a tight register file would make
    every search run to its extended cap."""
    seconds: float | None = None
    """Optional wall-clock cap for one `generate` call. Off by default because it makes the
    result depend on the machine's speed; when it expires, the searches stop with what they
    have, and one that has found nothing yet stops too (at the end of its current level; the
    fallback schedule remains): a user's --timeout is honoured."""


QUICK = Limits(beam=12, children=8, moves=16, moves_per_goal=24, expansions=600,
               portfolio=(Weights(),), in_sequence=False)
"""A small budget for tests, previews and screening: valid programs, less searching for short
ones; outputs in sequence only when the joint search finds nothing."""


HELD_OPERANDS = 80_000
"""Operands a search's memo may hold (`memo.Memo.held`) before its searches stop. Memory grows
with the operands a search makes, about 5-15 KB each with their moves, bags and rankings
(docs/robustness.md, "Memory"): 80,000 is about 0.6-1 GB, so that the two processes of a
ladder (`kalg.workers`) stay under 2 GiB together. A count, so the program is the same on any
machine, whatever its memory or load. A single 3x3 kernel's whole compile makes about 30,000
(at most about 6,000 in one search); banks of 3x3 kernels and 7x7 kernels reach the bound.
Past half of it, the memo is trimmed between searches (`memo.Memo.trim`)."""


class Budget:
    """Expansions and wall-clock time shared by the searches of one `generate` call, and the
    longest program worth finding (`longest`).

    `longest` (None: any length) is the caller's bound: a program longer than it cannot win
    (another candidate already has one that short), so every search of the call stops at the
    first level of the beam beyond it and drops states whose lower bound passes it. Once the
    call itself finds a program, `longest` falls to that program's length. The bound is a
    count, like every other one: the result stays deterministic."""

    def __init__(self, limits: Limits, longest: int | None = None,
                 held: Callable[[], int] | None = None):
        self.left = limits.total_expansions
        self.held = held
        """The operands the call's memo holds (`memo.Memo.held`), None: not counted."""
        self.deadline = None if limits.seconds is None else time.monotonic() + limits.seconds
        self.longest = longest

    def tighten(self, length: int) -> None:
        """A program of `length` instructions is found: longer ones are no longer worth it."""
        if self.longest is None or length < self.longest:
            self.longest = length

    def within(self, length: int) -> bool:
        """Whether a program (or schedule) of `length` instructions is worth keeping."""
        return self.longest is None or length <= self.longest

    def late(self) -> bool:
        """Whether the wall-clock cap (`Limits.seconds`, set under --timeout only) has passed:
        every search of the call then stops, found something or not."""
        return self.deadline is not None and time.monotonic() > self.deadline

    def full(self) -> bool:
        """Whether the call's memo holds more than `HELD_OPERANDS` operands: its searches then
        stop with what they have, as when their expansions are spent. A count, so the
        program never depends on the machine's memory (see `HELD_OPERANDS`)."""
        return self.held is not None and self.held() > HELD_OPERANDS

    def spent(self) -> bool:
        return self.late() or self.left <= 0 or self.full()
