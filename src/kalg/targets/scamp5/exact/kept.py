"""Programs that keep a value of their first instruction to the last one (`kept_program`).

kalg's code generator builds a program as a chain of stages, each reading the values of the
stage before; a program that makes a value in its first instruction and reads it again only in
its last cannot be built that way. Such programs are often the shortest: the weighted cross
mean [0 1 0; 1 4 1; 0 1 0] / 8 is six instructions (proven by the exact search), its first
`div` leaving -x/2 in a register that its last instruction subtracts, against seven for the
best chain. This module searches that family of programs directly, for any kernel:

    first   one instruction reading only the input (every macro of the op set, up to renaming
            the other registers: div(B, C, A) makes x/2 and -x/2, movx(B, A, north) a shifted
            copy, ...);
    middle  the shortest program (`codegen.exhaustive`, on the registers other than the kept
            one) that makes W from one single-tap value u of the first instruction;
    last    one two-operand instruction K = a * shift(kept) + b * shift(W) (add, sub, addx,
            subx, sub2x, ... in either operand order).

or, with no first instruction, the input x itself kept: a middle that makes W from x on every
register but never writes the input's (it may read x throughout: the exact search's
`keep_input`, in its guided order), then the last instruction reading x and W: emboss's proven
optimum, 6, is x - W with W five instructions reading x (the chain compile is 7), one
instruction less than any program that copies x first in order to keep it.

For each first instruction, kept value and form of the last instruction, W is solved for
exactly (W = shift^-1((K - a * shift(kept)) / b)); only forms where the kept term cancels at
least one tap of K are tried (otherwise the kept value does no work the middle could not).
Middle problems are deduplicated and tried fewest taps first, the middle's length capped so
that the whole program is shorter than the best so far, within one node budget over all the
searches of each of the two forms (the input-kept ones also capped one by one: their guided
searches find what they find early; deterministic). The result is only an upper bound on the
shortest length (the family is not every program), verified exactly and numerically like every
program.
"""

from __future__ import annotations

from collections.abc import Sequence
from fractions import Fraction

from kalg.algebra.kernel import Kernel
from kalg.targets.scamp5.exact import exhaustive
from kalg.targets.scamp5.machine.isa import Instr

Taps = dict[tuple[int, int], Fraction]
Term = tuple[int, int, int, int]
"""p, q, dx, dy: p / 2^q times a value read at p + (dx, dy)."""


SEARCHES = 64
"""At most this many middle searches per call: each costs a few milliseconds to set up even
when its bound ends it at once (a 3x3 box has hundreds of middle problems); on random sparse
kernels every program found was found by the first or second search."""


def kept_program(kernel: Kernel, *, registers: Sequence[str], input_register: str, output: str,
                 op_set: str, shorter_than: int, nodes: int, searches: int = SEARCHES,
                 input_nodes: int = 0, input_search: int | None = None) -> list[Instr] | None:
    """A verified program for `kernel` (input in `input_register`, result in `output`) shorter
    than `shorter_than` instructions, of the form first instruction + middle + last
    instruction reading a value the first one made (see the module), or None when the family
    has none within `nodes` search nodes and `searches` middle searches in all; then, within
    `input_nodes` more nodes (and `searches` more searches, each of at most `input_search`
    nodes), of the form middle + last instruction reading the input, which the middle reads
    but never overwrites, found by the exact search's guided order (deterministic)."""
    target = _taps(kernel)
    if target is None or shorter_than < 3:
        return None
    templates = exhaustive._instructions(op_set, tuple(registers))
    lasts = _last_forms(templates, output)
    passes = ((_problems(target, templates, input_register, registers, lasts), nodes, nodes),
              (_input_kept(target, input_register, registers, lasts), input_nodes,
               input_search or input_nodes))
    best, tried = None, {}
    for problems, budget, each in passes:
        left = searches
        for _, key, problem in problems:
            if budget <= 0 or left <= 0:
                break
            first, kept, source, last_terms, middle_kernel, middle_regs = problem
            # the middle's length: the whole shorter than the best so far
            cap = (shorter_than if best is None else len(best)) - (2 if first is None else 3)
            if cap < 1 or tried.get(key, 0) >= cap:
                continue  # too short, or no program of at most `cap` (searched to the end)
            left -= 1
            outcome = exhaustive.shortest_program(middle_kernel, registers=middle_regs,
                                                  input_register=source, output=None,
                                                  op_set=op_set, max_length=cap,
                                                  nodes=min(budget, each),
                                                  keep_input=first is None,
                                                  guided=first is None)
            budget -= outcome.nodes
            if outcome.program is None:
                if outcome.stopped is None:
                    tried[key] = cap
                continue
            last = _last_instruction(templates, output, kept, outcome.register, last_terms)
            if last is not None:
                best = [*([] if first is None else [first]), *outcome.program, last]
    if best is not None:
        exhaustive.verify(best, kernel, output, input_register, op_set, registers)
    return best


def _taps(kernel: Kernel) -> Taps | None:
    taps = {o: Fraction(c) for o, c in kernel.trimmed().taps.items() if c}
    if not taps or any(c.denominator & (c.denominator - 1) for c in taps.values()):
        return None  # the macros make only dyadic coefficients
    return taps


