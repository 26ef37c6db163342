"""The numeric simulator: against a literal reference, the spec, the symbolic simulator, edges."""

from __future__ import annotations

from dataclasses import fields
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from kalg.algebra.kernel import Kernel
from kalg.diagnostics import KalgError, VerificationError
from kalg.targets.scamp5.machine import simulator
from kalg.targets.scamp5.machine.isa import (
    ALL_MACROS,
    NEWS,
    POINTWISE_MACROS,
    REGISTERS,
    Abs,
    Add,
    Add2x,
    Add3,
    Addx,
    Dir,
    Div,
    Div4,
    Diva,
    Divq,
    Instr,
    Mov,
    Mov2x,
    Movx,
    Neg,
    Res,
    Sub,
    Sub2x,
    Subx,
)
from kalg.targets.scamp5.machine.simulator import (
    ALL_REGISTERS,
    Footprint,
    footprint,
    interior_mask,
    simulate,
    verify_numeric,
)
from kalg.targets.scamp5.machine.symbolic import execute

N, E, S, W = Dir.NORTH, Dir.EAST, Dir.SOUTH, Dir.WEST


def reference(program: list[Instr], image: np.ndarray, input_register: str = "A") -> dict:
    """The obvious simulator: pad every read with zeros, evaluate each effect term by term (and
    take the absolute value where the macro is abs)."""
    h, w = image.shape[-2:]
    state = {r: np.full(image.shape, np.nan) for r in ALL_REGISTERS}
    state[input_register] = image.astype(float)

    def read(reg: str, dx: int, dy: int) -> np.ndarray:
        pad = [(0, 0)] * (image.ndim - 2) + [(2, 2), (2, 2)]
        padded = np.pad(state[reg], pad)
        return padded[..., 2 - dy:2 - dy + h, 2 + dx:2 + dx + w]

    for instr in program:
        new = {}
        for dest, form in instr.effects():
            value = np.zeros(image.shape) if form is not None else np.full(image.shape, np.nan)
            for coef, reg, (dx, dy) in form or ():
                value = value + float(coef) * read(reg, dx, dy)
            new[dest] = np.abs(value) if instr.pointwise(dest) == "abs" else value
        state.update(new)
    return state


@st.composite
def _any_instruction(draw: st.DrawFn) -> Instr:
    cls = draw(st.sampled_from(ALL_MACROS))
    kinds = [f.type in ("Dir", Dir) for f in fields(cls)]  # type: ignore[arg-type]
    return cls(*[draw(st.sampled_from(list(Dir) if d else REGISTERS)) for d in kinds])


programs = st.lists(_any_instruction().filter(lambda i: i.violation() is None), max_size=10)
"""Valid programs that may read undefined registers (the simulator must give NaN there)."""
images = st.tuples(st.integers(1, 3), st.integers(1, 9), st.integers(1, 9)).flatmap(
    lambda shape: arrays(np.float64, shape, elements=st.integers(-8, 8).map(float)))


@settings(max_examples=150, deadline=None)
@given(programs, images, st.booleans())
def test_matches_the_reference_bit_for_bit(program: list[Instr], batch: np.ndarray,
                                           single: bool) -> None:
    image = batch[0] if single else batch
    got, want = simulate(program, image), reference(program, image)
    for reg in ALL_REGISTERS:
        np.testing.assert_array_equal(got[reg], want[reg], err_msg=reg)


def _chunk_bytes(program: list[Instr], shape: tuple[int, ...], images: int) -> int:
    """A CHUNK_BYTES that makes `simulate` run `images` images of `shape` per chunk."""
    plan = simulator._compile(tuple(program), "A")
    h, w = shape[-2:]
    return images * plan.buffers * (h + 2 * plan.pad) * (w + 2 * plan.pad) * 8


@settings(max_examples=40, deadline=None)
@given(programs, images.filter(lambda b: len(b) == 3))
def test_chunked_batches_match_the_reference(program: list[Instr], batch: np.ndarray) -> None:
    with pytest.MonkeyPatch.context() as mp:  # chunks of 2 images, then a shorter one
        mp.setattr(simulator, "CHUNK_BYTES", _chunk_bytes(program, batch.shape, 2))
        got = simulate(program, batch)
    want = reference(program, batch)
    for reg in ALL_REGISTERS:
        np.testing.assert_array_equal(got[reg], want[reg], err_msg=reg)


@settings(max_examples=100, deadline=None)
@given(programs, st.integers(0, 2**32 - 1))
def test_footprint_interior_is_unaffected_by_the_edges(program: list[Instr], seed: int) -> None:
    big = np.random.default_rng(seed).integers(-9, 10, size=(40, 44)).astype(float)
    small = big[12:27, 10:31]
    rows, cols = footprint(program).interior(small.shape)
    inside, everywhere = simulate(program, small), simulate(program, big)
    for reg in ALL_REGISTERS:
        np.testing.assert_array_equal(inside[reg][rows, cols],
                                      everywhere[reg][12:27, 10:31][rows, cols], err_msg=reg)


