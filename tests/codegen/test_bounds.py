"""The lower bound every program header and --json report (`exact.bounds`, issue 26): never
above the length of a program that exists, equal to it where the program is trivially shortest,
and "proven shortest" said only then."""

from __future__ import annotations

import json
from fractions import Fraction

import numpy as np
import pytest

from kalg.algebra.kernel import Kernel
from kalg.targets.scamp5.exact import exhaustive
from kalg.targets.scamp5.exact.bounds import describe_bound, lower_bound
from kalg.targets.scamp5.pipeline import compile_text

SIX = ("A", "B", "C", "D", "E", "F")
LONGEST = {"all": 4, "basic": 6}
"""Program lengths the exact search proves within a few thousand nodes on sparse kernels."""


def kernel(rows, shift=0) -> Kernel:
    a = np.array(rows)
    h = a.shape[0] // 2
    return Kernel.of({(x - h, h - y): Fraction(int(a[y, x]), 2 ** shift)
                      for y in range(a.shape[0]) for x in range(a.shape[1]) if a[y, x]})


def sparse_kernels(count: int, seed: int) -> list[Kernel]:
    rng = np.random.default_rng(seed)
    found = []
    while len(found) < count:
        a = rng.choice([-1, 1], size=(3, 3)) * (rng.random((3, 3)) < 0.35)
        if np.count_nonzero(a) >= 2:
            found.append(kernel(a))
    return found


@pytest.mark.parametrize("ops", ["all", "basic"])
def test_the_bound_never_exceeds_a_shortest_program(ops):
    """On random sparse kernels whose shortest program the exact search proves, the bound
    (asked with room above that length) is at most it."""
    checked = 0
    for k in sparse_kernels(8, 2601):
        best = exhaustive.shortest_program(k, op_set=ops, max_length=LONGEST[ops],
                                           nodes=30_000)
        if not best.proven:
            continue
        checked += 1
        bound = lower_bound({"A": k}, SIX, "A", ops, len(best.program) + 3, nodes=20_000)
        assert bound <= len(best.program), k
    assert checked >= 3


@pytest.mark.parametrize(("rows", "length"), [
    ([[0, 0, 0], [0, 0, 1], [0, 0, 0]], 1),        # movx
    ([[0, 0, 0], [0, -1, 0], [0, 0, 0]], 2),       # neg to another register, then back
    ([[1, 0, -1], [2, 0, -2], [1, 0, -1]], 5),     # Sobel: Cain's 5 is shortest
])
def test_the_bound_meets_the_length_of_trivially_shortest_programs(rows, length):
    best = exhaustive.shortest_program(kernel(rows), max_length=length, nodes=2_000_000)
    assert best.proven and len(best.program) == length
    assert lower_bound({"A": kernel(rows)}, SIX, "A", "all", length, nodes=2_000_000) == length


def test_the_identity_needs_no_instruction():
    assert lower_bound({"A": kernel([[1]])}, SIX, "A", "all", 0) == 0


def test_outputs_one_division_cannot_leave_together_need_their_own_last_instructions():
    k, other = kernel([[1, 2, 1]]), kernel([[1, 0, 3]])
    outputs = {"A": k, "B": k.scale(2), "C": k.scale(-1), "D": other}
    # op set all: {k, 2k, -k} may be the three results of one div, `other` needs another
    assert lower_bound(outputs, SIX, "A", "all", 100, nodes=0) == 2
    # op set basic: every macro writes one register
    assert lower_bound(outputs, SIX, "A", "basic", 100, nodes=0) == 4


def test_on_more_than_six_registers_only_the_final_writes_bound():
    wide = tuple("ABCDEFGH")
    assert lower_bound({"A": kernel([[1, 0, -1], [2, 0, -2], [1, 0, -1]])}, wide, "A",
                       "all", 5) == 1


def test_the_header_and_json_report_the_bound_and_say_proven_only_when_met():
    text = ("target scamp5 { registers: A..F, input: A, ops: all }\n"
            "kernel k = [1 0 -1 ; 2 0 -2 ; 1 0 -1]\n")
    result = compile_text(text)
    assert "// lower bound: 5 instructions: proven shortest" in result.text
    assert result.stats["lower bound"] == len(result.program) == 5
    from kalg.jsonout import compile_fields
    fields = json.loads(json.dumps(compile_fields(result)))
    assert fields["lower_bound"] == 5 and fields["proven_shortest"] is True


def test_a_dense_kernel_gets_a_bound_below_its_length_and_no_claim():
    """kalg's program for this kernel has 12 instructions (Cain's 13): the bound is far below."""
    k = kernel([[2, 7, 3], [2, 7, 2], [3, 5, 4]], 2)
    bound = lower_bound({"A": k}, SIX, "A", "all", 12)
    assert 1 <= bound < 12
    assert "proven" not in describe_bound(bound, 12)
    assert describe_bound(12, 12) == "12 instructions: proven shortest"


def test_a_kernel_whose_numerators_pass_int64_gets_a_bound_not_overflow_error():
    # a 31x31 binomial's numerators sum to 2^60: the norm tables (int64) overflowed with
    # "OverflowError: Python int too large to convert to C long" in every compile of it
    huge = Kernel.from_rows([[1, 2**61, 3]])
    bound = lower_bound({"A": huge}, SIX, "A", "all", 45)
    # one instruction at most triples the largest coefficient: 2^61 needs 39 of them
    assert 39 <= bound <= 45
