"""Monotone in resources (issue 11): for the same kernel, a larger register budget never gives a
longer program, and never "no program" where the smaller budget finds one; nor does op set `all`
instead of `basic` where basic's program is an `all` program too (`all` has no `divq`: a basic
program counts where each divq can be a div with free scratch registers, `codegen.opset`).
Checked on random small kernels and on the kernel where it once failed."""

from __future__ import annotations

import contextlib
import itertools
from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kalg import effort
from kalg.algebra.kernel import Kernel
from kalg.diagnostics import RegisterPressureError
from kalg.targets.scamp5 import codegen, portfolio
from kalg.targets.scamp5.codegen.opset import as_op_set_all
from kalg.targets.scamp5.machine.isa import REGISTERS
from kalg.targets.scamp5.machine.symbolic import verify_exact
from kalg.targets.scamp5.optimize import direct_decomposition
from kalg.targets.scamp5.pipeline import Settings, compile_file, compile_text

EXAMPLES = __import__("pathlib").Path(__file__).resolve().parents[1] / "examples"

kernels_3x3 = st.dictionaries(
    st.tuples(st.integers(-1, 1), st.integers(-1, 1)), st.integers(-4, 4).filter(bool),
    min_size=2, max_size=6,
).map(lambda taps: Kernel.of(taps).scale(Fraction(1, 2)))

BUDGETS = [tuple("AB"), tuple("ABC"), REGISTERS]
"""Register budgets from small to large, each a subset of the next."""


def _length(candidates, registers, ops) -> int | None:
    budget = portfolio.Resources(registers, "A", ops, ("A",), REGISTERS)
    try:
        return len(portfolio.best_on_ladder(candidates, budget).program)
    except RegisterPressureError:
        return None


def _basic_as_all(candidates, registers) -> int | None:
    """The length of basic's program where it is an op set all program too, else None."""
    budget = portfolio.Resources(registers, "A", "basic", ("A",), REGISTERS)
    try:
        program = portfolio.best_on_ladder(candidates, budget).program
    except RegisterPressureError:
        return None
    return None if (made := as_op_set_all(program, registers, "A")) is None else len(made)


def _candidates(k: Kernel) -> dict[str, dict]:
    outputs = {"A": k}
    shared = {"horner": direct_decomposition(outputs)}
    if (chain := codegen.factor_chain(outputs)) is not None:
        shared["factor chain"] = chain
    return {"basic": dict(shared), "all": dict(shared)}


def _not_longer(small: int | None, large: int | None) -> bool:
    return small is None or (large is not None and large <= small)


@settings(max_examples=3, deadline=None)
@given(k=kernels_3x3)
def test_more_registers_or_op_set_all_never_give_a_longer_program(k):
    candidates = _candidates(k)
    for ops in ("basic", "all"):
        lengths = [_length(candidates, regs, ops) for regs in BUDGETS]
        for small, large in itertools.pairwise(lengths):
            assert _not_longer(small, large), (ops, lengths)
    for regs in BUDGETS:
        assert _not_longer(_basic_as_all(candidates, regs), _length(candidates, regs, "all"))


def test_a_rung_is_the_same_search_whichever_budget_it_belongs_to():
    # The three-register rung of A C E and of A..F: the same virtual registers, so the same
    # search; its program lands on each budget's own registers.
    small = portfolio.Resources(("A", "C", "E"), "A", "all", ("A",), REGISTERS)
    large = portfolio.Resources(REGISTERS, "A", "all", ("A",), REGISTERS)
    assert small.sizes() == [2, 3] and large.sizes() == [2, 3, 6]
    (virtual, onto_small), (same, onto_large) = small.rung(3), large.rung(3)
    assert virtual == same == ("A", "B", "C")
    assert onto_small == {"B": "C", "C": "E"} and onto_large == {"B": "B", "C": "C"}


