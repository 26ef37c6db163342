"""Every source of SCAMP-5 candidates in one registry (`SOURCES`): its name (what a program's
provenance and `kalg bench`'s "won by" call it), whether it yields a decomposition that the code
generator realises or builds programs itself, and how it makes them, in words.

A decomposition source carries its construction, and `assemble` is the one place candidate
decompositions are put together: a scope (`KERNEL`, `STAGE`, `DIRECT`, `LARGE`) names the
sources a stage offers, in the order ties are broken. A definition's sources go through the
e-graph: `seeds` builds them, `optimize(..., seeded=...)` puts each into the lowering e-graph
as an equality with its outputs and extracts one candidate rooted at each, and `assemble` takes
that extraction in the source's place (the source's own DAG wherever the extractor keeps it).
Program sources (the filters' and channel filters' own constructions, the exact searches) are
run by their stage, with its budget and the bound of the best program so far, and named by the
constants below. `provenance` reads the registry, so a source is described once; the e-graph's
own candidates, and seeded ones the extractor changed, carry the rules on their path
(`optimize.Optimized.provenance`, `seeded_provenance`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from kalg.targets.scamp5.codegen.chain import factor_chain
from kalg.targets.scamp5.codegen.separable import separable_candidate
from kalg.targets.scamp5.common_parts import (
    COMMON_PART,
    COMMON_PART_ROWS,
    DIFFERENCES,
    DIFFERENCES_ROWS,
    SHARED_COLUMNS,
    SHARED_ROWS,
    common_part,
)
from kalg.targets.scamp5.common_parts import NAMES as COMMON_NAMES
from kalg.targets.scamp5.optimize import APPLIED, direct_decomposition
from kalg.targets.scamp5.optimize import AS_WRITTEN as SEEDED_AS_WRITTEN

if TYPE_CHECKING:
    from kalg.algebra.decomp import Decomposition
    from kalg.algebra.kernel import Kernel
    from kalg.targets.scamp5.optimize import Optimized

EGRAPH = "e-graph"
EGRAPH_VARIANTS = APPLIED  # the name `optimize` seeds the variants under
HORNER = "horner"
SEPARABLE = "separable"
SEPARABLE_COLUMN_FIRST = "separable, column first"
FACTOR_CHAIN = "factor chain"
FACTOR_CHAIN_HALVING_FIRST = "factor chain, halving first"
SPLIT_CHAIN = "split chain"
AS_WRITTEN = SEEDED_AS_WRITTEN  # the name `optimize` seeds the written term under
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
MIXED = "one mix of the inputs, then the filter on it"
MIXES = "each output's mix of the inputs, then its kernel on it"
STAGED = ("each output's kernels on its inputs from one e-graph per channel, summed or "
          "their common factor applied to their mix")
LAYER = "layer"


Build = Callable[[dict[str, "Kernel"], "Optimized | None"], "Decomposition | None"]
"""A decomposition source's construction: the outputs (register -> kernel) and the e-graph's
result (None where it did not run) -> its decomposition, or None where it has none."""


@dataclass(frozen=True, slots=True)
class Source:
    kind: str
    """"decomposition" (realised by the code generator) or "program" (builds programs)."""
    made: str | None = None
    """How it makes them, in words (the provenance line); None: the e-graph's own path, or
    the name says it."""
    build: Build | None = None
    """A decomposition source's construction (`assemble` calls it); None for program
    sources, which their stage runs with its budget and bound."""


def _egraph(outputs: dict, optimized: Optimized | None) -> Decomposition | None:
    return None if optimized is None else optimized.decomposition


def _variants(outputs: dict, optimized: Optimized | None) -> Decomposition | None:
    return None if optimized is None else optimized.applied


def _as_written(outputs: dict, optimized: Optimized | None) -> Decomposition | None:
    return None if optimized is None else optimized.as_written


def _horner(outputs: dict, optimized: Optimized | None) -> Decomposition:
    return direct_decomposition(outputs)


def _separable(column_first: bool) -> Build:
    return lambda outputs, _: separable_candidate(outputs, column_first=column_first)


def _chain(**how: bool) -> Build:
    return lambda outputs, _: factor_chain(outputs, **how)


def _common(name: str) -> Build:
    return lambda outputs, _: common_part(outputs, name)


SOURCES: dict[str, Source] = {
    EGRAPH: Source("decomposition", build=_egraph),
    EGRAPH_VARIANTS: Source("decomposition", build=_variants),
    HORNER: Source("decomposition", "digit planes (Horner), no e-graph", _horner),
    SEPARABLE: Source("decomposition", "row then column, each by Horner, no e-graph",
                      _separable(column_first=False)),
    SEPARABLE_COLUMN_FIRST: Source("decomposition",
                                   "column then row, each by Horner, no e-graph",
                                   _separable(column_first=True)),
    FACTOR_CHAIN: Source("decomposition", "integer factors applied in turn, no e-graph",
                         _chain()),
    FACTOR_CHAIN_HALVING_FIRST: Source(
        "decomposition", "integer factors applied in turn, each after its halvings, common "
                         "factors of the outputs first, no e-graph", _chain(halve_first=True)),
    SPLIT_CHAIN: Source("decomposition", "integer factors applied in turn, a factor that is "
                                         "factorable plus a tap as its own chain plus the "
                                         "tap, no e-graph", _chain(split=True)),
    AS_WRITTEN: Source("decomposition", "the expression as written, no e-graph", _as_written),
    SHARED_COLUMNS: Source("decomposition", "every output the sum of its columns, each "
                                            "distinct column made once, no e-graph",
                           _common(SHARED_COLUMNS)),
    SHARED_ROWS: Source("decomposition", "every output the sum of its rows, each distinct row "
                                         "made once, no e-graph", _common(SHARED_ROWS)),
    COMMON_PART: Source("decomposition", "the outputs' per-tap consensus made once, each "
                                         "output it plus its rest, by shared columns, no "
                                         "e-graph", _common(COMMON_PART)),
    COMMON_PART_ROWS: Source("decomposition", "the outputs' per-tap consensus made once, each "
                                              "output it plus its rest, by shared rows, no "
                                              "e-graph", _common(COMMON_PART_ROWS)),
    DIFFERENCES: Source("decomposition", "outputs made from other outputs moved, each plus "
                                         "its rest, by shared columns, no e-graph",
                        _common(DIFFERENCES)),
    DIFFERENCES_ROWS: Source("decomposition", "outputs made from other outputs moved, each "
                                              "plus its rest, by shared rows, no e-graph",
                             _common(DIFFERENCES_ROWS)),
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
    MIXED: Source("program"),
    MIXES: Source("program"),
    STAGED: Source("program"),
    LAYER: Source("program", "a layer: its groups' programs in sequence, each its own compile"),
}


DIRECT = (HORNER, FACTOR_CHAIN)
"""The direct decompositions of a filter's stage (`filters.output_stage`, the channel
programs' stages): each stage is compiled once per register file and order tried, so only the
two cheapest constructions."""

STAGE = (EGRAPH, EGRAPH_VARIANTS, *DIRECT)
"""A stage's candidates: the e-graph's extraction and variants, then `DIRECT`."""

KERNEL = (EGRAPH_VARIANTS, HORNER, AS_WRITTEN, FACTOR_CHAIN, FACTOR_CHAIN_HALVING_FIRST,
          SPLIT_CHAIN)
"""A definition's candidates besides its e-graph extraction of each op set (named by
`candidates.egraph_name`, first)."""

COMMON = COMMON_NAMES
"""A filter's decompositions that make a sub-kernel common to several outputs once
(`common_parts`), searched after the filter's other programs (`filters`), which they replace
only where shorter."""

LARGE = (FACTOR_CHAIN, FACTOR_CHAIN_HALVING_FIRST, SEPARABLE, SEPARABLE_COLUMN_FIRST, HORNER)
"""A large kernel's candidates (no e-graph), as `candidates.large_candidates` admits them."""


