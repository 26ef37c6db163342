"""A one-output program moved into a filter's stage (`codegen.relocate`): the same length,
the output in its register, the input kept where asked, only the stage's registers written;
refused exactly where the module says it cannot be done."""

from __future__ import annotations

from kalg.algebra.kernel import Kernel
from kalg.targets.scamp5.codegen import relocate
from kalg.targets.scamp5.machine.isa import Add, Add3, Dir, Div, Diva, Movx, Sub
from kalg.targets.scamp5.machine.symbolic import execute, verify_exact

# input + its east and north shifts, minus its west shift, made in A over A..D; the input is
# overwritten by the fourth instruction, which also reads it
ALONE = [Movx("B", "A", Dir.EAST), Movx("C", "A", Dir.NORTH), Movx("D", "A", Dir.WEST),
         Add3("A", "A", "B", "C"), Sub("A", "A", "D")]
KERNEL = execute(ALONE)["A"]


def written(program):
    return {r for instr in program for r in instr.writes()}


def test_a_stage_keeping_the_input_gets_the_program_with_the_output_in_its_register():
    moved = relocate(ALONE, ("A", "C", "D", "E", "F"), "A", "F")
    assert moved is not None and len(moved) == len(ALONE)
    verify_exact(moved, {"F": KERNEL, "A": Kernel.unit()}, "A")
    assert written(moved) <= {"C", "D", "E", "F"}


def test_the_output_in_the_input_register_is_renamed_into_the_free_registers():
    moved = relocate(ALONE, ("A", "D", "E", "F"), "A", "A")
    assert moved is not None and len(moved) == len(ALONE)
    verify_exact(moved, {"A": KERNEL}, "A")
    assert written(moved) <= {"A", "D", "E", "F"}


def test_a_program_on_every_register_fits_where_its_values_do_not_live_at_once():
    chain = [Movx("B", "A", Dir.EAST), Add("C", "A", "B"), Movx("D", "C", Dir.NORTH),
             Add("E", "C", "D"), Movx("F", "E", Dir.WEST), Add("A", "E", "F")]
    moved = relocate(chain, ("A", "B", "C", "D"), "A", "D")
    assert moved is not None and len(moved) == len(chain)
    verify_exact(moved, {"D": execute(chain)["A"], "A": Kernel.unit()}, "A")
    assert relocate(chain, ("A", "B", "C"), "A", "C") is None  # four values live at once


def test_too_few_free_registers_are_refused():
    # four registers used: the input kept needs a fifth; in place, four
    assert relocate(ALONE, ("A", "C", "D", "E"), "A", "E") is None
    assert relocate(ALONE, ("A", "D", "E"), "A", "A") is None


def test_an_input_halved_in_place_or_never_written_cannot_be_kept():
    halved = [Diva("A", "B", "C"), Movx("A", "A", Dir.EAST)]
    poisoned = [Div("B", "C", "A"), Movx("A", "B", Dir.EAST)]
    assert relocate(halved, ("A", "B", "C", "D", "E", "F"), "A", "F") is None
    assert relocate(poisoned, ("A", "B", "C", "D", "E", "F"), "A", "F") is None
    assert relocate([], ("A", "B", "C"), "A", "B") is None


def test_every_golden_program_moved_where_it_fits_computes_its_kernel_in_the_stage():
    # 1,120 relocations of the golden programs that leave their output in A (588 fit)
    from pathlib import Path

    from kalg.targets.scamp5.machine.text import parse_program

    fitted = 0
    for path in sorted(Path(__file__).parents[1].glob("golden/*.scamp5")):
        program = parse_program(path.read_text())
        if not any("A" in instr.writes() for instr in program):
            continue
        want = execute(program)["A"]
        for size in range(2, 7):
            for free in ("ABCDEF"[:size], "A" + "ABCDEF"[7 - size:]):
                for output in free:
                    moved = relocate(program, tuple(free), "A", output)
                    if moved is None:
                        continue
                    fitted += 1
                    assert len(moved) == len(program)
                    verify_exact(moved, {output: want} | (
                        {} if output == "A" else {"A": Kernel.unit()}), "A")
                    assert written(moved) <= set(free)
    assert fitted > 500