def test_a_program_of_a_smaller_rung_is_renamed_onto_the_budget_and_verified():
    k = Kernel.from_rows([[1, 2, 1], [2, 4, 2], [1, 2, 1]]).scale(Fraction(1, 16))
    budget = portfolio.Resources(("A", "D", "F"), "A", "all", ("A",), REGISTERS)
    program = portfolio.best_on_ladder(_candidates(k), budget).program
    assert {r for i in program for r in i.registers()} <= {"A", "D", "F"}
    verify_exact(program, {"A": k}, "A")


@pytest.mark.parametrize("ops", ["all", "basic"])
def test_gauss3_with_six_registers_is_not_longer_than_with_three(ops):
    # Regression: gauss3 was 9 instructions with --registers A,B,C and 10 with A..F (op set
    # all): the screen refined only the e-graph's candidate, whose program was longer.
    path = EXAMPLES / "gauss3.kalg"
    three = compile_file(path, Settings(ops=ops, registers=("A", "B", "C")))
    six = compile_file(path, Settings(ops=ops, registers=REGISTERS))
    assert len(six.program) <= len(three.program)
    if ops == "all":
        basic = compile_file(path, Settings(ops="basic", registers=REGISTERS))
        assert len(six.program) <= len(basic.program)


def test_best_screened_candidate_of_a_full_rung_is_refined_twice(monkeypatch):
    # Issue 6: the beam search is not monotonic in its budget; a narrower refine of the best
    # screened candidate found analognet2 in 17 instructions where the wider one stopped at 20.
    lengths = {"long": 9, "short": 7, "tie": 7}
    calls = []

    def fake(name, registers, input_register, ops, limits, memo=None, longest=None):
        calls.append((len(registers), name, limits))
        shorter = limits is portfolio.REFINE_NARROW and name == "short"
        program = ["instr"] * (lengths[name] - (2 if shorter else 0))
        return None if longest is not None and len(program) > longest else program

    monkeypatch.setattr(codegen, "generate", fake)
    monkeypatch.setattr(portfolio, "bus_steps", lambda program: 0)
    monkeypatch.setattr(portfolio, "outside_op_set", lambda program, ops: None)  # stand-ins
    # `calls` is this process's: a rung run by a forked worker would record nothing here.
    monkeypatch.setenv("KALG_WORKERS", "1")

    class Named(str):  # a stand-in decomposition: its name, no live values, no outputs
        def live(self):
            return []

        def output_kernels(self):
            return {}

    candidates = {"basic": {}, "all": {n: Named(n) for n in ("long", "short", "tie")}}
    budget = portfolio.Resources(REGISTERS, "A", "all", ("A",), REGISTERS)
    candidates["basic"] = dict(candidates["all"])
    best = portfolio.best_on_ladder(candidates, budget)
    assert best.stop is None  # no --timeout: every search ran
    assert best.candidate == "short" and len(best.program) == 5
    refined = [(size, n, lim) for size, n, lim in calls
               if lim not in (portfolio.SCREEN, portfolio.SCREEN_ONLY)]
    assert refined == [(6, "short", portfolio.REFINE), (6, "short", portfolio.REFINE_NARROW)] * 2


