"""A filter over several inputs as stages of one-input programs: each output is the sum over its
channels of one kernel applied to one input register (`C = K_A * A + K_B * B`), so every term
can get the decompositions of the e-graph (separable, factored, chains ...) that the flat
constant-matrix program (`codegen.matrix_channels`) never sees.

An output is made by one of two plans, whichever is shorter in the registers left:

* *terms*: its first term compiled into the output's register, each further one into a spare
  register (the input's own once no later term reads it) and added or subtracted (one
  instruction, or none where the term's last move or add folds into it);
* *common factor* (sharing across channels, `channels.common_factor`): where the kernels of the
  output's channels share a factor G (K_c = G * R_c, e.g. a Gaussian on A and a Sobel on B
  share (1+x)(1+y)^2), the mix Σ R_c * in_c is made by terms into the output's register and
  G applied to it there, once. The rests' common scale goes into G (`_shared_factor`), so
  that G's halvings are made once, on the mix.

The outputs come one after another (a few orders); an input is kept (every stage's budget
leaves its register alone) until the last term that reads it, and the outputs made so far are
kept. Each one-input stage is `apply(kernel, source, target, budget, keep)`, given by the
caller (`pipeline`: the e-graph of the kernel's channel and its other candidates). Exact
(the caller verifies the program on every input); no knowledge of particular kernels.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from fractions import Fraction

from kalg.algebra.channels import common_factor
from kalg.algebra.kernel import Kernel
from kalg.targets.scamp5.machine.isa import Add, Add3, Instr, Mov, Mov2x, Movx, Sub, Sub2x, Subx

Apply = Callable[[Kernel, str, str, tuple[str, ...], bool], list[Instr] | None]
"""apply(kernel, source, target, budget, keep): a program writing kernel applied to the value in
register `source` into `target`, writing only registers of `budget` (which holds both), and
leaving `source` unchanged if `keep`; None when none fits."""


Finish = Callable[[dict[str, dict[str, Kernel]], tuple[str, ...]], list[Instr] | None]
"""finish(outputs, registers): a program for `outputs` (output → input → kernel) using only
`registers` (which hold the inputs they read, free to overwrite); None when none fits."""


def staged_program(outputs: Mapping[str, Mapping[str, Kernel]], registers: Sequence[str],
                   inputs: Sequence[str], apply: Apply, bound: int | None = None,
                   three_operand: bool = False, finish: Finish | None = None,
                   ) -> list[Instr] | None:
    """The shortest program of the plans above over a few output orders, or None when no
    order fits or none is shorter than `bound` (a plan is cut once its made part and the
    estimate (`estimate`) of the rest reach it). `three_operand`: the op set has the
    three-operand add (`_accumulate`). `finish`: after any output, the outputs left may be
    made by it instead (the constant-matrix program in the registers not holding an output
    made: where registers are short, the structured outputs first, the rest flat)."""
    parts = {o: {c: k.trimmed() for c, k in p.items() if k.trimmed().entries}
             for o, p in outputs.items()}
    best: list[Instr] | None = None
    # where no order makes the outputs in place (two outputs in input registers that read
    # each other's input: A: g * A + B, B: A - g * B), those outputs are made in spare
    # registers and moved there last
    for spares in ({}, _spares(parts, tuple(registers), tuple(inputs))):
        if spares is None or (spares and best is not None):
            continue
        renamed = {spares.get(o, o): p for o, p in parts.items()}
        moves = [Mov(o, spare) for o, spare in spares.items()]
        for order in _orders(renamed, tuple(registers), tuple(inputs)):
            limit = min([b for b in (bound, best and len(best)) if b], default=None)
            found = _Run(renamed, tuple(registers), tuple(inputs), apply,
                         None if limit is None else limit - len(moves), three_operand,
                         finish).program(order)
            if found is not None and (best is None or len(found) + len(moves) < len(best)):
                best = found + moves
    return best


def _spares(parts: dict, registers: tuple[str, ...],
            inputs: tuple[str, ...]) -> dict[str, str] | None:
    """Output in an input register → a register that is neither an output nor an input, for
    each such output; None when there are none or too few spare registers."""
    placed = [o for o in parts if o in inputs]
    free = [r for r in registers if r not in parts and r not in inputs]
    if not placed or len(free) < len(placed):
        return None
    return dict(zip(placed, free, strict=False))


def estimate(kernel: Kernel) -> int:
    """Instructions a one-input program for `kernel` needs, estimated for pruning: a halving
    per power of two in the largest denominator (each `div` halves one value once: a lower
    bound), and (n - 1) / 2 additions for n taps summed by three-operand adds (a lower bound
    where the taps are summed one by one; a kernel built by doubling, x + shift(x), can beat
    it: pruning by it only drops plans, never lengthens the program kalg prints)."""
    taps = [Fraction(c) for c in kernel.taps.values() if c != 0]
    halvings = max(c.denominator for c in taps).bit_length() - 1
    return max(len(taps) // 2 + halvings, 1)


def _estimate(parts: Mapping[str, Kernel]) -> int:
    """`estimate` for one output: its terms' and an addition per further term, or its common
    factor's and its mix's, the smaller."""
    terms = sum(estimate(k) for k in parts.values()) + len(parts) - 1
    factored = _shared_factor(parts)
    if factored is None:
        return terms
    factor, rests = factored
    return min(terms, estimate(factor) + sum(estimate(k) for k in rests.values())
               + len(rests) - 1)


def _shared_factor(parts: Mapping[str, Kernel]) -> tuple[Kernel, dict[str, Kernel]] | None:
    """`channels.common_factor` (G, rests) with the rests' content c (the gcd of their
    coefficients, positive) moved into the factor: (c·G, rests / c). Then a scale or halvings
    that every channel has are applied once, to the mix, not once per channel: blur * A -
    blur * B (blur over 16) is A - B in one `sub`, then blur, not four halvings on each
    input."""
    if (found := common_factor(parts)) is None:
        return None
    factor, rests = found
    coefficients = [Fraction(c) for k in rests.values() for _, c in k.entries if c != 0]
    content = Fraction(math.gcd(*(c.numerator for c in coefficients)),
                       math.lcm(*(c.denominator for c in coefficients)))
    return factor.scale(content), {c: k.scale(1 / content) for c, k in rests.items()}


def _orders(parts: dict, registers: tuple[str, ...], inputs: tuple[str, ...]) -> list[list]:
    """Register order, heaviest first (most coefficient mass: it gets the most registers) and
    fewest taps first (a short output frees the inputs for the long ones: D = x·A - B before
    C = blur * (A - B) leaves blur all the registers); an output in an input's register after
    every other output (it overwrites the input)."""
    mass = {o: sum(abs(c) for k in p.values() for c in k.taps.values()) for o, p in parts.items()}
    taps = {o: sum(len(k.taps) for k in p.values()) for o, p in parts.items()}
    plain = sorted(parts, key=lambda o: (o in inputs, registers.index(o)))
    heavy = sorted(parts, key=lambda o: (o in inputs, -mass[o], registers.index(o)))
    short = sorted(parts, key=lambda o: (o in inputs, taps[o], registers.index(o)))
    return list({tuple(order): order for order in (plain, heavy, short)}.values())


class _Run:
    """One output order: the program so far and what it keeps. `limit`: a plan is dropped once
    its instructions so far and the estimates of what it has left reach it."""

    def __init__(self, parts: dict, registers: tuple[str, ...], inputs: tuple[str, ...],
                 apply: Apply, limit: int | None, three_operand: bool, finish: Finish | None):
        self.parts, self.registers, self.inputs = parts, registers, inputs
        self.apply, self.limit, self.three_operand = apply, limit, three_operand
        self.finish = finish
        self.spent = 0  # instructions of the outputs made
        self.after = 0  # estimate of the outputs still to make after this one

    def _over(self, instructions: int) -> bool:
        return self.limit is not None and self.spent + instructions + self.after >= self.limit

    def program(self, order: list[str]) -> list[Instr] | None:
        """The outputs in `order`, or, after any of them, the rest by `finish`: the shortest
        of these (None if none fits within the limit)."""
        program: list[Instr] = []
        best: list[Instr] | None = None
        for i, out in enumerate(order):
            if i > 0 and self.finish is not None:
                rest = {o: self.parts[o] for o in order[i:]}
                tail = self.finish(rest, tuple(r for r in self.registers if r not in order[:i]))
                if tail is not None and (self.limit is None
                                         or len(program) + len(tail) < self.limit):
                    best, self.limit = program + tail, len(program) + len(tail)
            self.spent, self.after = len(program), sum(_estimate(self.parts[o])
                                                       for o in order[i + 1:])
            if self._over(_estimate(self.parts[out])):
                return best
            later = {c for o in order[i + 1:] for c in self.parts[o]}
            if out in later:
                return best  # the output would overwrite an input a later output reads
            step = self._output(out, later | set(order[:i]))
            if step is None:
                return best
            program += step
        return program if self.limit is None or len(program) < self.limit else best

    def _output(self, out: str, held: set[str]) -> list[Instr] | None:
        """The shorter of the output's plans (the common factor first: the terms must then
        beat it), the registers of `held` left alone."""
        parts, best = self.parts[out], None
        if (factored := _shared_factor(parts)) is not None:
            best = self._factored(*factored, out, held)
        limit = self.limit
        if best is not None:
            self.limit = min(b for b in (limit, self.spent + len(best) + self.after)
                             if b is not None)
        try:
            terms = self._terms(parts, out, held)
        finally:
            self.limit = limit
        return terms if terms is not None else best

    def _factored(self, factor: Kernel, rests: dict[str, Kernel], out: str,
                  held: set[str]) -> list[Instr] | None:
        """Σ rests[c] * c into `out` by terms, then `factor` applied to it in place."""
        mix = self._terms(rests, out, held, estimate(factor))
        if mix is None:
            return None
        budget = tuple(r for r in self.registers if r not in held)
        last = self.apply(factor, out, out, budget, False)
        if last is None or self._over(len(mix) + len(last)):
            return None
        return mix + last

    def _terms(self, parts: dict[str, Kernel], out: str, held: set[str],
               tail: int = 0) -> list[Instr] | None:
        """Each channel's kernel on its input, summed into `out`: the channel in `out` itself
        first (it is overwritten), then the channels no later output reads (each term may
        overwrite its input, whose register is then free for the terms after it), then those
        kept. `tail`: the estimate of what follows in the output's plan (for pruning)."""
        if out in held:
            return None
        channels = sorted(parts, key=lambda c: (c != out, c in held, c))
        program: list[Instr] = []
        for i, c in enumerate(channels):
            rest = set(channels[i + 1:])
            if self._over(len(program) + tail + sum(estimate(parts[r]) + 1 for r in rest)
                          + estimate(parts[c]) + (i > 0)):
                return None
            keep = c in held or c in rest
            busy = held | rest | ({out} if i else set())
            budget = tuple(r for r in self.registers if r not in busy or r == c)
            if i == 0:  # `out` is in the budget: not held, and no other term reads it
                step = self.apply(parts[c], c, out, budget, keep)
                if step is None:
                    return None
                program += step
                continue
            target = c if not keep else next((r for r in budget if r != c), None)
            if target is None:
                return None
            kernel, negate = parts[c], _negative(parts[c])
            step = self.apply(-kernel if negate else kernel, c, target, budget, keep)
            if step is None:
                return None
            program += _accumulate(step, out, target, negate, self.three_operand)
        program = _fold_copy(program, out, self.three_operand)
        return None if self._over(len(program) + tail) else program


