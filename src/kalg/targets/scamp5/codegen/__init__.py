"""Code generation: Decomposition → the shortest SCAMP-5 program found within a register budget.

Pipeline (each step one module):

1. `network.normalise` folds shifts and negations into signed, shifted sums, under a few inlining
   policies (each may suit a decomposition better; all are tried and the shortest program wins);
2. `search.search` schedules and selects instructions together, backwards from the outputs,
   keeping live values within the budget (bounded, deterministic beam search);
   `sequential.sequential` is the fallback when the beam finds nothing (depth-first, no search);
3. `regalloc.allocate` assigns physical registers under the ISA's operand rules;
4. for two or more outputs, the outputs are also compiled one after another (`_in_sequence`),
   and the shorter program wins: together is never longer than in sequence (with
   `Limits.in_sequence` off, as in `QUICK`, only when the joint search finds nothing);
5. every program is verified exactly before it is returned.

`chain.factor_chain` builds a candidate decomposition for large factorable kernels (the
pipeline offers it next to the e-graph's).

>>> from kalg.algebra.decomp import DagBuilder
>>> b = DagBuilder()
>>> s = b.add(b.shift(b.input, 1, 0), b.shift(b.input, -1, 0))
>>> [str(i) for i in generate(b.build({"A": s}))]
['mov2x(B, A, west, west);', 'addx(A, B, A, east);']
"""

from __future__ import annotations

from collections.abc import Sequence

from kalg.algebra.decomp import Decomposition, Op
from kalg.diagnostics import RegisterPressureError, VerificationError
from kalg.resources import collector_paused
from kalg.targets.scamp5.codegen.chain import factor_chain
from kalg.targets.scamp5.codegen.cse import cse_program
from kalg.targets.scamp5.codegen.filling import last_written
from kalg.targets.scamp5.codegen.goalbag import goalbag_program
from kalg.targets.scamp5.codegen.limits import QUICK, Budget, Limits
from kalg.targets.scamp5.codegen.matrix import matrix_program
from kalg.targets.scamp5.codegen.memo import Memo
from kalg.targets.scamp5.codegen.regalloc import allocate
from kalg.targets.scamp5.codegen.relocate import relocate
from kalg.targets.scamp5.codegen.reverse import reverse_program
from kalg.targets.scamp5.codegen.search import search
from kalg.targets.scamp5.codegen.sequential import sequential
from kalg.targets.scamp5.machine.isa import (
    OP_SETS,
    REGISTERS,
    Instr,
    bus_steps,
    first_undefined_read,
    op_set_violation,
)
from kalg.targets.scamp5.machine.symbolic import verify_exact, verify_exact_channels

__all__ = ["QUICK", "Limits", "Memo", "check_program", "collector_paused", "cse_filter",
           "factor_chain", "full_filter", "generate", "goalbag_filter", "matrix_channels",
           "matrix_filter", "pressure_error", "relocate", "reverse_filter", "verify_program"]

INLINE_CAPS = (0, 4, 8)
"""Inlining policies tried (see `network.normalise`): 0 keeps the decomposition's structure."""


def generate(decomp: Decomposition, registers: Sequence[str] = REGISTERS,
             input_register: str = "A", op_set: str = "all",
             limits: Limits | None = None, memo: Memo | None = None,
             longest: int | None = None) -> list[Instr] | None:
    """A verified program leaving each output of `decomp` in its named register.

    Uses only `registers` and the macros of `op_set` ("all" or "basic"); the input starts in
    `input_register`. Raises `RegisterPressureError` when no program within the budget was found
    and `VerificationError` if a generated program is wrong (a bug). Deterministic. `memo` lets
    calls on the same decomposition share their networks, moves and rankings (`memo.Memo`):
    the program is the same with or without it.

    `longest` (a caller that already has a program this short: a longer one cannot win) bounds
    the search (`limits.Budget.longest`): the program returned has at most `longest`
    instructions, and None (never an error) means none that short was found.
    """
    _check_arguments(decomp, registers, input_register, op_set)
    limits = limits or Limits()
    if memo is not None:
        memo.trim(decomp)
        return _generate(decomp, registers, input_register, op_set, limits, memo, longest)
    memo = Memo()  # this call's own: released when it returns
    try:
        return _generate(decomp, registers, input_register, op_set, limits, memo, longest)
    finally:
        memo.release()


def _generate(decomp: Decomposition, registers: Sequence[str], input_register: str,
              op_set: str, limits: Limits, memo: Memo,
              longest: int | None) -> list[Instr] | None:
    best = _joint(decomp, registers, input_register, op_set, limits, memo, longest)
    joined = None
    if best is None or limits.in_sequence:
        bound = longest if best is None else len(best)
        joined = _in_sequence(decomp, registers, input_register, op_set, limits, memo, bound)
    if joined is not None and (best is None or _score(joined) < _score(best)):
        _verify(joined, decomp, input_register, op_set, registers)
        best = joined
    if best is None and longest is None:
        raise pressure_error(decomp, registers, op_set)
    return best


