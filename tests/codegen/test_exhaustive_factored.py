"""Shortest programs of a kernel's factors, run one after another (`codegen.factored`)."""

from __future__ import annotations

import numpy as np
import pytest

from kalg.algebra.kernel import Kernel
from kalg.eqsat.analyses import factors
from kalg.targets.scamp5.exact.exhaustive import shortest_program
from kalg.targets.scamp5.exact.factored import shortest_chain
from kalg.targets.scamp5.machine.symbolic import execute
from kalg.targets.scamp5.pipeline import compile_text

REGISTERS = ("A", "B", "C", "D", "E", "F")


def _chain(kernel: Kernel, shorter_than: int, nodes: int = 20_000):
    return shortest_chain(kernel, registers=REGISTERS, input_register="A", output="A",
                          op_set="all", shorter_than=shorter_than, nodes=nodes)


def test_the_exact_search_can_leave_its_result_in_any_register():
    kernel = Kernel.from_rows([[1, 2, 1]])
    outcome = shortest_program(kernel, output=None, nodes=50_000)
    assert outcome.proven and len(outcome.program) == 3
    assert execute(outcome.program)[outcome.register].same_values(kernel)


def _random_factor(rng) -> Kernel:
    """An irreducible kernel of two or three taps +-1 within (0..1, 0..1), touching x = 0 and
    y = 0: sympy's factoring gives it back as it is (up to its sign)."""
    while True:
        cells = rng.permutation(4)[:rng.integers(2, 4)]
        k = Kernel.of({(int(c) % 2, int(c) // 2): int(rng.choice([-1, 1])) for c in cells})
        x0, _, y0, _ = k.bounds()
        if (x0, y0) == (0, 0) and len(factors(k)) == 1:
            return k


@pytest.mark.parametrize("seed", range(4))
def test_a_product_costs_at_most_its_factors_shortest_programs(seed):
    """For K = F·G (F, G irreducible) the chain computes K and is never longer than the
    shortest program of F plus that of G."""
    rng = np.random.default_rng(seed)
    f, g = _random_factor(rng), _random_factor(rng)
    kernel = f.compose(g)
    parts = [shortest_program(h, output=None, max_length=3, nodes=20_000) for h in (f, g)]
    assert all(p.program is not None for p in parts)
    sum_of_parts = sum(len(p.program) for p in parts)
    program = _chain(kernel, sum_of_parts + 1)
    assert program is not None and len(program) <= sum_of_parts
    assert execute(program)["A"].same_values(kernel)


def test_no_chain_for_a_kernel_that_does_not_factor_or_cannot_be_shorter():
    mean_cross = Kernel.from_rows([[0, 1, 0], [1, 4, 1], [0, 1, 0]])
    assert _chain(mean_cross, 12) is None
    robinson_ne = Kernel.from_rows([[0, 1, 2], [-1, 0, 1], [-2, -1, 0]])
    assert _chain(robinson_ne, 5) is None  # 5 is its proven optimum: nothing shorter exists


def test_a_shift_difference_times_a_pattern_compiles_to_its_proven_optimum():
    """Robinson's north-east compass is (x·y - 1) times a 2x2 pattern of 4 instructions; the
    exact search proved 5 the shortest, and the code generator alone found 6."""
    result = compile_text("target scamp5 { registers: A..F, input: A, ops: all }\n"
                          "kernel robinson_ne = [ 0 1 2\n -1 0 1\n -2 -1 0 ]\n")
    assert result.verified and len(result.program) == 5
