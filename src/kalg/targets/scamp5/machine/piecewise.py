"""Exact symbolic execution of SCAMP-5 programs with `abs`: every register holds a linear form
over *sources*, the input images and the absolute values the program took.

A `Form` maps each source to the kernel applied to it: R(p) = Σ_s Σ_o K_s(o) · s(p + o). A
linear macro combines forms exactly as `symbolic.step` combines kernels. `abs(y, x0)` makes a
new source: |F| for the form F of x0, named by F itself (`abs_source`), so two absolute values
of one form are one source wherever they were taken, and |−F| is |F|. Comparing the forms a
program leaves with the forms a pipeline defines (built with the same `abs_source`) is then an
exact check of a program that is not linear: equal forms over equal sources are equal
functions of the input. (Identities of abs beyond its sign, such as |F| = F where F ≥ 0, are
not applied: the check could refuse a correct program, never accept a wrong one.)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from fractions import Fraction

from kalg.algebra.kernel import Kernel
from kalg.diagnostics import VerificationError
from kalg.targets.scamp5.machine.isa import NEWS, REGISTERS, Instr

Source = tuple
"""("input", name) or ("abs", the canonical key of the form whose absolute value it is)."""
Form = dict[Source, Kernel]
State = dict[str, Form | None]


def key(form: Mapping[Source, Kernel]) -> tuple:
    """A hashable, canonical text of `form` (sources sorted, zero taps dropped)."""
    parts = []
    for source, kernel in form.items():
        taps = tuple(sorted((o, Fraction(c)) for o, c in kernel.taps.items() if c))
        if taps:
            parts.append((source, taps))
    return tuple(sorted(parts, key=repr))


def abs_source(form: Mapping[Source, Kernel]) -> Form:
    """The form of |form|: a new source named by `form` up to its sign (|−F| = |F|); the zero
    form's absolute value is zero."""
    canonical = key(form)
    if not canonical:
        return {}
    first = canonical[0][1][0][1]  # the first coefficient of the first source
    if first < 0:
        canonical = key(scaled(form, -1))
    return {("abs", canonical): Kernel.unit()}


def combine(terms: Sequence[tuple[Fraction, Mapping[Source, Kernel]]]) -> Form:
    """Σ coefficient · form."""
    total: Form = {}
    for coef, form in terms:
        for source, kernel in form.items():
            part = kernel.scale(coef)
            total[source] = total[source] + part if source in total else part
    return {s: k.trimmed() for s, k in total.items() if k.trimmed().entries}


def scaled(form: Mapping[Source, Kernel], factor) -> Form:
    return combine([(Fraction(factor), form)])


def shifted(form: Mapping[Source, Kernel], dx: int, dy: int) -> Form:
    return {s: k.shift(dx, dy) for s, k in form.items()}


def execute(program: Sequence[Instr], inputs: Mapping[str, str]) -> State:
    """The final state of `program` started with input register → source name `inputs`
    (every other register undefined, None)."""
    state: State = {r: None for r in (*REGISTERS, NEWS)}
    for register, name in inputs.items():
        state[register] = {("input", name): Kernel.unit()}
    for instr in program:
        new = {}
        for dest, terms in instr.effects():
            value = _value(state, terms)
            if value is not None and instr.pointwise(dest) == "abs":
                value = abs_source(value)
            new[dest] = value
        state.update(new)
    return state


def _value(state: State, terms) -> Form | None:
    if terms is None:
        return None
    parts = []
    for coef, reg, (dx, dy) in terms:
        if (form := state.get(reg)) is None:
            return None
        parts.append((coef, shifted(form, dx, dy)))
    return combine(parts)


def verify(program: Sequence[Instr], inputs: Mapping[str, str],
           targets: Mapping[str, Mapping[Source, Kernel]]) -> State:
    """Execute and compare each target register's form; VerificationError naming each register
    whose form differs (a kalg bug: the lowering builds what it checks)."""
    state = execute(program, inputs)
    problems = [f"register {reg} " + ("holds no defined value" if state.get(reg) is None
                                      else "holds another function of the input")
                for reg, want in sorted(targets.items())
                if state.get(reg) is None or key(state[reg]) != key(want)]
    if problems:
        raise VerificationError("; ".join(problems), program_text="\n".join(map(str, program)))
    return state


__all__ = ["Form", "Source", "abs_source", "combine", "execute", "key", "scaled", "shifted",
           "verify"]