def _joint(decomp: Decomposition, registers: Sequence[str], input_register: str, op_set: str,
           limits: Limits, memo: Memo, longest: int | None = None) -> list[Instr] | None:
    """`generate` without `_in_sequence`: all outputs by one search (one stage of a sequence);
    None where nothing (within `longest`, if given) was found."""
    budget = Budget(limits, longest, memo.held)
    best: list[Instr] | None = None
    for program in _candidates(decomp, registers, input_register, op_set, limits, budget,
                               memo):
        if best is None or _score(program) < _score(best):
            best = program
    if best is not None:
        _verify(best, decomp, input_register, op_set, registers)
    return best


def _candidates(decomp, registers, input_register, op_set, limits, budget, memo):
    """The best allocatable program of each inlining policy (the search's, else the fallback
    schedule's; once the budget is spent and one program exists, the rest are skipped), each
    within `budget.longest`, which falls to each program's length as it is found (a later
    policy is only worth a program at least as short)."""
    seen = set()
    found = False
    for cap in INLINE_CAPS:
        if found and budget.spent():
            return
        net = memo.network(decomp, cap)
        if net in seen:
            continue
        seen.add(net)
        schedules = search(net, len(registers), op_set, limits, input_register, budget, memo)
        for schedule in [*schedules, *_fallbacks(net, op_set)]:
            if not budget.within(schedule.cost):
                continue  # allocation never shortens a schedule
            program = allocate(schedule, registers, input_register)
            if program is not None:
                if budget.within(len(program)):
                    found = True
                    budget.tighten(len(program))
                    yield program
                break


def _in_sequence(decomp: Decomposition, registers: Sequence[str], input_register: str,
                 op_set: str, limits: Limits, memo: Memo | None = None,
                 longest: int | None = None) -> list[Instr] | None:
    """The outputs one after another, each by its own program (None for fewer than two outputs,
    or when a stage does not fit): a filter's program is then never longer than its outputs'
    programs concatenated, whatever register pressure does to the joint search.

    Each stage computes one output (its part of the DAG only) into its register, keeping the
    input in its register and the outputs made so far in theirs, so its budget is the registers
    not yet holding an output; the output that goes to the input's register comes last. With
    `longest`, each stage is bounded by what the earlier ones left of it (None past it).
    """
    outputs = dict(decomp.outputs)
    if len(outputs) < 2:
        return None
    memo = memo or Memo()
    order = sorted(outputs, key=lambda reg: (reg == input_register, registers.index(reg)))
    program: list[Instr] = []
    done: list[str] = []
    for reg in order:
        keep = () if reg == input_register else ((input_register, 0),)
        stage = Decomposition(decomp.values, ((reg, outputs[reg]), *keep))
        free = [r for r in registers if r not in done]
        left = None if longest is None else longest - len(program)
        if left is not None and left < 0:
            return None
        part = _joint(stage, free, input_register, op_set, limits, memo, left)
        if part is None:
            return None
        program += part
        done.append(reg)
    return program


def _fallbacks(net, op_set):
    """The fallback schedules (`sequential`), sharing each node within a sum first (linear on
    chains), then making it for every term (a register fewer on some networks)."""
    for share in (True, False):
        if (schedule := sequential(net, op_set, share)) is not None:
            yield schedule


def _score(program: list[Instr]) -> tuple[int, int]:
    return (len(program), bus_steps(program))


def _check_arguments(decomp: Decomposition, registers: Sequence[str], input_register: str,
                     op_set: str) -> None:
    if op_set not in OP_SETS:
        raise ValueError(f"unknown op set {op_set!r}; choose one of {sorted(OP_SETS)}")
    if input_register not in registers:
        raise ValueError(f"input register {input_register} is not among {list(registers)}")
    if missing := sorted({r for r, _ in decomp.outputs} - set(registers)):
        raise ValueError(f"output registers {missing} are not among {list(registers)}")


def pressure_error(decomp: Decomposition, registers: Sequence[str],
                   op_set: str) -> RegisterPressureError:
    """The error of a `generate` that finds no program for `decomp` within `registers`."""
    outputs = len({r for r, _ in decomp.outputs})
    message = (f"no program for the {outputs} output(s) fits in {len(registers)} register(s) "
               f"{' '.join(registers)}")
    halves = any(decomp.values[i].op is Op.HALF for i in decomp.live())
    if op_set == "all" and halves and len(registers) < 3:
        hint = ("op set all halves with div and diva, which need three different registers: "
                "give at least three, or use --ops basic (its divq halves in two)")
    else:
        hint = ("every order tried keeps more values alive at once (div's scratch registers "
                "included) than that; give more registers or a decomposition that shares less")
    return RegisterPressureError(message, hint=hint)


