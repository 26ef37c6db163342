"""Exact values on integers (`kernel.Dyadic`) equal the Fraction arithmetic they replace: the
symbolic simulator (`symbolic.run`) against `symbolic.step` one instruction at a time, and a
decomposition's output kernels against `Decomposition.kernels()`, domains included."""

from __future__ import annotations

import random
from dataclasses import fields
from fractions import Fraction

from kalg.algebra.kernel import Kernel
from kalg.targets.scamp5.codegen.chain import factor_chain
from kalg.targets.scamp5.machine.isa import ALL_MACROS, POINTWISE_MACROS, Dir
from kalg.targets.scamp5.machine.symbolic import execute, initial_state, run, step
from kalg.targets.scamp5.optimize import direct_decomposition

REGS = ("A", "B", "C", "D", "E", "F")


def _random_program(rng: random.Random, length: int) -> list:
    """Any linear macros on any registers (illegal ones too: execution does not check
    legality, and reads of undefined registers must give undefined values the same way); abs
    computes no kernel, so the kernel simulators refuse it."""
    program = []
    linear = [m for m in ALL_MACROS if m not in POINTWISE_MACROS]
    for _ in range(length):
        macro = rng.choice(linear)
        args = [rng.choice(list(Dir)) if f.type in ("Dir", Dir) else rng.choice(REGS)
                for f in fields(macro)]
        program.append(macro(*args))
    return program


def _random_state(rng: random.Random) -> dict:
    """Registers holding random dyadic kernels, one in six undefined."""
    state = initial_state("A")
    for reg in REGS:
        if rng.random() < 1 / 6:
            state[reg] = None
            continue
        taps = {(rng.randint(-2, 2), rng.randint(-2, 2)): Fraction(rng.randint(-9, 9),
                                                                    2 ** rng.randint(0, 3))
                for _ in range(rng.randint(1, 6))}
        state[reg] = Kernel.of(taps)
    return state


def test_the_simulator_on_integers_computes_what_step_computes():
    rng = random.Random(7)
    for trial in range(300):
        state, program = _random_state(rng), _random_program(rng, rng.randint(1, 12))
        slow = state
        for instr in program:
            slow = step(slow, instr)
        fast = run(state, program)
        assert list(fast) == list(slow), trial
        for reg in fast:
            assert fast[reg] == slow[reg], (trial, reg, program)
    program = _random_program(rng, 12)
    assert execute(program) == run(initial_state("A"), program)


def test_a_state_that_is_not_dyadic_is_stepped():
    state = initial_state("A")
    state["B"] = Kernel.unit(value=Fraction(1, 3))
    program = _random_program(random.Random(1), 8)
    slow = state
    for instr in program:
        slow = step(slow, instr)
    assert run(state, program) == slow


def test_output_kernels_on_integers_are_the_decompositions_kernels():
    kernels = [Kernel.from_rows([[1, 2, 1], [2, 4, 2], [1, 2, 1]]).scale(Fraction(1, 16)),
               Kernel.from_rows([[0, -1, 0], [-1, 4, -1], [0, -1, 0]]),
               Kernel.from_rows([[3, 0, -5], [1, 7, 2], [0, 0, -1]]).scale(Fraction(3, 8))]
    for k in kernels:
        for decomp in (direct_decomposition({"A": k}), factor_chain({"A": k})):
            if decomp is None:
                continue
            every = decomp.kernels()
            want = {name: every[i] for name, i in decomp.outputs}
            got = decomp.output_kernels()
            assert got == want and got["A"].same_values(k)
            assert [g.domain for g in got.values()] == [w.domain for w in want.values()]
