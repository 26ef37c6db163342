"""Candidate decompositions of a definition's outputs, for code generation to choose from.

`search` runs the algebra's e-graph (`kalg.targets.scamp5.optimize`), seeded with the direct
constructions (Horner, the factor chains, the expression as written: `sources.seeds`), and takes
each construction's extraction as a candidate; large separable or factorable
kernels get the direct candidates only (`large_candidates`), and filters of more than
`JOINT_OUTPUTS` outputs none (their own programs are built in `kalg.targets.scamp5.filters`).
"""

from __future__ import annotations

from dataclasses import dataclass

from kalg import frontend
from kalg.algebra.decomp import Decomposition
from kalg.clock import Clock
from kalg.eqsat import engine
from kalg.settings import Deadline, Settings
from kalg.stages import Stage
from kalg.targets.scamp5 import portfolio
from kalg.targets.scamp5.codegen.chain import chain_widths
from kalg.targets.scamp5.optimize import Optimized, Options, optimize
from kalg.targets.scamp5.sources import (
    EGRAPH,
    EGRAPH_VARIANTS,
    FACTOR_CHAIN,
    FACTOR_CHAIN_HALVING_FIRST,
    HORNER,
    KERNEL,
    LARGE,
    SEPARABLE,
    SEPARABLE_COLUMN_FIRST,
    assemble,
    seeded_provenance,
    seeds,
)


@dataclass
class Found:
    """What `search` found: the candidates of each op set searched (name → decomposition),
    the search's statistics and the provenance of the e-graph's candidates, whether the
    kernel took the large path, and the e-graph's result (None where it was not run)."""

    stats: dict[str, object]
    candidates: dict[str, dict[str, Decomposition]]
    provenance: dict[str, list[str]]
    large: bool
    optimized: Optimized | None = None


def search(definition: frontend.Definition, settings: Settings, ops: str,
           deadline: Deadline, clock: Clock) -> Found:
    """The candidate decompositions of `definition`'s outputs under op set `ops` (and the op
    sets it includes), with the search's statistics. Under --emit egraph or decomposition only
    the e-graph is run (`Found.optimized`), and no candidates are made."""
    large = large_candidates(definition.outputs) if settings.emit is Stage.PROGRAM else None
    if large:
        # Large separable or factorable kernels: the direct candidates only (see LARGE_TAPS).
        stats: dict[str, object] = {"algebra e-graph": _LARGE_NOTE}
        provenance: dict[str, list[str]] = {}
        candidates = {ops: large}
    elif len(definition.outputs) > JOINT_OUTPUTS and settings.emit is Stage.PROGRAM:
        # Its candidates would not be searched (`_choose`): the filter's own programs only.
        stats, provenance, candidates = {"algebra e-graph": _FILTER_NOTE}, {}, {ops: {}}
    else:
        if settings.progress:
            settings.progress("e-graph: saturating the algebra, extracting decompositions")
        # Search the algebra: seeded e-graph, bounded saturation, DAG-cost extraction.
        optimized = optimize(definition.outputs, search_options(ops, settings, deadline),
                             definition.structure,
                             seeds(definition.outputs, KERNEL) if settings.emit is Stage.PROGRAM
                             else None)
        clock.lap("optimize")
        stats = search_stats(optimized)
        if settings.emit is not Stage.PROGRAM:
            return Found(stats, {}, {}, False, optimized)
        # Generate code for every candidate decomposition; the shortest verified program wins.
        shared = assemble(definition.outputs, optimized, KERNEL)
        extracted = {ops: optimized.decomposition, **optimized.extra}
        candidates = {op_set: {egraph_name(op_set, ops): extracted[op_set], **shared}
                      for op_set in extracted}
        provenance = {EGRAPH: optimized.provenance,
                      EGRAPH_VARIANTS: optimized.applied_provenance,
                      **seeded_provenance(optimized)}
        return Found(stats, candidates, provenance, False, optimized)
    return Found(stats, candidates, provenance, bool(large))


def search_options(ops: str, settings: Settings, deadline: Deadline) -> Options:
    """Search options. Without --time-limit and --timeout no wall-clock cap applies (counts
    decide, so the program does not depend on the machine's load); under --timeout, each of
    the two saturations (algebra, lowering) and the extraction get a quarter of the time left,
    so that code generation starts in time to find a program (a third each left it nothing,
    and a random 9x9 kernel with --timeout 1 ran 3 s)."""
    seconds = settings.time_limit
    extraction = None if seconds is None else 3 * seconds
    if deadline.end is not None:
        left = max(deadline.left(), 0.1) / 4
        seconds, extraction = min(seconds or left, left), min(extraction or left, left)
    limits = engine.SaturationLimits(nodes=settings.node_limit, seconds=seconds)
    included = portfolio.OP_ORDER[: portfolio.OP_ORDER.index(ops)]  # searched too (monotone)
    return Options(op_set=ops, limits=limits, extraction_seconds=extraction, also=included)