def assemble(outputs: dict, optimized: Optimized | None, scope: tuple[str, ...],
             ) -> dict[str, Decomposition]:
    """The candidate decompositions of `outputs`: each source of `scope` that has one, in that
    order (the tie order: ties keep the earlier candidate). Every assembly of candidates, of a
    definition, a filter's stage or a large kernel, goes through here."""
    found = {}
    for name in scope:
        build = SOURCES[name].build
        assert build is not None, f"{name} is not a decomposition source"
        seeded = None if optimized is None else optimized.seeded.get(name)
        if seeded is not None:
            found[name] = seeded.decomposition
        elif (decomposition := build(outputs, optimized)) is not None:
            found[name] = decomposition
    return found


def seeds(outputs: dict, scope: tuple[str, ...]) -> dict[str, Decomposition]:
    """The decompositions of `scope`'s sources that need no e-graph (`assemble` before it),
    to seed it: `optimize(..., seeded=...)` extracts one candidate rooted at each, and
    `assemble` then takes the extraction in the source's place (the e-graph's own sources,
    its variants and the expression as written, are seeded by `optimize` itself)."""
    return assemble(outputs, None, scope)


def seeded_provenance(optimized: Optimized) -> dict[str, list[str]]:
    """The path of each seeded candidate the extractor changed (`Seeded.same` false): its
    source's line, then the lowering rules the extraction went through. Candidates it kept
    as seeded have their source's line alone (`provenance`)."""
    found = {}
    for name, extraction in optimized.seeded.items():
        if not extraction.same:
            made = SOURCES[name].made
            found[name] = optimized.applied_provenance if made is None else [made, "lowering"]
    return found


def provenance(winner: str, egraph: dict[str, list[str]]) -> list[str]:
    """The path of the candidate `winner`: the rules behind it for the e-graph's candidates
    and the seeded ones the extractor changed (`egraph`, by candidate), the source's own line
    for the others, else its name."""
    source = SOURCES.get(winner)
    if winner in egraph:
        return egraph[winner]
    if source is not None and source.made is not None:
        return [source.made]
    return [winner]
