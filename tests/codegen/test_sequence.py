"""A filter's program is never longer than its outputs' programs run one after another."""

from __future__ import annotations

from dataclasses import replace
from fractions import Fraction

from kalg.algebra.decomp import Decomposition
from kalg.algebra.kernel import Kernel
from kalg.targets.scamp5.codegen import QUICK, _in_sequence, generate
from kalg.targets.scamp5.optimize import direct_decomposition

from .test_generate import REGISTERS, check_program

RANDOM_3X3 = ([[7, 5, 4], [2, 2, 0], [0, 0, 1]], [[7, 5, 8], [4, 5, 8], [6, 5, 4]])
"""The first two random kernels (over 8) of the scaling study (docs/scaling.md)."""


def test_two_outputs_together_are_not_longer_than_one_after_another():
    # Regression: with 6 registers the joint search kept both outputs and the input alive and
    # found 34 instructions where computing B, then A, takes 30 (the scaling study saw 51
    # together against 39 one at a time for three kernels).
    outputs = {reg: Kernel.from_rows(rows).scale(Fraction(1, 8))
               for reg, rows in zip("AB", RANDOM_3X3, strict=True)}
    decomp = direct_decomposition(outputs)
    values = dict(decomp.outputs)
    first = generate(Decomposition(decomp.values, (("B", values["B"]), ("A", 0))), REGISTERS,
                     "A", "all", QUICK)
    second = generate(Decomposition(decomp.values, (("A", values["A"]),)),
                      tuple(r for r in REGISTERS if r != "B"), "A", "all", QUICK)
    together = generate(decomp, REGISTERS, "A", "all", replace(QUICK, in_sequence=True))
    check_program(together, decomp, "all")
    assert len(together) <= len(first) + len(second)


def test_screening_limits_try_the_sequence_only_when_the_joint_search_fails():
    # QUICK (the pipeline's screening budget) skips the sequence when the joint search found a
    # program - a screen, not a refine; with in_sequence on, the sequence is compared too.
    outputs = {reg: Kernel.from_rows(rows).scale(Fraction(1, 8))
               for reg, rows in zip("AB", RANDOM_3X3, strict=True)}
    decomp = direct_decomposition(outputs)
    quick = generate(decomp, REGISTERS, "A", "all", QUICK)
    both = generate(decomp, REGISTERS, "A", "all", replace(QUICK, in_sequence=True))
    assert len(both) < len(quick)


def test_each_stage_keeps_the_input_and_the_outputs_already_made():
    outputs = {reg: Kernel.from_rows(rows).scale(Fraction(1, 8))
               for reg, rows in zip("CA", RANDOM_3X3, strict=True)}
    decomp = direct_decomposition(outputs)
    program = _in_sequence(decomp, REGISTERS, "A", "basic", QUICK)
    assert program is not None
    check_program(program, decomp, "basic")  # C made first, then A (over the input) last


def test_one_output_is_no_sequence():
    decomp = direct_decomposition({"A": Kernel.from_rows(RANDOM_3X3[0])})
    assert _in_sequence(decomp, REGISTERS, "A", "all", QUICK) is None
