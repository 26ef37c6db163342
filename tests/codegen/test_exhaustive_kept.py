"""Programs keeping a value of their first instruction to the last one (`codegen.kept`)."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

import kalg
from kalg.algebra.kernel import Kernel
from kalg.targets.scamp5.exact.kept import kept_program
from kalg.targets.scamp5.machine.isa import Add, Dir, Div, Movx, Sub, Sub2x, Subx
from kalg.targets.scamp5.machine.symbolic import execute

REGISTERS = ("A", "B", "C", "D", "E", "F")
MEAN_CROSS = [[0, 1, 0], [1, 4, 1], [0, 1, 0]]


def _kept(kernel: Kernel, shorter_than: int, nodes: int = 60_000):
    return kept_program(kernel, registers=REGISTERS, input_register="A", output="A",
                        op_set="all", shorter_than=shorter_than, nodes=nodes)


def test_mean_cross_keeps_its_first_div_value_and_reaches_its_proven_optimum():
    """[0 1 0; 1 4 1; 0 1 0] / 8: its proven optimum, 6, keeps -x/2 from the first div to the
    last instruction, which a chain of stages cannot; kalg's compile gave 7."""
    kernel = Kernel.from_rows(MEAN_CROSS).scale(Fraction(1, 8))
    program = _kept(kernel, 7)
    assert program is not None and len(program) == 6
    assert execute(program)["A"].same_values(kernel)
    assert _kept(kernel, 6, nodes=20_000) is None  # 6 is proven shortest: nothing shorter


def test_the_default_compile_of_mean_cross_equals_its_proven_optimum():
    result = kalg.compile(MEAN_CROSS, divisor=8)
    assert result.instructions == 6 and result.verified


def _random_kept_program(rng) -> list:
    """div(B, C, A), then two random instructions on B's half of the input (registers other
    than C), then a last instruction subtracting C (-x/2) from the middle's shifted result."""
    dirs = list(Dir)
    first = [Div("B", "C", "A")]
    one = Movx(("A", "D")[rng.integers(2)], "B", dirs[rng.integers(4)])
    written = one.writes()[0]
    two_choices = [Add("E", "B", written), Sub("E", "B", written),
                   Subx("E", written, dirs[rng.integers(4)], "B")]
    two = two_choices[rng.integers(3)]
    d1, d2 = dirs[rng.integers(4)], dirs[rng.integers(4)]
    if d1 != d2 and {d1, d2} in ({Dir.NORTH, Dir.SOUTH}, {Dir.EAST, Dir.WEST}):
        d2 = d1
    last = [Subx("A", "E", d1, "C"), Sub2x("A", "E", d1, d2, "C"), Sub("A", "E", "C")][
        rng.integers(3)]
    return [*first, one, two, last]


@pytest.mark.parametrize("seed", range(6))
def test_finds_a_program_at_most_as_long_as_a_random_one_of_its_family(seed):
    """A random program of the family (first div's -x/2 kept to the last instruction, whose
    other operand is a shifted 2-instruction middle) whose kept term adds a tap of its own:
    the search finds one at most as long, and it computes the kernel."""
    rng = np.random.default_rng(seed)
    while True:
        program = _random_kept_program(rng)
        kernel = execute(program)["A"].trimmed()
        taps = kernel.taps
        if taps.get((0, 0)) is None or len(taps) < 3:
            continue
        middle = execute(program[:-1])["E"]
        if middle is None or all(c == 0 for c in middle.taps.values()):
            continue
        break
    found = _kept(kernel, len(program) + 1)
    assert found is not None and len(found) <= len(program)
    assert execute(found)["A"].same_values(kernel)


def test_nothing_for_programs_too_short_to_have_a_middle_or_inexact_kernels():
    assert _kept(Kernel.of({(0, 0): 1, (1, 0): 1}), 3) is None
    assert _kept(Kernel.of({(0, 0): 1, (1, 0): Fraction(1, 3)}), 8) is None


def test_the_search_is_deterministic():
    kernel = Kernel.from_rows([[0, 0, 1], [0, 0, 3], [0, 4, 3]]).scale(Fraction(1, 4))
    first = _kept(kernel, 7, nodes=30_000)
    second = _kept(kernel, 7, nodes=30_000)
    assert first == second


def test_eighteen_simulated_registers_are_not_longer_than_six_where_exact_searches_help():
    """The exact searches that find shorter programs ran only on six registers or fewer, so
    A..R gave mean_cross 7 (A..F: 6) and robinson_ne 6 (A..F: 5); they now run on six of
    the registers of a larger budget."""
    robinson_ne = [[0, 1, 2], [-1, 0, 1], [-2, -1, 0]]
    for rows, divisor, six in ((MEAN_CROSS, 8, 6), (robinson_ne, 1, 5)):
        wide = kalg.compile(rows, divisor=divisor, target="scamp5_wide",
                            registers=[chr(c) for c in range(ord("A"), ord("S"))])
        assert wide.instructions <= six and wide.verified
