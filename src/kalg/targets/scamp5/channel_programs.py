"""Programs for a filter over several input channels (`kalg.algebra.channels`): `shortest_program`.

The constant-matrix program over every input divided once; where the outputs apply their
kernels to one mix of the inputs, the mix followed by the ordinary filter compile on it, or
each output on its own mix; and stages of one-input programs from one e-graph per channel.
The shortest is kept, verified exactly on every input.
"""

from __future__ import annotations

import dataclasses

from kalg import frontend
from kalg.algebra.channels import common_mix
from kalg.algebra.decomp import Decomposition, Op, Value
from kalg.algebra.kernel import REAL, Kernel
from kalg.clock import Clock
from kalg.diagnostics import (
    KalgSemanticError,
    RegisterPressureError,
    ResourceLimitError,
)
from kalg.settings import Deadline, Settings
from kalg.targets.scamp5 import codegen, portfolio
from kalg.targets.scamp5.candidates import search, search_options
from kalg.targets.scamp5.channel_stages import staged_program
from kalg.targets.scamp5.codegen.opset import as_op_set_all
from kalg.targets.scamp5.filters import choose_program, cleared
from kalg.targets.scamp5.machine.isa import (
    OP_SETS,
    Add,
    Add3,
    Instr,
    Mov,
    Sub,
    bus_steps,
    outside_op_set,
)
from kalg.targets.scamp5.machine.symbolic import verify_exact_channels
from kalg.targets.scamp5.optimize import optimize
from kalg.targets.scamp5.optimize_channels import channel_terms
from kalg.targets.scamp5.programs import SCREEN, best_program
from kalg.targets.scamp5.sources import (
    CLEARED,
    DIRECT,
    EGRAPH,
    EGRAPH_VARIANTS,
    MATRIX,
    MIXED,
    MIXES,
    STAGED,
    assemble,
)


def shortest_program(definition: frontend.Definition, registers: tuple[str, ...],
                     inputs: tuple[str, ...], ops: str, settings: Settings, deadline: Deadline,
                     clock: Clock) -> tuple[list[Instr], str]:
    """The shortest program for the filter over the inputs `inputs` and the name of its
    construction: one constant-matrix program (`codegen.matrix_channels`, each input divided
    once, sharing within and across channels through the walk of each output); when every
    output applies its kernel to one mix of the inputs (`channels.common_mix`), the mix
    followed by the ordinary filter compile on it (`_mixed_program`: e-graph and every
    candidate), or each output on its own mix (`_mixes_program`); and stages of one-input
    programs from one e-graph per channel (`_staged_program`). Op set `all` also runs what
    `basic` runs and keeps its program where it has no `divq` (which `all` lacks), as
    `kalg.targets.scamp5.portfolio` does. An output that is zero on every input is cleared (`res`)
    after the others are made. Each is verified exactly on every input; RegisterPressureError
    (located at the definition) when none fits `registers`."""
    zeros = tuple(o for o, parts in definition.channels.items()
                  if not any(k.trimmed().entries for k in parts.values()))
    if rounded := [o for o in zeros if o in definition.approx_depth]:
        raise KalgSemanticError(
            f"'{definition.name}' output {rounded[0]} approximated at depth "
            f"{definition.approx_depth[rounded[0]]} is zero on every input: every coefficient "
            f"rounds to 0 (largest error {definition.approx_error[rounded[0]]})",
            definition.span, "raise the approximation's depth (or give a max_error)")
    rest = {o: p for o, p in definition.channels.items() if o not in zeros}
    program, winner = [], CLEARED
    if rest:
        made = dataclasses.replace(definition, channels=rest)
        found = [_shortest(made, registers, inputs, ops, settings, deadline, clock)]
        if ops == "all":  # the mixes' filter compiles already run basic (`choose_program`)
            basic = _shortest(made, registers, inputs, "basic", settings, deadline, clock,
                              found[0] and len(found[0][0]), mixes=False)
            found.append(basic and _as_op_set_all(basic, made, registers, inputs))
        if all(f is None for f in found):
            raise RegisterPressureError(
                f"no program for the {len(definition.channels)} output(s) over the inputs "
                f"{', '.join(inputs)} fits in {len(registers)} register(s)",
                span=definition.span,
                hint="each input needs a register for its divided copy and each output one to "
                     "accumulate in; give more registers or fewer outputs")
        program, winner = min((f for f in found if f is not None), key=lambda f: len(f[0]))
    if zeros:
        program = cleared(program, zeros)
        verify_exact_channels(program, definition.channels, inputs)
        if settings.warn:
            settings.warn(f"'{definition.name}': output(s) {', '.join(zeros)} zero on every "
                          "input: the program clears their register(s) (res)")
    return program, winner


