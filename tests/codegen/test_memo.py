"""`codegen.Memo`: searches that share networks, moves and rankings find exactly what they find
alone (the memo only saves time), whatever register budget or op set came before."""

from __future__ import annotations

from fractions import Fraction

from kalg import codegen
from kalg.diagnostics import RegisterPressureError
from kalg.eqsat.optimize import direct_decomposition
from kalg.kernel import Kernel


def _outcome(decomp, registers, op_set, memo=None) -> list[str] | None:
    try:
        program = codegen.generate(decomp, registers, "A", op_set, codegen.QUICK, memo=memo)
    except RegisterPressureError:
        return None
    return [str(i) for i in program]


def test_a_shared_memo_gives_the_same_programs_as_fresh_searches():
    kernel = Kernel.from_rows([[1, 2, 1], [2, 4, 2], [1, 2, 1]]).scale(Fraction(1, 16))
    decomp = direct_decomposition({"A": kernel})
    memo = codegen.Memo()
    for op_set in ("basic", "all"):
        for registers in (("A", "B", "C"), ("A", "B", "C", "D"), tuple("ABCDEF")):
            shared = _outcome(decomp, registers, op_set, memo)
            assert shared == _outcome(decomp, registers, op_set), (op_set, registers)
    assert shared is not None  # the six-register search found a program