def test_a_fraction_in_two_registers_under_op_set_all_is_refused_without_a_search(monkeypatch):
    # Every halving of op set all (div, diva) takes three different registers, so a kernel
    # with a fraction has no program in two: that rung was searched to the end for nothing
    # (4 s of dog7's CPU). It is now refused at once, with the error its search ended with.
    k = Kernel.of({(0, 0): 2, (1, 0): 1, (-1, 0): 1}).scale(Fraction(1, 4))
    candidates = _candidates(k)
    last = list(portfolio._distinct(candidates["all"]).values())[-1]
    with pytest.raises(RegisterPressureError) as searched:
        codegen.generate(last, tuple("AB"), "A", "all")
    usable = portfolio._distinct(candidates["all"])
    refused = portfolio._no_division(usable, tuple("AB"), "all")
    assert (str(refused), refused.hint) == (str(searched.value), searched.value.hint)
    monkeypatch.setenv("KALG_WORKERS", "1")  # every search in this process, where it is seen
    calls = []
    real = codegen.generate
    monkeypatch.setattr(codegen, "generate", lambda *a, **kw: calls.append(a) or real(*a, **kw))
    budget = portfolio.Resources(tuple("AB"), "A", "all", ("A",), REGISTERS)
    with contextlib.suppress(RegisterPressureError):
        portfolio.best_on_ladder(candidates, budget)
    assert calls and not [a for a in calls if a[3] == "all"]  # only basic was searched
    # an integer kernel in two registers is still searched under op set all
    calls.clear()
    _length(_candidates(k.scale(4)), tuple("AB"), "all")
    assert [a for a in calls if a[3] == "all"]


def _searches(monkeypatch) -> list[tuple[str, int, object]]:
    """The code generator's searches, recorded as (op set, registers, limits): all in this
    process (`KALG_WORKERS=1`), where they are seen."""
    monkeypatch.setenv("KALG_WORKERS", "1")
    calls: list[tuple[str, int, object]] = []
    real = codegen.generate

    def recorded(*args, **kwargs):
        calls.append((args[3], len(args[1]), args[4]))
        return real(*args, **kwargs)

    monkeypatch.setattr(codegen, "generate", recorded)
    return calls


SHORT = Kernel.from_rows([[1, 2, 1]])
"""A kernel whose programs (op set all: 3 instructions, basic: 4, no division) the exact search
proves shortest on A..F."""


@pytest.mark.parametrize("ops", ["all", "basic"])
def test_a_program_proven_shortest_leaves_out_only_searches_that_cannot_beat_it(monkeypatch,
                                                                              ops):
    # Issue 26: op set all ran every rung of op set basic as well, and every full rung refined
    # its best screened program, even where the exact search proves that program shortest
    # with the fewest bus steps. Those searches are left out now; the program must be the one
    # the whole ladder finds, so every contract above holds as it did.
    candidates = _candidates(SHORT)
    budget = portfolio.Resources(REGISTERS, "A", ops, ("A",), REGISTERS)
    calls = _searches(monkeypatch)
    cut = portfolio.best_on_ladder(candidates, budget)
    refines = (portfolio.REFINE, portfolio.REFINE_NARROW)
    assert not [c for c in calls if c[0] != ops or c[2] in refines], calls
    calls.clear()
    monkeypatch.setattr(portfolio, "_unbeatable", lambda *args: None)  # nothing proven
    whole = portfolio.best_on_ladder(candidates, budget)
    assert {c[0] for c in calls} == set(budget.op_sets())
    assert [c for c in calls if c[2] in refines]
    assert (cut.program, cut.candidate) == (whole.program, whole.candidate)


def test_a_proven_length_with_a_division_does_not_leave_out_basic(monkeypatch):
    # A program with a div has more bus steps than its length needs: a basic program of the
    # same length and fewer bus steps would win the tie, so basic's rungs still run.
    candidates = _candidates(SHORT.scale(Fraction(1, 2)))
    budget = portfolio.Resources(REGISTERS, "A", "all", ("A",), REGISTERS)
    calls = _searches(monkeypatch)
    best = portfolio.best_on_ladder(candidates, budget)
    assert portfolio.bus_steps(best.program) > portfolio.fewest_bus(len(best.program), "all")
    assert [c for c in calls if c[0] == "basic" and c[1] == 6]


