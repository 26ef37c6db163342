"""Decomposition sources seed the lowering e-graph (issue 25, item 2): each source's DAG is
unioned with its outputs' e-classes as a term, and its candidate is the extraction rooted there
(the source's own DAG, as built, where the extractor keeps it)."""

from __future__ import annotations

from fractions import Fraction

from kalg.algebra.decomp import DagBuilder
from kalg.algebra.kernel import Kernel
from kalg.eqsat import engine, extract
from kalg.eqsat.dag_terms import img_lets, same_dag, seed_nodes
from kalg.targets.scamp5.codegen.chain import factor_chain
from kalg.targets.scamp5.optimize import (
    APPLIED,
    FAMILIES,
    LOWERING,
    Options,
    direct_decomposition,
    lowering_facts,
    optimize,
)
from kalg.targets.scamp5.sources import (
    EGRAPH_VARIANTS,
    FACTOR_CHAIN,
    HORNER,
    KERNEL,
    SOURCES,
    assemble,
    seeded_provenance,
    seeds,
)

BINOMIAL = Kernel.from_rows([[1, 2, 1], [2, 4, 2], [1, 2, 1]]).scale(Fraction(1, 16))
SOBEL = Kernel.from_rows([[1, 0, -1], [2, 0, -2], [1, 0, -1]])
FAST = Options(limits=engine.SaturationLimits(iterations=6, nodes=8000))


def test_a_dag_is_the_same_whatever_order_its_values_were_built_in():
    a, b = DagBuilder(), DagBuilder()
    left, right = a.shift(a.input, 1, 0), a.shift(a.input, -1, 0)
    one = a.build({"A": a.half(a.add(left, right))})
    right, left = b.shift(b.input, -1, 0), b.shift(b.input, 1, 0)
    other = b.build({"A": b.half(b.add(right, left))})
    assert one.values != other.values and same_dag(one, other)
    c = DagBuilder()
    assert not same_dag(one, c.build({"A": c.add(c.shift(c.input, 1, 0),
                                                  c.shift(c.input, -1, 0))}))


def test_a_seeded_source_term_is_in_its_outputs_e_class():
    outputs = {"A": SOBEL}
    horner = direct_decomposition(outputs)
    facts = lowering_facts({"A": []}, outputs, {HORNER: horner})
    data, _ = engine.saturate(FAMILIES, facts, LOWERING, FAST.limits)
    graph = extract.Graph(data)
    lets, roots = img_lets(horner, "s0")
    assert len(lets) == len(horner.live()) - 1  # every value but the input, once
    assert graph.lets[roots["A"].lstrip("$")] == graph.lets["out_A"]
    nodes = seed_nodes(graph, horner, "s0")
    assert {graph.nodes[nodes[i]].op for i in horner.live()} <= {"Input", "Shift", "Add",
                                                                 "Sub", "Neg", "Half"}


def test_every_seeded_source_is_extracted_rooted_at_its_own_term():
    outputs = {"A": BINOMIAL}
    seeded = seeds(outputs, KERNEL)
    assert list(seeded) == [HORNER, FACTOR_CHAIN, "factor chain, halving first"]
    optimized = optimize(outputs, FAST, None, seeded)
    assert list(optimized.seeded) == [*seeded, APPLIED]
    for name, extraction in optimized.seeded.items():
        assert extraction.decomposition.output_kernels() == outputs, name
        if extraction.same:  # kept as the source built it: the code generator sees that DAG
            assert extraction.decomposition == {**seeded, APPLIED: optimized.applied}[name]
    assembled = assemble(outputs, optimized, KERNEL)
    for name in seeded:
        assert assembled[name] == optimized.seeded[name].decomposition


def test_a_seeded_candidates_provenance_names_its_source():
    outputs = {"A": SOBEL}
    optimized = optimize(outputs, FAST, None, seeds(outputs, KERNEL))
    paths = seeded_provenance(optimized)
    for name, path in paths.items():
        made = SOURCES[name].made
        assert path[-1] == "lowering" and (made is None or path[0] == made)
    assert set(paths) <= {*seeds(outputs, KERNEL), EGRAPH_VARIANTS}


def test_without_seeds_the_lowering_e_graph_is_as_before():
    outputs = {"A": BINOMIAL}
    assert lowering_facts({"A": []}, outputs) == lowering_facts({"A": []}, outputs, None)
    assert optimize(outputs, FAST).seeded == {}
    chain = factor_chain(outputs)
    assert chain is not None and "(let $s0_" in lowering_facts({"A": []}, outputs,
                                                               {FACTOR_CHAIN: chain})
