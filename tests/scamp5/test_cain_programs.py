"""Cain's published programs against kalg's parser, exact verifier and numeric simulator.

Every program must parse (in its own op set), hold its kernels exactly, and match
`scipy.ndimage.correlate` on the interior of a random 256x256 image. Mutants of the programs
(a direction flipped, two operands swapped, an instruction dropped) must fail both checks with a
message that names the register, and the exact check also the offsets that differ.
"""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import numpy as np
import pytest
import scipy.ndimage as ndi

from kalg.algebra.kernel import Kernel
from kalg.diagnostics import VerificationError
from kalg.targets.scamp5.machine.isa import Dir, Instr, Neg, Sub, Sub2x, Subx
from kalg.targets.scamp5.machine.simulator import footprint, simulate, verify_numeric
from kalg.targets.scamp5.machine.symbolic import verify_exact
from kalg.targets.scamp5.machine.text import format_program, parse_program

EXACT_MESSAGE = re.compile(r"register [A-F] differs at \d+ offset\(s\): \(-?\d+, -?\d+\): got ")
NUMERIC_MESSAGE = re.compile(r"register [A-F] (differs from its kernel|holds no defined value)"
                             r"(?: \(NaN\))? on \d+ of \d+ interior PEs; "
                             r"worst at row \d+, column \d+")


def _load(path: Path, ops: str | None = None) -> list[Instr]:
    return parse_program(path.read_text(encoding="utf-8"), str(path), op_set=ops)


def test_the_suite_is_complete(cain_dir: Path, bench_kernels: dict) -> None:
    programs = sorted(cain_dir.glob("*.scamp5"))
    assert len(programs) == 17
    assert {p.name.split(".")[0] for p in programs} <= set(bench_kernels)


def test_parses_in_its_op_set_and_prints_back(cain_program: Path, cain_ops: str) -> None:
    program = _load(cain_program, cain_ops)
    assert program
    assert parse_program(format_program(program), op_set=cain_ops) == program


def test_holds_its_kernels_exactly(cain_program: Path, cain_targets: dict[str, Kernel]) -> None:
    verify_exact(_load(cain_program), cain_targets)


def test_matches_scipy_on_the_interior(cain_program: Path,
                                       cain_targets: dict[str, Kernel]) -> None:
    program = _load(cain_program)
    image = np.random.default_rng(7).integers(0, 256, size=(256, 256)).astype(float)
    result = simulate(program, image)
    rows, cols = footprint(program).interior(image.shape)
    for reg, kernel in cain_targets.items():
        expected = ndi.correlate(image, kernel.to_array(), mode="constant", cval=0.0)
        np.testing.assert_allclose(result[reg][rows, cols], expected[rows, cols], atol=1e-9)
    worst = verify_numeric(program, cain_targets, image)
    assert set(worst) == set(cain_targets)
    assert all(error < 1e-9 for error in worst.values())


# ---------------------------------------------------------------------------- mutants
def _flip_first_direction(program: list[Instr]) -> list[Instr]:
    """Point the first single-direction move (movx, addx, subx) the other way."""
    index = next(i for i, ins in enumerate(program) if isinstance(getattr(ins, "d", None), Dir))
    instr = program[index]
    flipped = dataclasses.replace(instr, d=instr.d.opposite())  # type: ignore[attr-defined]
    return [*program[:index], flipped, *program[index + 1:]]


def _swap_first_subtraction(program: list[Instr]) -> list[Instr]:
    """Swap minuend and subtrahend of the first subtraction where that stays a valid macro."""
    for index, instr in enumerate(program):
        if not isinstance(instr, Sub | Subx | Sub2x) or instr.x0 == instr.x1:
            continue
        swapped = dataclasses.replace(instr, x0=instr.x1, x1=instr.x0)
        if swapped.violation() is None:
            return [*program[:index], swapped, *program[index + 1:]]
    raise AssertionError("no subtraction to swap")


def _assert_both_checks_fail(mutant: list[Instr], targets: dict[str, Kernel],
                             exact_offsets: bool = True) -> None:
    with pytest.raises(VerificationError) as exact:
        verify_exact(mutant, targets)
    assert re.search(r"register [A-F] ", exact.value.message)
    if exact_offsets:
        assert EXACT_MESSAGE.search(exact.value.message), exact.value.message
    assert exact.value.program_text.splitlines() == [str(i) for i in mutant]
    image = np.random.default_rng(3).random((40, 48))
    with pytest.raises(VerificationError) as numeric:
        verify_numeric(mutant, targets, image)
    assert NUMERIC_MESSAGE.search(numeric.value.message), numeric.value.message


def test_flipped_direction_fails(cain_program: Path, cain_targets: dict[str, Kernel]) -> None:
    _assert_both_checks_fail(_flip_first_direction(_load(cain_program)), cain_targets)


@pytest.mark.parametrize("name", ["analognet2", "gauss5_gauss3", "laplacian",
                                  "sharpen", "sobel_xy"])
def test_swapped_operands_fail(name: str, cain_dir: Path, bench_kernels: dict) -> None:
    program = _load(cain_dir / f"{name}.scamp5")
    _assert_both_checks_fail(_swap_first_subtraction(program), bench_kernels[name.split(".")[0]])


REDUNDANT = {"gauss5_gauss3": 6, "smooth5_div64": 5}
"""Instructions Cain's programs can do without: `neg(A, E)` after `diva(E, A, D)` recomputes the
-E that A already holds (and likewise `neg(C, E)`), so both programs are one instruction long."""


def test_every_dropped_instruction_fails(cain_program: Path,
                                         cain_targets: dict[str, Kernel]) -> None:
    program = _load(cain_program)
    for index in range(len(program)):
        if REDUNDANT.get(cain_program.stem) == index:
            continue
        # dropping a definition can leave an output undefined: then there are no offsets to name
        _assert_both_checks_fail(program[:index] + program[index + 1:], cain_targets,
                                 exact_offsets=False)


@pytest.mark.parametrize(("name", "index"), sorted(REDUNDANT.items()))
def test_cain_redundant_instruction_can_go(name: str, index: int, cain_dir: Path,
                                           bench_kernels: dict) -> None:
    program = _load(cain_dir / f"{name}.scamp5")
    assert isinstance(program[index], Neg)
    shorter = program[:index] + program[index + 1:]
    verify_exact(shorter, bench_kernels[name])
    verify_numeric(shorter, bench_kernels[name], np.random.default_rng(5).random((32, 32)))


def test_exact_message_lists_the_wrong_offsets(cain_dir: Path, bench_kernels: dict) -> None:
    program = _flip_first_direction(_load(cain_dir / "sobel.scamp5"))
    assert str(program[0]) == "movx(B, A, north);"
    with pytest.raises(VerificationError) as err:
        verify_exact(program, bench_kernels["sobel"])
    assert err.value.message.startswith(
        "register A differs at 8 offset(s): (-1, -1): got 0, want 1, (-1, 0): got 1, want 2, ")