# ---------------------------------------------------------------------------- the spec
IMAGE = np.arange(1.0, 1.0 + 7 * 8).reshape(7, 8) ** 1.5
"""Distinct values, so that any mix-up of PEs shows."""


def _at(image: np.ndarray, dx: int, dy: int) -> np.ndarray:
    """image read at p + (dx, dy) with zero fill (y north: row − dy)."""
    out = np.zeros_like(image)
    h, w = image.shape
    for r in range(h):
        for c in range(w):
            if 0 <= r - dy < h and 0 <= c + dx < w:
                out[r, c] = image[r - dy, c + dx]
    return out


PRELUDE = [Movx("B", "A", E), Movx("C", "A", S), Add("C", "C", "B")]
"""Puts two more distinct images in B and C before the instruction under test."""
A = IMAGE
B = _at(IMAGE, 1, 0)
C = _at(IMAGE, 0, -1) + B
ZERO = np.zeros_like(A)

SPEC = [
    # instruction, register, value after it (scamp5-isa.md: the table and the NEWS notes)
    (Mov("D", "B"), "D", B),
    (Mov("D", "B"), NEWS, -B),
    (Res("B"), "B", ZERO),
    (Res("B"), NEWS, ZERO),
    (Neg("D", "B"), "D", -B),
    (Neg("D", "B"), NEWS, ZERO),
    (Add("D", "B", "C"), "D", B + C),
    (Add("D", "B", "C"), NEWS, -(B + C)),
    (Add3("D", "A", "B", "C"), "D", A + B + C),
    (Add3("D", "A", "B", "C"), NEWS, -(A + B + C)),
    (Sub("D", "B", "C"), "D", B - C),
    (Sub("D", "B", "C"), NEWS, -B),
    (Movx("D", "B", N), "D", _at(B, 0, 1)),
    (Movx("B", "B", W), "B", _at(B, -1, 0)),
    (Movx("D", "B", W), NEWS, -_at(B, -1, 0)),
    (Mov2x("D", "B", S, W), "D", _at(B, -1, -1)),
    (Mov2x("D", "B", E, E), "D", _at(B, 2, 0)),
    (Addx("D", "B", "C", S), "D", _at(B + C, 0, -1)),
    (Addx("D", "B", "C", S), NEWS, -_at(B + C, 0, -1)),
    (Add2x("D", "B", "C", N, E), "D", _at(B + C, 1, 1)),
    (Subx("D", "B", E, "C"), "D", _at(B, 1, 0) - C),
    (Sub2x("D", "B", N, N, "C"), "D", _at(B, 0, 2) - C),
    (Sub2x("C", "C", N, N, "B"), "C", _at(C, 0, 2) - B),
    (Divq("D", "B"), "D", B / 2),
    (Div("D", "E", "B"), "D", B / 2),
    (Div("D", "E", "B"), "E", -B / 2),
    (Div("D", "E", "B"), "B", np.full_like(A, np.nan)),
    (Div("D", "E", "B"), NEWS, -B / 2),
    (Div4("D", "E", "F", "B"), "D", B / 2),
    (Div4("D", "E", "F", "B"), "E", -B / 2),
    (Div4("D", "E", "F", "B"), "F", B),
    (Div4("D", "E", "F", "B"), "B", B),
    (Div4("D", "E", "F", "B"), NEWS, -B / 2),
    (Diva("B", "D", "E"), "B", B / 2),
    (Diva("B", "D", "E"), "D", -B / 2),
    (Diva("B", "D", "E"), "E", -B / 2),
    (Abs("D", "B"), "D", B),  # signs: tests/scamp5/test_pipelines_on_scamp5.py
    (Abs("D", "B"), NEWS, -B),
    (Abs("D", "B"), "B", B),
]


@pytest.mark.parametrize(("instr", "register", "expected"), SPEC,
                         ids=[f"{i}{r}" for i, r, _ in SPEC])
def test_each_macro_does_what_the_spec_says(instr: Instr, register: str,
                                            expected: np.ndarray) -> None:
    result = simulate([*PRELUDE, instr], IMAGE)
    np.testing.assert_allclose(result[register], expected, rtol=1e-13)


def test_every_macro_is_in_the_spec_table() -> None:
    assert {type(i) for i, _, _ in SPEC} == set(ALL_MACROS)


@pytest.mark.parametrize("instr", sorted({i for i, _, _ in SPEC
                                          if type(i) not in POINTWISE_MACROS}, key=str), ids=str)
def test_numeric_and_symbolic_agree(instr: Instr) -> None:
    """Both simulators read `effects()`; this checks the numeric evaluation of it (the kernel
    simulator refuses the pointwise `abs`: no kernel describes it)."""
    program = [*PRELUDE, instr]
    numeric, exact = simulate(program, IMAGE), execute(program)
    rows, cols = footprint(program).interior(IMAGE.shape)
    for reg in ALL_REGISTERS:
        if exact[reg] is None:
            assert np.isnan(numeric[reg]).all()
            continue
        np.testing.assert_allclose(numeric[reg][rows, cols],
                                   exact[reg].apply(IMAGE)[rows, cols], rtol=1e-13, err_msg=reg)


