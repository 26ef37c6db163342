"""What the code generator shares to save time changes nothing it finds (issue 11, item 7).

* The rankings of one network and op set share their bags, what a move leaves of each and the
  merges of their goals (`search.Bags`, through `codegen.Memo`): a search whose scorer shares
  them with rankings that searched before finds the same schedules, with the same number of
  expansions, as one with a memo of its own.
* A search on a tight register budget leaves the bags of the moves that do not fit it
  unbuilt; a wider budget sharing the memo finds the same as with a memo of its own.
* A part of a sum's split gets its key from the sum's key minus the other part's
  (`goals.Space.key_rest`): always the key that expanding its terms gives.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np

from kalg.algebra.kernel import Kernel
from kalg.targets.scamp5.codegen import QUICK
from kalg.targets.scamp5.codegen.goals import Space
from kalg.targets.scamp5.codegen.heuristic import Weights
from kalg.targets.scamp5.codegen.limits import Budget, Limits
from kalg.targets.scamp5.codegen.memo import Memo
from kalg.targets.scamp5.codegen.search import Focus, _Search
from kalg.targets.scamp5.optimize import direct_decomposition

from .dags import BENCH

RANKINGS = Limits().portfolio
"""The default rankings: three weights, one of them with near moves (`self_difference`)."""


def _kernel(seed: int, side: int = 3) -> Kernel:
    rng = np.random.default_rng(seed)
    rows = rng.integers(-4, 5, size=(side, side))
    rows[side // 2, side // 2] = 3  # never all zero
    return Kernel.from_rows(rows.tolist()).scale(Fraction(1, 4))


def _search(memo: Memo, decomp, weights: Weights, registers: int, op_set: str):
    limits = QUICK
    scorer = memo.scorer(memo.network(decomp, 0), op_set, weights)
    run = _Search(scorer, registers, limits, "A", Focus.TOP, Budget(limits))
    schedules = run.run()
    return run.expanded, [(s.steps, s.outputs) for s in schedules]


def test_a_ranking_sharing_bags_with_others_finds_what_it_finds_alone():
    for seed in range(3):
        decomp = direct_decomposition({"A": _kernel(seed)})
        for op_set in ("basic", "all"):
            shared = Memo()
            for registers in (4, 6):
                for weights in RANKINGS:
                    alone = _search(Memo(), decomp, weights, registers, op_set)
                    assert _search(shared, decomp, weights, registers, op_set) == alone, (
                        seed, op_set, registers, weights)
            assert shared._bags  # the rankings did share one


def test_a_wide_budget_after_tight_ones_finds_what_it_finds_alone():
    """A search on few registers leaves the bag of a move that does not fit unbuilt
    (`_Search._after`); a search on more registers, sharing its memo, builds it when it needs
    it and finds the same as a search with a memo of its own."""
    for seed in range(3):
        decomp = direct_decomposition({"A": _kernel(seed)})
        for op_set in ("basic", "all"):
            shared = Memo()
            for registers in (2, 3, 6):
                alone = _search(Memo(), decomp, RANKINGS[0], registers, op_set)
                assert _search(shared, decomp, RANKINGS[0], registers, op_set) == alone, (
                    seed, op_set, registers)
            assert any(after[0] is None for bags in shared._bags.values()
                       for after in bags.after.values())  # some were left unbuilt


def test_a_split_part_keyed_from_the_whole_is_keyed_as_its_terms_expand():
    memo = Memo()
    rest = 0
    for name, build in BENCH.items():
        decomp = build()
        for cap in (0, 4):
            net = memo.network(decomp, cap)
            gen = memo.moves(net, "all")
            fresh = Space(net)
            for node in net.nodes:
                goal = gen.space.open(node.terms)
                if len(goal) < 2:
                    continue
                for p, q in gen.splits(goal):
                    assert p.key == fresh.key(p.terms) and q.key == fresh.key(q.terms), name
                    rest += not fresh._is_own_key(p.terms) or not fresh._is_own_key(q.terms)
    assert rest > 20  # parts over sums (not atoms only), keyed from the whole