def _last_forms(templates, output: str) -> set[tuple[Term, Term]]:
    """(kept term, W term) of every one-result instruction writing `output` from two terms
    on two registers."""
    forms = set()
    for t in templates:
        if len(t.writes) != 1:
            continue
        ((dest, form),) = t.writes
        if dest != output or form is None or len(form) != 2 or form[0][2] == form[1][2]:
            continue
        a, b = ((p, q, dx, dy) for p, q, _, dx, dy in form)
        forms.update({(a, b), (b, a)})
    return forms


def _apply(term: Term, taps: Taps) -> Taps:
    p, q, dx, dy = term
    return {(x + dx, y + dy): c * Fraction(p, 1 << q) for (x, y), c in taps.items()}


def _minus(a: Taps, b: Taps) -> Taps:
    out = dict(a)
    for o, c in b.items():
        out[o] = out.get(o, 0) - c
    return {o: c for o, c in out.items() if c}


def _middle_value(target: Taps, kept_term: Term, kept: Taps, w_term: Term) -> Taps | None:
    """W such that the last instruction's two terms, `kept_term` of the kept value and
    `w_term` of W, make `target`; None unless the kept term cancels at least one tap of the
    target and leaves something for W to make."""
    rest = _minus(target, _apply(kept_term, kept))
    if len(rest) >= len(target) or not rest:
        return None
    p, q, dx, dy = w_term
    return _apply((1, 0, -dx, -dy), {o: c / Fraction(p, 1 << q) for o, c in rest.items()})


def _firsts(templates, inp: str):
    """(instruction, {register: taps or None}) after each instruction reading only the input,
    one per state up to renaming the registers other than the input's, in a fixed order."""
    seen = set()
    for t in templates:
        if set(t.reads) != {inp}:
            continue
        state: dict[str, Taps | None] = {inp: {(0, 0): Fraction(1)}}
        for dest, form in t.writes:
            state[dest] = None if form is None else _sum(
                _apply((p, q, dx, dy), {(0, 0): Fraction(1)}) for p, q, _, dx, dy in form)
        key = (_frozen(state.get(inp)),
               tuple(sorted(_frozen(v) for r, v in state.items() if r != inp and v)))
        if key not in seen:
            seen.add(key)
            yield t.instr, state


def _sum(parts) -> Taps:
    out: Taps = {}
    for part in parts:
        out = _minus(out, {o: -c for o, c in part.items()})
    return out


def _frozen(taps: Taps | None):
    return None if not taps else tuple(sorted(taps.items()))


def _problems(target: Taps, templates, inp: str, registers: Sequence[str], lasts):
    """Every (first, kept register, middle source, last terms, middle kernel, middle registers)
    whose kept term cancels a tap of the target, sorted by (middle taps, last form's shift,
    order found), each with its middle problem's key (kernel, register count, whether the
    middle keeps its source)."""
    out = []
    for first, state in _firsts(templates, inp):
        for kept, value in state.items():
            if not value:
                continue
            for kept_term, w_term in sorted(lasts):
                w = _middle_value(target, kept_term, value, w_term)
                if w is None:
                    continue
                dx, dy = w_term[2:]
                for source, u in state.items():
                    if source == kept or not u or len(u) != 1:
                        continue
                    ((ux, uy), uc), = u.items()
                    middle = {(x - ux, y - uy): c / uc for (x, y), c in w.items()}
                    regs = tuple(r for r in registers if r != kept)
                    key = (tuple(sorted(middle.items())), len(regs), False)
                    order = (len(middle), abs(dx) + abs(dy), len(out))
                    out.append((order, key, (first, kept, source, (kept_term, w_term),
                                             Kernel.of(middle), regs)))
    out.sort(key=lambda item: item[0])
    return out


def _input_kept(target: Taps, inp: str, registers: Sequence[str], lasts) -> list:
    """`_problems` with no first instruction (first None): the input x is the kept value, the
    middle makes W from x on every register without ever writing the input's (so it may read
    x throughout), and the last instruction reads x and W; sorted by (W's taps, both terms'
    shifts, order found). Such a program has one instruction fewer than one whose first
    instruction copies x (movx, div) to keep it."""
    out: list = []
    x = {(0, 0): Fraction(1)}
    for kept_term, w_term in sorted(lasts):
        w = _middle_value(target, kept_term, x, w_term)
        if w is None:
            continue
        dx, dy = w_term[2:]
        key = (tuple(sorted(w.items())), len(registers), True)
        order = (len(w), abs(dx) + abs(dy) + abs(kept_term[2]) + abs(kept_term[3]), len(out))
        out.append((order, key, (None, inp, inp, (kept_term, w_term), Kernel.of(w),
                                 tuple(registers))))
    out.sort(key=lambda item: item[0])
    return out


def _last_instruction(templates, output: str, kept: str, w_reg: str | None,
                      terms: tuple[Term, Term]) -> Instr | None:
    """The instruction writing kept_term(kept) + w_term(w_reg) to `output`, or None (e.g. a
    constraint such as sub's y != x1 forbids it on these registers)."""
    if w_reg is None or w_reg == kept:
        return None
    kept_term, w_term = terms
    want = sorted([(*kept_term[:2], kept, *kept_term[2:]), (*w_term[:2], w_reg, *w_term[2:])])
    for t in templates:
        if len(t.writes) == 1 and t.writes[0][0] == output and t.writes[0][1] is not None \
                and sorted(t.writes[0][1]) == want:
            return t.instr
    return None
