"""Every source of SCAMP-5 candidates in one registry (`SOURCES`): its name (what a program's
provenance and `kalg bench`'s "won by" call it), whether it yields a decomposition that the code
generator realises or builds programs itself, and how it makes them, in words.

The stages that assemble candidates (`candidates`, `filters`, `channel_programs`, `pipeline`'s
exact searches) name them by the constants below, and `provenance` reads the registry, so a
source is described once. The e-graph's own candidates carry the rules on their path
(`optimize.Optimized.provenance`). Still to come (issue 25, item 2): the decomposition sources
seeding the e-graph as equalities with the literal, so that extraction picks among them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from kalg.algebra.decomp import Decomposition

EGRAPH = "e-graph"
EGRAPH_VARIANTS = "e-graph variants"
HORNER = "horner"
SEPARABLE = "separable"
SEPARABLE_COLUMN_FIRST = "separable, column first"
FACTOR_CHAIN = "factor chain"
FACTOR_CHAIN_HALVING_FIRST = "factor chain, halving first"
SPLIT_CHAIN = "split chain"
AS_WRITTEN = "as written"
EXHAUSTIVE = "exhaustive search"
KEPT = "kept value"
FACTORED = "shortest factors"
MATRIX = "shared matrix"
CSE = "shared shifted sums"
REVERSE = "outputs built backwards"
GOAL_BAGS = "goal bags"
ONE_AT_A_TIME = "outputs one at a time"
LAST_IN_PLACE = "last output in place"
CLEARED = "every output zero: its register cleared"


@dataclass(frozen=True, slots=True)
class Source:
    kind: str
    """"decomposition" (realised by the code generator) or "program" (builds programs)."""
    made: str | None = None
    """How it makes them, in words (the provenance line); None: the e-graph's own path, or
    the name says it."""


SOURCES: dict[str, Source] = {
    EGRAPH: Source("decomposition"),
    EGRAPH_VARIANTS: Source("decomposition"),
    HORNER: Source("decomposition", "digit planes (Horner), no e-graph"),
    SEPARABLE: Source("decomposition", "row then column, each by Horner, no e-graph"),
    SEPARABLE_COLUMN_FIRST: Source("decomposition",
                                   "column then row, each by Horner, no e-graph"),
    FACTOR_CHAIN: Source("decomposition", "integer factors applied in turn, no e-graph"),
    FACTOR_CHAIN_HALVING_FIRST: Source(
        "decomposition", "integer factors applied in turn, each after its halvings, common "
                         "factors of the outputs first, no e-graph"),
    SPLIT_CHAIN: Source("decomposition", "integer factors applied in turn, a factor that is "
                                         "factorable plus a tap as its own chain plus the "
                                         "tap, no e-graph"),
    AS_WRITTEN: Source("decomposition", "the expression as written, no e-graph"),
    EXHAUSTIVE: Source("program", "exact search over all programs, no e-graph"),
    KEPT: Source("program", "a value of the first instruction kept to the last, the middle "
                            "by the exact search, no e-graph"),
    FACTORED: Source("program", "the exact search's shortest program of each group of "
                                "integer factors, one after another, no e-graph"),
    MATRIX: Source("program", "outputs as a constant-matrix multiplication over the input "
                              "divided once, no e-graph"),
    CSE: Source("program"),
    REVERSE: Source("program"),
    GOAL_BAGS: Source("program", "outputs built backwards from bags of goals, op set all "
                                 "(multiples of the input, shifted sums), no e-graph"),
    ONE_AT_A_TIME: Source("program", "each output's own compile, one after another"),
    LAST_IN_PLACE: Source("program", "constant-matrix program, the last output made in place "
                                     "from the others"),
    CLEARED: Source("program"),
}


def provenance(winner: str, egraph: dict[str, list[str]]) -> list[str]:
    """The path of the candidate `winner`: the rules behind it for the e-graph's candidates
    (`egraph`, by candidate), the source's own line for the others, else its name."""
    source = SOURCES.get(winner)
    if source is not None and source.made is not None:
        return [source.made]
    return egraph.get(winner, [winner])


def direct_candidates(outputs: dict) -> dict[str, Decomposition]:
    """The direct decompositions every stage adds to its candidates for `outputs`: Horner's
    digit planes, then the factor chain where the outputs factor (in that order: ties keep
    the earlier candidate)."""
    from kalg.targets.scamp5 import codegen
    from kalg.targets.scamp5.optimize import direct_decomposition

    found = {HORNER: direct_decomposition(outputs)}
    if (chain := codegen.factor_chain(outputs)) is not None:
        found[FACTOR_CHAIN] = chain
    return found