# ---------------------------------------------------------------------------- edges, shapes
def test_reads_outside_the_array_are_zero() -> None:
    image = np.arange(1.0, 13.0).reshape(3, 4)
    result = simulate([Movx("B", "A", N), Movx("C", "A", E)], image)
    np.testing.assert_array_equal(result["B"], [[0, 0, 0, 0], [1, 2, 3, 4], [5, 6, 7, 8]])
    np.testing.assert_array_equal(result["C"][:, -1], [0, 0, 0])
    np.testing.assert_array_equal(result["C"][:, :-1], image[:, 1:])


def test_undefined_registers_are_read_only_nan() -> None:
    result = simulate([Mov("B", "A")], IMAGE)
    assert np.isnan(result["C"]).all() and result["C"].shape == IMAGE.shape
    with pytest.raises(ValueError, match="read-only"):
        result["C"][0, 0] = 1.0
    result["B"][0, 0] = 1.0  # defined registers are ordinary arrays
    assert np.isnan(simulate([Add("C", "A", "D")], IMAGE)["C"]).all()


def test_input_register_and_input_array() -> None:
    image = IMAGE.copy()
    result = simulate([Neg("A", "C"), Res("C")], image, input_register="C")
    np.testing.assert_array_equal(result["A"], -IMAGE)
    np.testing.assert_array_equal(image, IMAGE)  # not modified
    with pytest.raises(ValueError, match="input register"):
        simulate([], image, input_register="NEWS")


def test_batch_equals_one_image_at_a_time() -> None:
    batch = np.random.default_rng(1).random((3, 16, 20))
    program = [Movx("B", "A", S), Add2x("C", "A", "B", N, W), Sub("A", "C", "B")]
    together = simulate(program, batch)
    for i, image in enumerate(batch):
        alone = simulate(program, image)
        for reg in ("A", "B", "C", NEWS):
            np.testing.assert_array_equal(together[reg][i], alone[reg])


@pytest.mark.parametrize("shape", [(5,), (2, 3, 4, 5), (0, 4)])
def test_rejects_other_shapes(shape: tuple[int, ...]) -> None:
    with pytest.raises(ValueError, match="expected a non-empty"):
        simulate([], np.zeros(shape))


def test_empty_program_returns_the_input() -> None:
    result = simulate([], IMAGE)
    np.testing.assert_array_equal(result["A"], IMAGE)
    assert all(np.isnan(result[r]).all() for r in ALL_REGISTERS if r != "A")


# ---------------------------------------------------------------------------- footprint
def test_footprint_accumulates_through_the_program() -> None:
    assert footprint([]) == Footprint(0, 0, 0, 0)
    assert footprint([Mov2x("B", "A", N, N), Movx("C", "B", N)]) == Footprint(0, 0, 0, 3)
    # the read of A two PEs east must exist even though A there depends on a PE to the west
    assert footprint([Movx("A", "A", W), Movx("B", "A", E), Movx("B", "B", E)]) == \
        Footprint(west=1, east=2, south=0, north=0)
    # a dead value counts too
    assert footprint([Movx("B", "A", S), Res("B")]).south == 1


def test_interior_mask() -> None:
    mask = interior_mask([Movx("B", "A", W), Mov2x("C", "A", N, E)], (6, 7))
    assert mask.shape == (6, 7)
    assert mask.sum() == (6 - 1) * (7 - 2)
    assert mask[1, 1] and mask[5, 5] and not mask[0, 3] and not mask[3, 0] and not mask[3, 6]


# ---------------------------------------------------------------------------- verification
def test_verify_numeric_returns_the_worst_error() -> None:
    program = [Movx("B", "A", E), Add("A", "A", "B")]
    target = {"A": Kernel.from_rows([[0, 0, 0], [0, 1, 1], [0, 0, 0]])}
    assert verify_numeric(program, target, IMAGE) == {"A": 0.0}


def test_verify_numeric_names_register_and_pe() -> None:
    program = [Movx("B", "A", E), Add("A", "A", "B")]  # A + A(east); the target: A(west) + A
    target = {"A": Kernel.from_rows([[0, 0, 0], [1, 1, 0], [0, 0, 0]]),
              "B": Kernel.unit(1, 0).scale(Fraction(1, 2))}
    with pytest.raises(VerificationError) as err:
        verify_numeric(program, target, np.ones((4, 5)))
    assert err.value.message == (
        "register A differs from its kernel on 4 of 16 interior PEs; worst at row 0, column 0: "
        "got 2, want 1; register B differs from its kernel on 16 of 16 interior PEs; worst at "
        "row 0, column 0: got 1, want 0.5")


def test_verify_numeric_needs_an_interior() -> None:
    with pytest.raises(KalgError, match="no interior"):
        verify_numeric([Mov2x("B", "A", N, N)], {"B": Kernel.unit(0, 2)}, np.ones((2, 9)))
