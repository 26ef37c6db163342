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


def test_every_scope_assembles_registered_decomposition_sources_only():
    from kalg.targets.scamp5.sources import COMMON, DIRECT, KERNEL, LARGE, STAGE

    for scope in (COMMON, DIRECT, KERNEL, LARGE, STAGE):
        assert all(SOURCES[n].kind == "decomposition" and SOURCES[n].build for n in scope)
    assert all(s.build is None for s in SOURCES.values() if s.kind == "program")


def test_the_direct_candidates_of_a_stage_are_assembled_in_their_scope_order():
    from kalg.targets.scamp5.sources import DIRECT, FACTOR_CHAIN, assemble

    binomial = Kernel.from_rows([[1, 2, 1], [2, 4, 2], [1, 2, 1]]).scale(Fraction(1, 16))
    assert list(assemble({"A": binomial}, None, DIRECT)) == [HORNER, FACTOR_CHAIN]
    flat = Kernel.of({(0, 0): Fraction(1), (1, 0): Fraction(3)})  # 1 + 3x: no two factors
    assert list(assemble({"A": flat}, None, DIRECT)) == [HORNER]


def test_the_channel_constructions_and_layers_are_registered_sources():
    from kalg.targets.scamp5 import channel_programs
    from kalg.targets.scamp5.sources import LAYER

    for name in (channel_programs.MIXED, channel_programs.MIXES, channel_programs.STAGED, LAYER):
        assert SOURCES[name].kind == "program"


def test_a_channel_filters_program_and_a_cleared_program_name_their_source():
    from kalg.targets.scamp5.pipeline import Settings, compile_text

    head = "target scamp5 { registers: A..F, input: A B }\n"
    mixed = compile_text(head + "kernel one = [1]\nfilter f = [C: one * A - one * B]\n",
                         "f.kalg", Settings())
    assert mixed.stats["provenance"] == provenance(mixed.stats["candidate"], {})
    zero = compile_text("target scamp5 { registers: A..F, input: A }\n"
                        "filter z = [B: [0]]\n", "z.kalg", Settings())
    assert zero.stats["provenance"] == provenance(zero.stats["candidate"], {})