def _verify(program: list[Instr], decomp: Decomposition, input_register: str, op_set: str,
            registers: Sequence[str]) -> None:
    """Every instruction legal, in the op set and on allowed registers; outputs exact."""
    verify_program(program, decomp.output_kernels(), input_register, op_set, registers)


def verify_program(program: list[Instr], targets: dict, input_register: str, op_set: str,
                   registers: Sequence[str]) -> None:
    """`_verify` for any program and target kernels (register -> Kernel; a kept input's
    register: the unit kernel): within `registers` and the op set, and every target computed
    exactly. VerificationError otherwise (a kalg bug)."""
    check_program(program, registers, op_set, (input_register,))
    verify_exact(program, targets, input_register)


def _foreign_register(instr: Instr, registers: Sequence[str]) -> str | None:
    extra = sorted(set(instr.registers()) - set(registers))
    return f"uses register(s) {extra} outside the budget" if extra else None


def matrix_filter(outputs, registers: Sequence[str], input_register: str,
                  op_set: str) -> list[Instr] | None:
    """The filter `outputs` (register → Kernel) as a constant-matrix multiplication over the
    input divided once (`matrix.matrix_program`), verified exactly; None where that
    construction finds no program (non-dyadic kernels, no room for the pool's s)."""
    parts = {reg: {input_register: k} for reg, k in outputs.items()}
    program = matrix_program(parts, registers, (input_register,), op_set)
    if program is None:
        return None
    check_program(program, registers, op_set, (input_register,))
    verify_exact(program, outputs, input_register)
    return program


def full_filter(outputs, registers: Sequence[str], input_register: str,
                op_set: str) -> tuple[list[Instr] | None, str]:
    """A filter with one output per register (`filling.last_written`), verified exactly, and
    which output was written last; or (None, why no program was found)."""
    program, how = last_written(outputs, registers, input_register, op_set)
    if program is not None:
        verify_program(program, outputs, input_register, op_set, registers)
    return program, how


def matrix_channels(outputs, registers: Sequence[str], inputs: Sequence[str],
                    op_set: str) -> list[Instr] | None:
    """`matrix_filter` for a filter over several inputs: `outputs` maps each output register
    to input register → kernel. Verified exactly on every channel (`verify_exact_channels`)."""
    program = matrix_program(outputs, registers, tuple(inputs), op_set)
    if program is None:
        return None
    check_program(program, registers, op_set, tuple(inputs))
    verify_exact_channels(program, outputs, tuple(inputs))
    return program


def check_program(program: list[Instr], registers: Sequence[str], op_set: str,
                  inputs: tuple[str, ...]) -> None:
    """The one check of a program kalg made, before its values are (`verify_exact`): every
    instruction legal, in the op set and on the budget's registers, and every register read
    holds a value - an input, or one written since and not left undefined by the instruction
    that wrote it (`first_undefined_read`). VerificationError names the instruction."""
    text = "\n".join(str(i) for i in program)
    for instr in program:
        if problem := (instr.violation() or op_set_violation(instr, op_set)
                       or _foreign_register(instr, registers)):
            raise VerificationError(f"{instr}: {problem}", program_text=text)
    if (found := first_undefined_read(program, inputs)) is not None:
        _, instr, undefined = found
        raise VerificationError(f"{instr}: reads undefined register(s) {undefined}",
                                program_text=text)


def cse_filter(outputs, registers: Sequence[str], input_register: str,
               op_set: str) -> list[Instr] | None:
    """The filter `outputs` (register → Kernel) as sums of shifted copies of the input divided
    once, with shifted partial sums shared across outputs (`cse.cse_program`), verified
    exactly; None where that construction finds no program."""
    program = cse_program(outputs, registers, input_register, op_set)
    if program is None:
        return None
    verify_program(program, outputs, input_register, op_set, registers)
    return program


def reverse_filter(outputs, registers: Sequence[str], input_register: str,
                   op_set: str) -> list[Instr] | None:
    """The filter `outputs` (register → Kernel) built backwards from its outputs over the
    input divided once, reusing partial sums and shifted copies across outputs
    (`reverse.reverse_program`, op set basic only), verified exactly; None where that search
    finds no program or the op set is not basic."""
    if op_set != "basic":
        return None
    program = reverse_program(outputs, registers, input_register)
    if program is None:
        return None
    verify_program(program, outputs, input_register, op_set, registers)
    return program


def goalbag_filter(outputs, registers: Sequence[str], input_register: str,
                   nodes: int) -> list[Instr] | None:
    """The filter `outputs` (register → Kernel) built backwards from bags of goals in op set
    all (`goalbag.goalbag_program`, at most `nodes` bags expanded), verified exactly; None
    where that search finds no program."""
    program = goalbag_program(outputs, registers, input_register, nodes)
    if program is None:
        return None
    verify_program(program, outputs, input_register, "all", registers)
    return program
