"""Filters with one output per register (`codegen.filling`): the output written last is made
in place, by instructions that write only its register, from the input shifted and the other
outputs; where no output can be, no program and a reason."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from kalg import codegen
from kalg.kernel import Kernel
from kalg.scamp5.symbolic import verify_exact

REGISTERS = tuple("ABCDEF")


def random_weights(count: int, seed: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    out: list[np.ndarray] = []
    while len(out) < count:
        w = rng.integers(0, 9, size=(3, 3))
        if w.any():
            out.append(w)
    return out


def kernel(w) -> Kernel:
    return Kernel.from_rows(np.asarray(w).tolist()).scale(Fraction(1, 8))


def in_place_filter(seed: int, last: str) -> dict[str, Kernel]:
    """Five random outputs and, in `last`, input/8 one step east plus the first minus the
    second of them."""
    weights = random_weights(5, seed)
    others = [r for r in REGISTERS if r != last]
    outputs = {r: kernel(w) for r, w in zip(others, weights, strict=True)}
    w = weights[0] - weights[1]
    w[1][2] += 1
    outputs[last] = kernel(w)
    return outputs


@pytest.mark.parametrize(("ops", "seed", "last"), [("all", 0, "A"), ("basic", 1, "A"),
                                                   ("all", 2, "D")])
def test_six_outputs_compile_when_one_is_the_input_shifted_plus_the_others(ops, seed, last):
    outputs = in_place_filter(seed, last)
    program, how = codegen.full_filter(outputs, REGISTERS, "A", ops)
    assert program is not None, how
    verify_exact(program, outputs, "A")
    # After the last write of any other register, only instructions that write just the
    # register written last follow (the others hold their outputs), and they are more than a
    # plain walk over the input: they read the other outputs.
    written = [set(i.writes()) for i in program]
    (mine,) = written[-1]
    final = max(i for i, w in enumerate(written) if w - {mine})
    assert all(w == {mine} for w in written[final + 1:])
    assert how.startswith(f"{mine} written last")
    assert any(set(i.reads()) - {mine} for i in program[final + 1:])


def test_six_random_outputs_have_no_program_and_say_why():
    outputs = {r: kernel(w) for r, w in zip(REGISTERS, random_weights(6, 0), strict=True)}
    program, why = codegen.full_filter(outputs, REGISTERS, "A", "all")
    assert program is None
    assert "no negation, halving or doubling" in why


def test_the_output_made_last_is_never_negated_or_halved_in_place():
    # -input/8 + (the others) needs neg(A, A), which is illegal: not found in place.
    weights = random_weights(5, 3)
    outputs = {r: kernel(w) for r, w in zip(REGISTERS[1:], weights, strict=True)}
    w = weights[0] * 2
    outputs["A"] = kernel(w)  # 2·B: only in place if doubling were possible (it is not)
    program, _ = codegen.full_filter(outputs, REGISTERS, "A", "all")
    # 2·B = B + B in place from... A's content must be kept with weight +1, so 2·B is found
    # only as v + B + B with v = 0, which no halving of the input gives.
    assert program is None