def _as_op_set_all(found: tuple[list[Instr], str], definition: frontend.Definition,
                   registers: tuple[str, ...], inputs: tuple[str, ...],
                   ) -> tuple[list[Instr], str] | None:
    """A basic construction's program as an op set all one (`codegen.opset`: each divq a div
    with free scratch registers), verified exactly; None where it cannot be one."""
    program, winner = found
    if outside_op_set(program, "all") is None:
        return found
    if (program := as_op_set_all(program, registers, definition.channels)) is None:
        return None
    verify_exact_channels(program, definition.channels, inputs)
    return program, winner


def _shortest(definition: frontend.Definition, registers: tuple[str, ...],
              inputs: tuple[str, ...], ops: str, settings: Settings, deadline: Deadline,
              clock: Clock, bound: int | None = None, mixes: bool = True,
              ) -> tuple[list[Instr], str] | None:
    """`shortest_program` in op set `ops` alone, every output non-zero; None when no program
    fits (or, given `bound`, none shorter than it). `mixes`: also the constructions on mixes
    of the inputs."""
    program = codegen.matrix_channels(definition.channels, registers, inputs, ops)
    winner = MATRIX
    builds = ((MIXED, _mixed_program), (MIXES, _mixes_program)) if mixes else ()
    for name, build in (*builds, (STAGED, _staged_program)):
        limit = min((n for n in (bound, program and len(program)) if n), default=None)
        found = build(definition, registers, inputs, ops, settings, deadline, clock, limit)
        if found is not None and (program is None or len(found) < len(program)):
            program, winner = found, name
    return None if program is None else (program, winner)


def _mixed_program(definition: frontend.Definition, registers: tuple[str, ...],
                   inputs: tuple[str, ...], ops: str, settings: Settings, deadline: Deadline,
                   clock: Clock, bound: int | None = None) -> list[Instr] | None:
    """For a filter whose outputs all apply their kernel to one integer mix m of the inputs
    (`channels.common_mix`): m written into a register that is no output (the shortest
    `codegen.matrix_channels` program of the candidate registers), then the ordinary compile
    of the one-input filter on m (`candidates.search`, `choose_program`: the e-graph and every
    candidate). Verified exactly on every input; None when there is no common mix or no
    program fits."""
    found = common_mix(definition.channels, inputs)
    if found is None:
        return None
    mix, kernels = found
    places = [r for r in dict.fromkeys((*inputs, *registers)) if r not in kernels]
    mixes = [(p, place) for place in places
             if (p := codegen.matrix_channels({place: {c: Kernel.unit().scale(r)
                                                        for c, r in mix.items()}},
                                               registers, inputs, ops)) is not None]
    if not mixes:
        return None
    mixing, place = min(mixes, key=lambda m: len(m[0]))
    one = frontend.Definition(definition.name, "filter", kernels, REAL, definition.span,
                              exact=kernels)
    try:
        found = search(one, settings, ops, deadline, clock)
        program, _, _ = choose_program(found.candidates, kernels, registers, place, ops,
                                       settings, deadline, found.large)
    except RegisterPressureError:
        return None
    if program is None:
        return None
    program = [*mixing, *program]
    verify_exact_channels(program, definition.channels, inputs)
    return program


