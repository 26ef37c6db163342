"""A program said to be in an op set uses only that op set's macros.

Regression: with op set all on two registers, a halving kernel came out with `divq` (basic's
halving, which Cain's op set all does not have), under a header saying "op set all"; `kalg
simulate --ops all` then rejected kalg's own program. The basic rungs searched for an `all`
budget now count only where their program has no `divq`, and the pipeline checks the claim.
"""

import pytest

import kalg
from kalg.diagnostics import RegisterPressureError
from kalg.targets.scamp5.machine.isa import OP_SETS, outside_op_set

HALVING = [[1, 2, 1]]
DIVISOR = 4


def test_op_set_all_on_two_registers_gives_no_divq_program_but_says_why():
    with pytest.raises(RegisterPressureError) as err:
        kalg.compile(HALVING, divisor=DIVISOR, registers="A,B", ops="all")
    assert "--ops basic" in err.value.hint


def test_op_set_basic_on_two_registers_halves_with_divq():
    result = kalg.compile(HALVING, divisor=DIVISOR, registers="A,B", ops="basic")
    assert any(i.mnemonic == "divq" for i in result.program)
    assert outside_op_set(result.program, "basic") is None


@pytest.mark.parametrize("ops", ["all", "basic"])
def test_every_instruction_of_a_program_is_in_its_op_set(ops):
    result = kalg.compile(HALVING, divisor=DIVISOR, registers="A,B,C", ops=ops)
    assert all(type(i) in OP_SETS[ops] for i in result.program)


def test_a_basic_program_becomes_an_all_program_where_div_has_scratch():
    from kalg.targets.scamp5.codegen.opset import as_op_set_all
    from kalg.targets.scamp5.machine.isa import Add, Dir, Div, Div4, Divq, Movx

    halve_dead = [Divq("B", "A"), Movx("A", "B", Dir.EAST), Add("A", "A", "B")]
    # A is written (movx) before it is read again, so dead after the divq; C is free: div(B, C, A)
    assert as_op_set_all(halve_dead, "ABC", ["A"]) == [Div("B", "C", "A"), *halve_dead[1:]]
    halve_kept = [Divq("B", "A"), Add("A", "A", "B")]  # A read after: two scratch registers
    assert as_op_set_all(halve_kept, "ABCD", ["A"]) == [Div4("B", "C", "D", "A"), halve_kept[1]]
    assert as_op_set_all(halve_kept, "ABC", ["A"]) is None