def _accumulate(step: list[Instr], out: str, target: str, negate: bool,
                three_operand: bool) -> list[Instr]:
    """`step` (which leaves a term in `target`, dead afterwards) and out := out ± target, the
    last instruction of `step` folded in where it only moves or adds two registers into
    `target`: `mov(T, x); add(out, out, T)` is `add(out, out, x)`, and `add(T, x, y);
    add(out, out, T)` is the three-operand `add(out, out, x, y)` where the op set has it."""
    last = step[-1] if step else None
    if isinstance(last, Mov) and last.y == target and last.x0 != out:
        return [*step[:-1], (Sub if negate else Add)(out, out, last.x0)]
    if (three_operand and not negate and isinstance(last, Add) and last.y == target
            and out not in (last.x0, last.x1)):
        return [*step[:-1], Add3(out, out, last.x0, last.x1)]
    return [*step, (Sub if negate else Add)(out, out, target)]


def _fold_copy(program: list[Instr], out: str, fused: bool) -> list[Instr]:
    """`program` without its first instruction where that copies x into `out` (`mov`, or with
    `fused` macros also `movx`/`mov2x`) and the next one to touch `out` is `out := out ± y`,
    which then reads x itself (`sub(C, A, B)`, not `mov(C, A); sub(C, C, B)`; `subx(D, A,
    east, B)`, not `movx(D, A, east); sub(D, D, B)`), when nothing between them writes x."""
    first = program[0] if program else None
    if not isinstance(first, Mov | Movx | Mov2x) or first.y != out or (
            not fused and not isinstance(first, Mov)):
        return program
    x = first.x0
    for i, instr in enumerate(program[1:], 1):
        if out in instr.reads() or out in instr.writes():
            if type(instr) not in (Add, Sub) or instr.y != out or instr.x0 != out or (
                    instr.x1 in (out, x)):
                return program
            if isinstance(first, Mov):
                folded = type(instr)(out, x, instr.x1)
            elif isinstance(instr, Add):
                return program  # addx and add2x move both operands
            elif isinstance(first, Movx):
                folded = Subx(out, x, first.d, instr.x1)
            else:
                folded = Sub2x(out, x, first.d1, first.d2, instr.x1)
            return [*program[1:i], folded, *program[i + 1:]]
        if x in instr.writes():
            return program
    return program


def _negative(kernel: Kernel) -> bool:
    """Whether the term is cheaper subtracted: its coefficients sum below zero (then its
    negation, made and subtracted, has mostly positive taps)."""
    total = sum(kernel.taps.values())
    if total != 0:
        return total < 0
    return next(iter(sorted(kernel.taps.items())))[1] < 0
