"""Normalisation of decompositions into networks of signed, shifted sums."""

from __future__ import annotations

from kalg.algebra.decomp import DagBuilder
from kalg.targets.scamp5.codegen.network import INPUT_NODE, Kind, normalise


def test_shifts_and_negations_fold_into_terms():
    b = DagBuilder()
    v = b.add(b.neg(b.shift(b.input, 1, 0)), b.shift(b.input, 0, -2))
    net = normalise(b.build({"A": b.shift(v, 1, 1)}))
    assert net.outputs == (("A", ((INPUT_NODE, 1, -1, 1), (INPUT_NODE, 2, 1, -1))),)
    assert len(net.nodes) == 1


def test_shared_sum_becomes_a_node_and_single_use_is_inlined():
    b = DagBuilder()
    pair = b.add(b.input, b.shift(b.input, 1, 0))          # read by two consumers
    once = b.add(pair, b.shift(b.input, 0, 1))               # read once, by the output
    decomp = b.build({"A": once, "B": b.shift(pair, 0, 2)})
    net = normalise(decomp)
    assert [n.kind for n in net.nodes] == [Kind.INPUT, Kind.SUM]
    assert dict(net.outputs)["A"] == ((INPUT_NODE, 0, 1, 1), (1, 0, 0, 1))
    assert dict(net.outputs)["B"] == ((1, 0, 2, 1),)


def test_inline_cap_opens_a_sum_read_twice_by_one_consumer():
    b = DagBuilder()
    a = b.add(b.input, b.shift(b.input, 1, 0))
    decomp = b.build({"A": b.add(a, b.shift(a, -1, 0))})    # [1 2 1]
    assert len(normalise(decomp, inline_cap=0).nodes) == 2
    flat = normalise(decomp, inline_cap=4)
    assert len(flat.nodes) == 1
    assert dict(flat.outputs)["A"] == ((0, -1, 0, 1), (0, 0, 0, 1), (0, 0, 0, 1), (0, 1, 0, 1))


def test_two_halves_fold_back_into_the_whole():
    b = DagBuilder()
    h = b.half(b.input)
    decomp = b.build({"A": b.add(b.add(h, h), b.shift(h, 1, 0))})
    net = normalise(decomp)
    assert dict(net.outputs)["A"] == ((INPUT_NODE, 0, 0, 1), (1, 1, 0, 1))


def test_cancelling_terms_leave_nothing():
    b = DagBuilder()
    x = b.shift(b.input, 1, 0)
    assert normalise(b.build({"A": b.sub(x, x)})).outputs == (("A", ()),)