def _mixes_program(definition: frontend.Definition, registers: tuple[str, ...],
                   inputs: tuple[str, ...], ops: str, settings: Settings, deadline: Deadline,
                   clock: Clock, bound: int | None = None) -> list[Instr] | None:
    """For a filter of several outputs, each applying one kernel to ITS OWN integer mix of the
    inputs (`channels.common_mix` per output; e.g. s * (A - B) and t * (A + B)):
    the outputs one after another, the one with most taps last. Each output's mix is written
    by adds and subtractions into a register that holds no input and no output made, then the
    output's kernel is compiled on it (`candidates.search`, `choose_program`) with the registers not
    holding the inputs (kept until the last output) or the outputs made. Verified exactly on
    every input; None when an output has no mix of its own or a stage finds no program."""
    mixes = {}
    for out, parts in definition.channels.items():
        found = common_mix({out: parts}, inputs)
        if found is None:
            return None
        mixes[out] = (found[0], found[1][out])
    if len(mixes) < 2:
        return None  # one output: `_mixed_program`
    order = sorted(mixes, key=lambda o: (len(mixes[o][1].trimmed()), o))
    program: list[Instr] = []
    for i, out in enumerate(order):
        kept = set(order[:i]) | (set(inputs) if i < len(order) - 1 else set())
        budget = tuple(r for r in registers if r not in kept)
        mix, kernel = mixes[out]
        # the mix is folded into `place`, so it must not be an input the mix reads (an output
        # not made yet is free room); the output's own register first: the kernel then
        # replaces its input there (E: A - C is one `sub`, not a `sub` and a `mov`), and the
        # last output, whose inputs are all read by its mix, may have no other register
        place = next((r for r in sorted(budget, key=lambda r: r != out) if r not in mix), None)
        if place is None or out not in budget:  # an output in an input kept for later
            return None
        one = frontend.Definition(definition.name, "filter", {out: kernel}, REAL,
                                  definition.span, exact={out: kernel})
        try:
            found = search(one, settings, ops, deadline, clock)
            stage, _, _ = choose_program(found.candidates, {out: kernel}, budget, place, ops,
                                         settings, deadline, found.large)
        except RegisterPressureError:
            return None
        if stage is None:
            return None
        program += [*_integer_mix(mix, place), *stage]
    verify_exact_channels(program, definition.channels, inputs)
    return program


def _staged_program(definition: frontend.Definition, registers: tuple[str, ...],
                    inputs: tuple[str, ...], ops: str, settings: Settings, deadline: Deadline,
                    clock: Clock, bound: int | None = None) -> list[Instr] | None:
    """The outputs as stages of one-input programs (`channel_stages.staged_program`: each
    output's terms, or its channels' common factor applied once to their mix), every stage
    from the candidates of its kernel: the part of its channel's e-graph
    (`eqsat.channels.channel_terms`), its own variant, Horner, the factor chain. Verified
    exactly on every input; None when no plan fits or none is shorter than `bound`."""
    channels = definition.channels
    quick = _ChannelStages(channels, ops, settings, deadline, refine=False)
    fused = Add3 in OP_SETS[ops]

    def finish(outputs: dict, free: tuple[str, ...]) -> list[Instr] | None:
        read = tuple(c for c in inputs if any(c in parts for parts in outputs.values()))
        return codegen.matrix_channels(outputs, free, read, ops)

    first = staged_program(channels, registers, inputs, quick,
                           None if bound is None else bound + STAGED_MARGIN, fused, finish)
    if first is None:
        return None
    full = _ChannelStages(channels, ops, settings, deadline, refine=True, share=quick)
    second = staged_program(channels, registers, inputs, full,
                            len(first) if bound is None else min(bound, len(first)), fused,
                            finish)
    program = second if second is not None else first
    verify_exact_channels(program, channels, inputs)
    return program


STAGED_MARGIN = 4
"""The staged plan is first made with every stage's candidates screened only (`SCREEN`, a
fraction of a second each), and made again with the best refined (`best_program`) only when
the screened plan came within this many instructions of the best program found before it:
refining rarely saves more, and on filters the constant-matrix program wins (random kernels
over few inputs) the refined stages would cost seconds for nothing."""


