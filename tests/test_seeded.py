"""Decomposition sources seed the lowering e-graph (issue 25, item 2): each source's DAG is
unioned with its outputs' e-classes as a term, and its candidate is the extraction rooted there
(the source's own DAG, as built, where the extractor keeps it)."""

from __future__ import annotations

from fractions import Fraction

from kalg.algebra.decomp import DagBuilder, Op
from kalg.algebra.kernel import Kernel
from kalg.eqsat import engine, extract
from kalg.eqsat.dag_terms import same_dag, seed
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
    data, _ = engine.saturate(FAMILIES, lowering_facts({"A": []}, outputs), LOWERING,
                              FAST.limits)
    graph = extract.Graph(data)
    before = set(graph.nodes)
    nodes = seed(graph, horner, "s0", {"A": graph.lets["out_A"]})
    (_, root), = horner.outputs
    assert graph.nodes[nodes[root]].eclass == graph.lets["out_A"]
    assert set(nodes) == set(horner.live())
    # hash-consed: the input and the shifts the e-graph holds are its own e-nodes, not copies
    shifts = [i for i in horner.live() if horner.values[i].op is Op.SHIFT]
    assert nodes[0] in before and any(nodes[i] in before for i in shifts)


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
    outputs = {"A": BINOMIAL}
    optimized = optimize(outputs, FAST, None, seeds(outputs, KERNEL))
    paths = seeded_provenance(optimized)
    changed = [name for name, extraction in optimized.seeded.items() if not extraction.same]
    assert len(paths) == len(changed) > 0  # the binomial's variants: the extractor changes them
    for name, path in paths.items():
        made = SOURCES[name].made
        assert path[-1] == "lowering" and (made is None or path[0] == made)
    assert set(paths) <= {*seeds(outputs, KERNEL), EGRAPH_VARIANTS}


def test_the_egraphs_own_extraction_is_the_same_with_or_without_seeds():
    outputs = {"A": BINOMIAL}
    plain = optimize(outputs, FAST)
    seeded = optimize(outputs, FAST, None, seeds(outputs, KERNEL))
    assert plain.seeded == {} and seeded.seeded
    assert plain.decomposition == seeded.decomposition and plain.cost == seeded.cost
