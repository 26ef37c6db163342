"""One registry of candidate sources (`kalg.targets.scamp5.sources`): every candidate the
stages assemble is named there, and its provenance is the registry's line."""

from __future__ import annotations

from fractions import Fraction

from kalg.algebra.kernel import Kernel
from kalg.targets.scamp5 import candidates
from kalg.targets.scamp5.sources import EGRAPH, HORNER, SOURCES, provenance


def test_the_direct_candidates_of_a_large_kernel_are_registered_sources():
    box = Kernel.of({(x, y): Fraction(1) for x in range(-4, 5) for y in range(-4, 5)})
    found = candidates.large_candidates({"A": box})
    assert found and set(found) <= set(SOURCES)
    assert candidates.egraph_name("all", "all") == EGRAPH


def test_provenance_is_the_registry_line_else_the_egraph_path_else_the_name():
    assert provenance(HORNER, {}) == [SOURCES[HORNER].made]
    assert provenance(EGRAPH, {EGRAPH: ["ring laws: x"]}) == ["ring laws: x"]
    assert provenance("e-graph (basic)", {}) == ["e-graph (basic)"]
    assert all(s.kind in ("decomposition", "program") for s in SOURCES.values())
