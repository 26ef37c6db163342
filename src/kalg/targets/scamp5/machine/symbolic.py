"""Exact symbolic execution of SCAMP-5 programs: every register holds the kernel it computes.

Input: a list of `Instr` and the input register. Output: register → `Kernel` (or None where the
register holds no defined value). `verify_exact` compares output registers with target kernels
coefficient by coefficient, as Cain's verifier does, and reports the offsets that differ.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from kalg.algebra.kernel import (
    Dyadic,
    Kernel,
    dyadic_coefficient,
    dyadic_combination,
    from_dyadic,
    to_dyadic,
)
from kalg.diagnostics import ProgramError, VerificationError
from kalg.targets.scamp5.machine.isa import NEWS, REGISTERS, SIMULATED_REGISTERS, Instr

State = dict[str, Kernel | None]


def initial_state(input_register: str = "A") -> State:
    """The input image (the unit kernel) in `input_register`; every other register undefined.

    The state lists A..F and NEWS; a register of the simulated wider file (G..Z) joins it when
    the input is there or an instruction writes it, and reads as undefined before that."""
    if input_register not in SIMULATED_REGISTERS:
        raise ValueError(f"input register must be one of {', '.join(SIMULATED_REGISTERS)}")
    state: State = {r: None for r in (*REGISTERS, NEWS)}
    state[input_register] = Kernel.unit()
    return state


def step(state: State, instr: Instr) -> State:
    """The state after one instruction (all right-hand sides read the state before it)."""
    refuse_pointwise(instr)
    new = dict(state)
    for dest, form in instr.effects():
        if form is None:
            new[dest] = None
            continue
        total = Kernel.empty()
        for coef, reg, (dx, dy) in form:
            value = state.get(reg)
            if value is None:
                total = None
                break
            total = total + value.shift(dx, dy).scale(coef)
        new[dest] = total.trimmed() if total is not None else None
    return new


def execute(program: Sequence[Instr], input_register: str = "A") -> State:
    """Run `program` on the symbolic input and return the final state.

    If register R holds kernel K (R(p) = Σ_o K(o)·in(p + o)), then R read at p + d holds K with
    every entry moved by +d, which is why `step` uses `Kernel.shift(dx, dy)`.
    """
    return run(initial_state(input_register), program)


def run(state: State, program: Sequence[Instr]) -> State:
    """The state after `program` from `state`: `step` after `step`, computed on integers
    (`kernel.Dyadic`: every value SCAMP-5 makes is an integer over a power of two) and read
    back as kernels at the end - the same values as `step`'s, several times faster on large
    kernels. A state or coefficient that is not dyadic is run with `step` itself."""
    values: dict[str, Dyadic | None] = {}
    for reg, kernel in state.items():
        values[reg] = None if kernel is None else to_dyadic(kernel)
        if kernel is not None and values[reg] is None:
            return _stepped(state, program)
    written: set[str] = set()
    try:
        for instr in program:
            refuse_pointwise(instr)
            new = {}
            for dest, form in instr.effects():
                new[dest] = _form_value(values, form) if form is not None else None
            values.update(new)
            written.update(new)
    except _NotDyadic:
        return _stepped(state, program)
    # A register the program never wrote keeps its kernel as it was (untrimmed, as by `step`).
    return {reg: state[reg] if reg not in written else None if v is None
            else from_dyadic(v, trim=True) for reg, v in values.items()}


def refuse_pointwise(instr: Instr) -> None:
    """ProgramError for an instruction no kernel describes (`abs`): its program computes a
    pipeline, which `piecewise.execute` executes exactly."""
    if any(instr.pointwise(dest) for dest, _ in instr.effects()):
        raise ProgramError(f"{instr} is not linear: no kernel describes its result (a program "
                           "with abs computes a pipeline; check it against the pipeline)")


class _NotDyadic(Exception):
    """A coefficient that is no integer over a power of two: `run` falls back to `step`."""


def _stepped(state: State, program: Sequence[Instr]) -> State:
    for instr in program:
        state = step(state, instr)
    return state


def _form_value(values: dict[str, Dyadic | None], form) -> Dyadic | None:
    """`step`'s value of one right-hand side: None where it reads an undefined register."""
    terms = []
    for coef, reg, (dx, dy) in form:
        value = values.get(reg)
        if value is None:
            return None
        if (nc := dyadic_coefficient(coef)) is None:
            raise _NotDyadic(coef)
        terms.append((nc[0], nc[1], value, dx, dy))
    e, entries = dyadic_combination(terms)
    return e, {o: c for o, c in entries.items() if c}


def mismatches(state: State, targets: Mapping[str, Kernel]) -> list[str]:
    """One line per output register that does not hold its target kernel."""
    problems = []
    for reg, want in sorted(targets.items()):
        got = state.get(reg)
        if got is None:
            problems.append(f"register {reg} holds no defined value; expected {want}")
            continue
        want_t, got_t = want.trimmed().taps, got.trimmed().taps
        diffs = sorted(o for o in set(want_t) | set(got_t) if want_t.get(o, 0) != got_t.get(o, 0))
        if diffs:
            detail = ", ".join(f"{o}: got {got_t.get(o, 0)}, want {want_t.get(o, 0)}"
                               for o in diffs[:6])
            more = f" (and {len(diffs) - 6} more)" if len(diffs) > 6 else ""
            problems.append(f"register {reg} differs at {len(diffs)} offset(s): {detail}{more}")
    return problems


def verify_exact(program: Sequence[Instr], targets: Mapping[str, Kernel],
                 input_register: str = "A") -> State:
    """Execute and compare; raise `VerificationError` naming each wrong register and offset."""
    state = execute(program, input_register)
    if problems := mismatches(state, targets):
        text = "\n".join(str(i) for i in program)
        raise VerificationError("; ".join(problems), program_text=text)
    return state


def verify_exact_channels(program: Sequence[Instr], targets: Mapping[str, Mapping[str, Kernel]],
                          inputs: Sequence[str]) -> None:
    """`verify_exact` for a program over several inputs: `targets` maps each output register
    to input register → kernel (a missing input: the zero kernel). Every instruction is linear
    in the registers, so the program's output is the sum over inputs of its output with that
    input alone (the unit kernel there, the zero kernel in the other inputs): each input is
    executed so and compared with the targets' kernels on it."""
    text = "\n".join(str(i) for i in program)
    problems = []
    for channel in inputs:
        state = initial_state(channel)
        for other in inputs:
            if other != channel:
                state[other] = Kernel.empty()
        state = run(state, program)
        want = {reg: parts.get(channel, Kernel.empty()) for reg, parts in targets.items()}
        problems += [f"input {channel}: {p}" for p in mismatches(state, want)]
    if problems:
        raise VerificationError("; ".join(problems), program_text=text)