class _ChannelStages:
    """`channel_stages.Apply` for one filter: a kernel on one register into another, by the
    shortest program over its candidate decompositions (`best_program`). The terms' kernels
    take theirs from their channel's e-graph (computed once per channel, on first use), any
    other kernel (a common factor, a term of a mix) from its own; programs are memoised."""

    def __init__(self, channels: dict, ops: str, settings: Settings, deadline: Deadline,
                 refine: bool, share: _ChannelStages | None = None):
        self.channels = {o: {c: k.trimmed() for c, k in parts.items() if k.trimmed().entries}
                         for o, parts in channels.items()}
        self.ops, self.settings, self.deadline, self.refine = ops, settings, deadline, refine
        self.programs: dict = {}
        self.candidates: dict[Kernel, dict[str, Decomposition]] = (
            share.candidates if share else {})
        self.egraphs: set[str] = share.egraphs if share else set()

    def __call__(self, kernel: Kernel, source: str, target: str, budget: tuple[str, ...],
                 keep: bool) -> list[Instr] | None:
        key = (kernel, source, target, budget, keep)
        if key not in self.programs:
            self.programs[key] = self._program(kernel, source, target, budget, keep)
        return self.programs[key]

    def _program(self, kernel: Kernel, source: str, target: str, budget: tuple[str, ...],
                 keep: bool) -> list[Instr] | None:
        if self.deadline.passed():
            return None
        kept = ((source, 0),) if keep else ()
        stage = {name: Decomposition(d.values, ((target, d.outputs[0][1]), *kept))
                 for name, d in self._of(kernel).items()}
        if self.refine:
            try:
                return best_program(stage, budget, source, self.ops, self.deadline)[0]
            except (RegisterPressureError, ResourceLimitError):
                return None
        found = []
        for d in portfolio.searchable(stage).values():
            try:
                found.append(portfolio.generate_within(d, budget, source, self.ops, SCREEN,
                                                       self.deadline))
            except RegisterPressureError:
                continue
        return min(found, key=lambda p: (len(p), bus_steps(p))) if found else None

    def _of(self, kernel: Kernel) -> dict[str, Decomposition]:
        """The candidate decompositions of `kernel` (one output each)."""
        options = search_options(self.ops, self.settings, self.deadline)
        for channel in sorted({c for parts in self.channels.values() for c in parts}):
            if channel not in self.egraphs and any(
                    parts.get(channel) == kernel for parts in self.channels.values()):
                self.egraphs.add(channel)
                for out, found in channel_terms(self.channels, channel, options).items():
                    self.candidates.setdefault(self.channels[out][channel], found)
        if kernel not in self.candidates and -kernel in self.candidates:  # a subtracted term
            self.candidates[kernel] = {f"{name}, negated": _negated(d)
                                       for name, d in self.candidates[-kernel].items()}
        if kernel not in self.candidates:
            optimized = optimize({"k": kernel}, options)
            self.candidates[kernel] = assemble({"k": kernel}, optimized, (EGRAPH,
                                                                         EGRAPH_VARIANTS))
        return {**self.candidates[kernel], **assemble({"k": kernel}, None, DIRECT)}


def _negated(decomposition: Decomposition) -> Decomposition:
    """The one-output `decomposition` with its output negated (a NEG value on top: free to
    fold into the code generator's terms)."""
    (name, index), = decomposition.outputs
    values = (*decomposition.values, Value(Op.NEG, (index,)))
    return Decomposition(values, ((name, len(values) - 1),))


def _integer_mix(mix: dict[str, int], place: str) -> list[Instr]:
    """place := Σ_c mix[c] · c by adds and subtractions (|mix[c]| unit terms each; the first
    coefficient is positive), the inputs unchanged; `place` must not be one of them."""
    terms = [(c, 1 if r > 0 else -1) for c, r in mix.items() for _ in range(abs(r))]
    (first, _), rest = terms[0], terms[1:]
    if not rest:
        return [Mov(place, first)]
    (second, sign), rest = rest[0], rest[1:]
    out: list[Instr] = [(Add if sign > 0 else Sub)(place, first, second)]
    out += [(Add if sign > 0 else Sub)(place, place, c) for c, sign in rest]
    return out
