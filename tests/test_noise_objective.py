"""Noise as an objective (issue 27, item 3): --noise-slack N chooses, among the programs within N
instructions of the shortest kalg finds, the one with the least expected analogue error, and
reports its SNR in the header; N = 0 (the default) leaves the output as it was."""

from __future__ import annotations

import pytest

import kalg
from kalg.algebra.kernel import Kernel
from kalg.diagnostics import UsageError
from kalg.targets.scamp5.machine.isa import Add, Dir, Mov, Movx
from kalg.targets.scamp5.machine.symbolic import verify_exact
from kalg.targets.scamp5.noise_objective import MODELS, quietest, snr_db, write_depth

SMOOTH = "kernel smooth = [1 2 1] / 4\n"
PAIR = {"A": [[1, 2, 1]], "B": [[1, 0, -1]]}


@pytest.fixture(scope="module")
def pair():
    return kalg.compile(PAIR)


@pytest.mark.parametrize("slack", [0, 1, 4])
def test_the_quietest_is_never_longer_than_the_shortest_plus_slack_nor_noisier(pair, slack):
    outputs = {r: k for r, k in pair.kernels.items()}
    best, shortest, compared = quietest(pair.program, "shortest", {}, outputs,
                                        tuple("ABCDEF"), "A", "all", slack, MODELS["auke"]())
    assert len(best.program) <= len(pair.program) + slack
    assert best.snr_db >= shortest.snr_db
    assert compared >= 1 and shortest.program == pair.program
    verify_exact(best.program, outputs, "A")


def test_noise_slack_reports_the_snr_in_the_header_and_keeps_within_the_slack():
    plain = kalg.compile(SMOOTH)
    quiet = kalg.compile(SMOOTH, noise_slack=2)
    line = next(h for h in quiet.text.splitlines() if h.startswith("// noise: SNR "))
    assert "under the auke model" in line and "within 2 instructions" in line
    assert quiet.instructions <= plain.instructions + 2 and quiet.verified


def test_noise_slack_zero_leaves_the_program_text_as_it_was():
    assert kalg.compile(SMOOTH, noise_slack=0).text == kalg.compile(SMOOTH).text
    assert "noise:" not in kalg.compile(SMOOTH).text


def test_a_negative_noise_slack_is_a_usage_error():
    with pytest.raises(UsageError, match="noise_slack"):
        kalg.compile(SMOOTH, noise_slack=-1)


def test_a_longer_chain_of_writes_scores_a_lower_snr_under_auke():
    kernel = {"A": Kernel.from_rows([[0, 1, 1]])}  # the centre plus its east neighbour
    short = [Movx("B", "A", Dir.EAST), Add("A", "A", "B")]
    long = [Movx("B", "A", Dir.EAST), Mov("C", "B"), Mov("D", "C"), Add("A", "A", "D")]
    for program in (short, long):
        verify_exact(program, kernel, "A")
    assert (write_depth(short, "A"), write_depth(long, "A")) == (2, 4)
    model = MODELS["auke"]()
    assert snr_db(short, kernel, "A", model) > snr_db(long, kernel, "A", model)