def egraph_name(op_set: str, ops: str) -> str:
    """The e-graph candidate's name: "e-graph", or "e-graph (basic)" for the basic extraction
    searched under op set all."""
    return EGRAPH if op_set == ops else f"{EGRAPH} ({op_set})"


LARGE_TAPS = 49
"""Kernels with more taps than this (beyond 7x7) that are separable or factor into integer factors
get only the direct candidates (the factor chain, row-then-column by Horner, Horner over the
whole kernel), and no e-graph: the e-graph's flat literals grow with the taps, and its
extraction and lowering with them, while the direct candidates are cheap to build. Below it the
e-graph runs as for any kernel."""


_LARGE_NOTE = (f"not run (more than {LARGE_TAPS} taps and separable or factorable: direct "
               "candidates only)")


LARGE_VALUES = 200
"""In the large path, candidates with more live values than this are left out: half of
`portfolio.MAX_VALUES`, the bound on any candidate: the large path screens several candidates of
one kernel, each given half the size the code generator takes at all."""


FLAT_LARGE_VALUES = 256
"""...except Horner over a kernel of one digit plane (a flat sum: no halvings, one add per tap),
admitted up to this many (about two values per tap: flat kernels up to about 11x11): a flat
sum's values are all alike, so the code generator screens it faster per value than a candidate
of several planes."""


CHAIN_WIDTH = 3
"""A factor of at most this many taps is a short sum: what one three-operand add (op set all)
sums once its shifted copies are in place, so a chain of such factors costs a few instructions
per factor. Longer factors group the kernel's row sums as the separable split does, in more
values (`large_candidates`)."""


def large_candidates(outputs: dict) -> dict[str, Decomposition] | None:
    """The direct candidates of a large kernel (`LARGE_TAPS`), or None for the full search.
    When the kernel is separable, the factor chain is offered only if its factors are short
    sums (`CHAIN_WIDTH`): a chain of long factors (a flat row's cyclotomic factors) groups the
    same row sums as row-then-column does, in more values, so it screens slower for a longer
    program."""
    if max(len(k.trimmed()) for k in outputs.values()) <= LARGE_TAPS:
        return None
    built = assemble(outputs, None, LARGE)
    chain, split = built.get(FACTOR_CHAIN), built.get(SEPARABLE)
    widths = [w for k in outputs.values() for w in chain_widths(k)]
    kept = set()
    if chain is not None and (split is None or max(widths) <= CHAIN_WIDTH):
        # both orders of halving: neither is shorter on every kernel (halving first keeps
        # values small and shares the outputs' common factors; halving after each factor
        # leaves the sums integer longer)
        kept |= {FACTOR_CHAIN, FACTOR_CHAIN_HALVING_FIRST}
    if split is not None:
        kept.add(SEPARABLE)
        if FACTOR_CHAIN not in kept:  # a chain of short factors already splits both axes
            kept.add(SEPARABLE_COLUMN_FIRST)
    if not kept:
        return None
    flat = all(abs(c) == 1 for k in outputs.values() for c in k.trimmed().taps.values())
    if len(built[HORNER].live()) <= (FLAT_LARGE_VALUES if flat else LARGE_VALUES):
        kept.add(HORNER)
    return {name: d for name, d in built.items() if name in kept}


JOINT_OUTPUTS = 3
"""Filters with more outputs than this skip code generation for the joint decomposition
candidates: searching a DAG of four to ten outputs takes tens of seconds (and with six
registers ends without a program), while the constant-matrix program (`_filter_programs`) was
shorter than that search on every filter of four or more outputs of the scaling study."""


_FILTER_NOTE = (f"not run (more than {JOINT_OUTPUTS} outputs: the joint decomposition is not "
                "searched, the filter's own programs are)")


def search_stats(o: Optimized) -> dict[str, object]:
    algebra = o.algebra
    stats: dict[str, object] = {
        "algebra e-graph": (f"{algebra.nodes} e-nodes, {algebra.stop_reason} after "
                            f"{algebra.iterations} iterations" if algebra else "not run"),
        "lowering e-graph": f"{o.enodes} e-nodes in {o.eclasses} e-classes",
        "lowering saturation": (f"{o.saturation.stop_reason} after "
                                f"{o.saturation.iterations} iterations"),
        "extraction": "optimal (ILP)" if o.optimal else "greedy or unproven",
        "estimated cost": round(o.cost, 3),
        "literals": o.literals,
        "seeds": ", ".join(f"{k} {v}" for k, v in sorted(o.analyses.items())),
        "provenance": o.provenance,
    }
    for name, terms in o.variants.items():
        stats[f"best term {name}"] = terms[0] if terms else "none"
    return stats
