"""A sub-kernel common to several outputs of a filter is made once (`common_parts`,
`filters.common_parts`): the filter's program is then shorter than its outputs' programs one
after another could be; outputs that share nothing get no such candidate and no extra search."""

from __future__ import annotations

from kalg.algebra.kernel import Kernel
from kalg.settings import Deadline
from kalg.targets.scamp5 import portfolio
from kalg.targets.scamp5.common_parts import (
    DIFFERENCES,
    DIFFERENCES_ROWS,
    _difference_tree,
    common_part_candidates,
)
from kalg.targets.scamp5.exact.exhaustive import shortest_program
from kalg.targets.scamp5.filters import common_parts
from kalg.targets.scamp5.machine.symbolic import verify_exact
from kalg.targets.scamp5.pipeline import Settings, compile_text
from kalg.targets.scamp5.programs import SCREEN
from kalg.targets.scamp5.sources import COMMON

SIX = tuple("ABCDEF")
ROW = "1 2 1"  # the part the outputs below share, each plus one tap of its own
SHARING = {"A": f"[{ROW}; 0 0 1; 0 0 0]", "B": f"[{ROW}; 0 0 0; -1 0 0]",
           "C": f"[{ROW}; 0 1 0; 0 0 0]", "D": f"[{ROW}; 0 0 0; 0 0 -1]"}


def _kernels(outputs: dict[str, str]) -> dict[str, Kernel]:
    rows = {r: [[int(v) for v in row.split()] for row in m.strip("[]").split(";")]
            for r, m in outputs.items()}
    return {r: Kernel.from_rows(m) for r, m in rows.items()}


def _fewest_alone(kernels: dict[str, Kernel]) -> int:
    """The sum of the outputs' proven shortest lengths, each compiled on its own: no program
    that makes them one after another is shorter."""
    total = 0
    for reg, kernel in kernels.items():
        outcome = shortest_program(kernel, output=reg, max_length=6, nodes=100_000)
        assert outcome.program is not None and len(outcome.program) == outcome.lower
        total += outcome.lower
    return total


def test_a_filter_whose_outputs_share_a_part_is_shorter_than_its_outputs_alone():
    # four outputs: beyond the joint decomposition search (`candidates.JOINT_OUTPUTS`), so only
    # the common parts make the shared row once
    text = ("target scamp5 { registers: A..F, input: A }\nfilter f = ["
            + ", ".join(f"{r}: {m}" for r, m in SHARING.items()) + "]\n")
    result = compile_text(text, "f.kalg", Settings())
    assert result.verified and result.stats["candidate"] in COMMON
    assert len(result.program) < _fewest_alone(_kernels(SHARING))


def test_two_outputs_sharing_a_row_get_a_common_part_program_shorter_than_alone():
    kernels = _kernels({r: SHARING[r] for r in "AB"})
    program, name = common_parts(kernels, SIX, "A", "all", None, Deadline(None))
    verify_exact(program, kernels, "A")  # raises where a register is wrong
    assert name in COMMON
    assert len(program) < _fewest_alone(kernels)


def test_a_common_part_program_replaces_another_only_where_shorter():
    kernels = _kernels(SHARING)
    program, _ = common_parts(kernels, SIX, "A", "all", None, Deadline(None))
    assert common_parts(kernels, SIX, "A", "all", len(program), Deadline(None)) is None
    assert common_parts(kernels, SIX, "A", "basic", None, Deadline(None)) is None


def test_outputs_that_share_nothing_get_no_common_part_and_no_search():
    # no line of two or more taps twice (up to a move, a sign and a power of two), no value
    # that two outputs have at the same tap
    kernels = _kernels({"A": "[1 2 3; 4 5 6; 7 8 9]", "B": "[-2 5 -7; 3 -1 8; 6 -4 2]"})
    assert common_part_candidates(kernels) == {}
    assert common_parts(kernels, SIX, "A", "all", None, Deadline(None)) is None


TURNS = {"A": "[-1 -1 -1; -1 2 2; -1 2 2]", "B": "[-1 -1 -1; -1 2 -1; 2 2 2]",
         "C": "[-1 -1 -1; 2 2 -1; 2 2 -1]", "D": "[2 -1 -1; 2 2 -1; 2 -1 -1]"}
"""Four turns of one operator: each differs from the next in two taps, and their per-tap
consensus is far from each (rotbank_2 of seed 764622522)."""


def test_outputs_that_differ_from_one_another_in_few_taps_are_made_from_one_another():
    kernels = _kernels(TURNS)
    candidates = common_part_candidates(kernels)
    assert {DIFFERENCES, DIFFERENCES_ROWS} <= set(candidates)
    others = {n: d for n, d in candidates.items() if n not in (DIFFERENCES, DIFFERENCES_ROWS)}
    best_other = min(len(portfolio.generate_within(d, SIX, "A", "all", SCREEN, Deadline(None)))
                     for d in others.values())
    program, name = common_parts(kernels, SIX, "A", "all", None, Deadline(None))
    verify_exact(program, kernels, "A")
    assert name in (DIFFERENCES, DIFFERENCES_ROWS)
    assert len(program) < best_other


def test_an_output_is_made_from_another_only_where_that_takes_fewer_terms():
    tree = _difference_tree(_kernels({"A": "[1 2 3; 4 5 6; 7 8 9]",
                                      "B": "[0 1 2; 0 4 5; 0 7 8]",  # A moved east, one tap cut
                                      "C": "[-2 5 -7; 3 -1 8; 6 -4 2]"}))
    # B (fewer taps) made alone, A from it moved one step west plus its east column; C
    # shares nothing with either and is made alone
    assert tree == {"A": ("B", 1, -1, 0)}


def test_the_winning_common_part_is_searched_again_wider_and_gets_shorter():
    # four turns of one operator: the screen of the outputs made from outputs leaves two
    # instructions that a wider search of the same decomposition finds (21 -> 19; Cain 18)
    kernels = _kernels(TURNS)
    candidates = common_part_candidates(kernels)
    screened = min(len(portfolio.generate_within(candidates[n], SIX, "A", "all", SCREEN,
                                                 Deadline(None)))
                   for n in (DIFFERENCES, DIFFERENCES_ROWS))
    program, name = common_parts(kernels, SIX, "A", "all", None, Deadline(None))
    verify_exact(program, kernels, "A")
    assert name in (DIFFERENCES, DIFFERENCES_ROWS)
    assert len(program) < screened