def test_a_proven_screen_still_refines_candidates_placed_before_it(monkeypatch):
    # A refine of a candidate placed earlier may tie the proven program and win the tie
    # (ties keep the earlier candidate): at --effort high those refines still run.
    lengths = {"long": 9, "short": 7, "tie": 7}
    calls = []

    def fake(name, registers, input_register, ops, limits, memo=None, longest=None):
        calls.append((ops, len(registers), name, limits))
        program = ["instr"] * lengths[name]
        return None if longest is not None and len(program) > longest else program

    class Named(str):  # a stand-in decomposition: its name, no live values, no outputs
        def live(self):
            return []

        def output_kernels(self):
            return {}

    monkeypatch.setattr(codegen, "generate", fake)
    monkeypatch.setattr(portfolio, "bus_steps", lambda program: 0)
    monkeypatch.setattr(portfolio, "outside_op_set", lambda program, ops: None)
    monkeypatch.setattr(portfolio, "_unbeatable", lambda *args: "proven")
    monkeypatch.setenv("KALG_WORKERS", "1")
    named = {n: Named(n) for n in ("long", "short", "tie")}
    candidates = {"basic": dict(named), "all": dict(named)}
    budget = portfolio.Resources(REGISTERS, "A", "all", ("A",), REGISTERS)
    with effort.using("high") as level:
        best = portfolio.best_on_ladder(candidates, budget)
    assert best.candidate == "short"
    assert not [c for c in calls if c[0] == "basic"]  # op set all's program is proven
    refined = [c[1:] for c in calls if c[3] not in (portfolio.SCREEN, portfolio.SCREEN_ONLY)]
    assert refined == [(6, "long", level.widened(portfolio.REFINE))]


def _exact_searches(monkeypatch) -> list[tuple[int, int]]:
    """(max_length, nodes) of every exact search the compiles run from now on, in one process."""
    from kalg.targets.scamp5.exact import exhaustive

    monkeypatch.setenv("KALG_WORKERS", "1")
    calls = []
    real = exhaustive.shortest_program

    def counted(kernel, **kwargs):
        calls.append((kwargs["max_length"], kwargs["nodes"]))
        return real(kernel, **kwargs)

    monkeypatch.setattr(exhaustive, "shortest_program", counted)
    return calls


def test_the_pipeline_does_not_run_the_ladders_proof_again(monkeypatch):
    # The top rung's exact search (`portfolio._unbeatable`) is the one the pipeline runs to
    # prove a short program shortest (`pipeline._exhaustive`): the same arguments, so its
    # outcome is passed on (`portfolio.remembered`) instead of being searched for twice.
    from kalg.targets.scamp5 import pipeline

    assert (portfolio.PROOF_NODES, portfolio.PROVE_UP_TO) == (pipeline.EXACT_NODES,
                                                              pipeline.EXACT_UP_TO)
    calls = _exact_searches(monkeypatch)
    text = ("target scamp5 { registers: A..F, input: A, ops: all }\n"
            "kernel k = [0 0 0 ; 1 2 1 ; 0 0 0]\n")
    result = compile_text(text)
    length = len(result.program)
    assert "proven shortest" in result.text
    assert calls.count((length - 1, pipeline.EXACT_NODES)) == 1, calls


def test_the_pipeline_does_not_search_again_when_the_ladders_search_found_a_shorter_program(
        monkeypatch):
    # The top rung's exact search may find a program shorter than the rung's screened one
    # ([1 2 -3]: screened 5, the search finds 4). That outcome was thrown away and the
    # pipeline ran the very same search again (a tenth of a tiny kernel's compile); it is
    # now passed on like a proof, and the program is the one the search found.
    from kalg.targets.scamp5 import pipeline

    calls = _exact_searches(monkeypatch)
    result = compile_text("target scamp5 { registers: A..F, input: A, ops: all }\n"
                          "kernel k = [1 2 -3]\n")
    searches = [c for c in calls if c[1] == pipeline.EXACT_NODES]
    assert (len(result.program), pipeline.EXACT_NODES) in searches, calls  # found shorter
    assert len(searches) == len(set(searches)), calls
    assert "proven shortest" in result.text
