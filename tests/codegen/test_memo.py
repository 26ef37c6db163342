"""`codegen.Memo`: searches that share networks, moves and rankings find exactly what they find
alone (the memo only saves time), whatever register budget or op set came before."""

from __future__ import annotations

from fractions import Fraction

from kalg.algebra.kernel import Kernel
from kalg.diagnostics import RegisterPressureError
from kalg.targets.scamp5 import codegen
from kalg.targets.scamp5.optimize import direct_decomposition


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


def test_a_memo_left_to_the_exit_is_empty_after_release_and_searches_the_same(monkeypatch):
    """In the `kalg` command (which ends with os._exit) a released memo's contents are left to
    the exit, not freed one by one: the memo is still empty afterwards, and searching with it
    again finds what a fresh search finds."""
    import gc

    from kalg import resources
    from kalg.targets.scamp5.codegen import memo as memo_module

    monkeypatch.setattr(resources, "_EXITS_AT_ONCE", True)
    monkeypatch.setattr(memo_module, "_LEFT", [])
    # whatever this test session holds already (Halide, large compiles: over 512 MiB)
    monkeypatch.setattr(memo_module, "LEAVE_UNDER_MIB", 1 << 20)
    kernel = Kernel.from_rows([[1, 0, -1], [2, 0, -2], [1, 0, -1]])
    decomp = direct_decomposition({"A": kernel})
    memo = codegen.Memo()
    try:
        first = _outcome(decomp, tuple("ABCDEF"), "all", memo)
        memo.release()
        assert memo_module._LEFT  # left to the exit, not freed
        assert not (memo._networks or memo._moves or memo._scorers or memo._bags)
        assert _outcome(decomp, tuple("ABCDEF"), "all", memo) == first
    finally:
        gc.unfreeze()  # the rest of the test session collects as usual
    assert first == _outcome(decomp, tuple("ABCDEF"), "all")


def test_kalg_bench_frees_each_compiles_caches_instead_of_holding_512_mib_of_them(monkeypatch):
    """Regression: `kalg bench` (many compiles in one process, which ends with os._exit) left
    every compile's caches to the exit until it held 512 MiB, garbage for the compiles after
    them and taken from their KALG_MEMORY_MIB headroom; it now frees each compile's caches."""
    from kalg import resources
    from kalg.cli import main
    from kalg.targets.scamp5.codegen import memo as memo_module

    monkeypatch.setattr(resources, "_EXITS_AT_ONCE", True)
    monkeypatch.setattr(resources, "_MANY_COMPILES", False)
    monkeypatch.setattr(memo_module, "_LEFT", [])
    seen = []
    real = memo_module.Memo.release

    def release(memo):
        seen.append(resources.exits_at_once())
        real(memo)
    monkeypatch.setattr(memo_module.Memo, "release", release)
    assert main(["bench", "box3", "--ops", "basic"]) == 0
    assert seen and not any(seen)  # every compile's caches freed, not left to the exit
    assert not memo_module._LEFT
    assert resources.exits_at_once()  # only during the bench: a later compile leaves them


# ----------------------------------------------------------------------------- memory bound
# A dense 7x7 kernel's searches held 800,000 operands (6 GB) and the program depended on the
# process's memory cap: over it, the constant-matrix fallback (134 instructions against 75).
# Searches now stop past `limits.HELD_OPERANDS` operands, a count (issue 26).
DENSE = Kernel.from_rows([[3, -1, 2, 0, 5], [1, 4, -3, 2, 0], [-2, 0, 5, -1, 3]])


def _held_by_search(limit: int | None, monkeypatch) -> tuple[list[str], int]:
    from kalg.targets.scamp5.codegen import limits

    if limit is not None:
        monkeypatch.setattr(limits, "HELD_OPERANDS", limit)
    memo = codegen.Memo()
    program = codegen.generate(direct_decomposition({"A": DENSE}), tuple("ABCDEF"), "A",
                               "all", codegen.QUICK, memo=memo)
    return [str(i) for i in program], memo.held()


def test_a_search_stops_once_its_memo_holds_the_bound_and_still_gives_a_program(monkeypatch):
    _, unbounded = _held_by_search(None, monkeypatch)
    program, held = _held_by_search(unbounded // 4, monkeypatch)
    assert held < unbounded  # stopped: generate verified the program it returned
    assert program


def test_trim_releases_a_memo_past_half_the_bound_and_keeps_a_smaller_one(monkeypatch):
    from kalg.targets.scamp5.codegen import limits

    memo = codegen.Memo()
    codegen.generate(direct_decomposition({"A": DENSE}), tuple("ABCDEF"), "A", "all",
                     codegen.QUICK, memo=memo)
    held = memo.held()
    monkeypatch.setattr(limits, "HELD_OPERANDS", 2 * held + 2)
    memo.trim(direct_decomposition({"A": DENSE}))
    assert memo.held() == held
    monkeypatch.setattr(limits, "HELD_OPERANDS", 2 * held - 2)
    memo.trim(direct_decomposition({"A": DENSE}))
    assert memo.held() == 0



def test_trim_keeps_the_next_searchs_decomposition_and_drops_the_others(monkeypatch):
    from kalg.targets.scamp5.codegen import limits

    other = direct_decomposition({"A": Kernel.from_rows([[1, 2, 1], [2, 4, 2], [1, 2, 1]])})
    mine = direct_decomposition({"A": DENSE})
    memo = codegen.Memo()
    for decomp in (other, mine):
        codegen.generate(decomp, tuple("ABCDEF"), "A", "all", codegen.QUICK, memo=memo)
    fresh = codegen.Memo()
    codegen.generate(mine, tuple("ABCDEF"), "A", "all", codegen.QUICK, memo=fresh)
    assert memo.held() > fresh.held()
    monkeypatch.setattr(limits, "HELD_OPERANDS", 2 * memo.held() - 2)
    memo.trim(mine)
    assert memo.held() == fresh.held()  # only `mine`'s networks are left
