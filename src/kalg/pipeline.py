"""The pipeline: .kalg text → AST → exact kernels → e-graph → decomposition → verified program.

`compile_file` is the whole compiler, one step per stage; `Settings.emit` stops it early and the
`Result` then holds that stage's artefact as text. Only this module knows the stage order.
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path

import numpy as np

from kalg import codegen, frontend, portfolio, workers
from kalg.channel_stages import staged_program
from kalg.channels import common_mix
from kalg.clock import Clock
from kalg.codegen import exhaustive as exact
from kalg.codegen.chain import chain_widths
from kalg.codegen.factored import shortest_chain
from kalg.codegen.kept import kept_program
from kalg.codegen.separable import separable_candidate
from kalg.decomp import Decomposition, Op, Value
from kalg.diagnostics import (
    KalgError,
    KalgSemanticError,
    RegisterPressureError,
    ResourceLimitError,
    UsageError,
)
from kalg.eqsat import engine
from kalg.eqsat.channels import channel_terms
from kalg.eqsat.optimize import Optimized, Options, direct_decomposition, optimize
from kalg.frontend.ast import dump
from kalg.frontend.report import format_definition
from kalg.frontend.target import WIDE
from kalg.kernel import REAL, Kernel
from kalg.scamp5.isa import OP_SETS, SIMULATED_REGISTERS, Add, Add3, Instr, Mov, Sub, bus_steps
from kalg.scamp5.isa import REGISTERS as SCAMP5_REGISTERS
from kalg.scamp5.simulator import verify_numeric, verify_numeric_channels
from kalg.scamp5.symbolic import verify_exact_channels
from kalg.scamp5.text import format_program
from kalg.stages import Stage

__all__ = ["Result", "Settings", "Stage", "compile_file", "compile_text"]


@dataclass(frozen=True, slots=True)
class Settings:
    """What the user asked for; None means "as the file's target block says"."""

    name: str | None = None
    ops: str | None = None
    registers: tuple[str, ...] | None = None
    target: str | None = None
    """"scamp5", or "scamp5_wide" for a hypothetical register file beyond A..F (simulated)."""
    emit: Stage = Stage.PROGRAM
    time_limit: float = 10.0
    node_limit: int = 30_000
    exhaustive: bool = False
    """Also run the exact search (`codegen.exhaustive`) for a shorter program, or a proof."""
    exhaustive_nodes: int = exact.NODES
    progress: Callable[[str], None] | None = None
    input: str | None = None
    """The register the image starts in (and a kernel's result ends in); None: the file's."""
    timeout: float | None = None
    """Wall-clock bound in seconds on the whole compile, code generation included; None: none.
    When it expires during code generation the best verified program so far is the result."""
    warn: Callable[[str], None] | None = None
    """Receives each warning as soon as it is known (they are also in `Result.warnings`)."""


@dataclass
class Result:
    stage: Stage
    text: str
    stats: dict[str, object] = field(default_factory=dict)
    program: list[Instr] = field(default_factory=list)
    definition: frontend.Definition | None = None
    decomposition: Decomposition | None = None
    """The decomposition the program was generated from (None before that stage, and for the
    programs built for a filter as a whole: shared matrix, outputs one at a time)."""
    verified: bool = False
    """True exactly when `program` was checked exactly and in the simulator."""
    warnings: list[str] = field(default_factory=list)
    input_register: str = "A"


VERIFY_SHAPE = (48, 48)
"""Smallest random image every program is simulated on before it is printed (it grows with
the kernel's reach, so that every program has an interior to check)."""

MAX_REACH = 127
"""A kernel reaching further than this from its centre leaves no interior on SCAMP-5's 256x256
array: no output pixel would see all of its inputs."""

PRECISION_BITS = 16
"""Coefficients (as integers over their common power-of-two denominator) wider than this get a
warning: SCAMP-5's analogue registers hold about 8 bits, and every bit is one more doubling."""


def compile_file(path: str | Path, settings: Settings = Settings()) -> Result:
    """Compile the definition `settings.name` (default: the file's last) of the .kalg file."""
    return compile_text(frontend.read_source(path), str(path), settings)


def compile_text(text: str, path: str = "<string>", settings: Settings = Settings()) -> Result:
    """Compile .kalg `text` (errors are located in `path`) as `compile_file` does."""
    clock = Clock(settings.progress)
    deadline = _Deadline(settings.timeout)
    # Parse first, so syntax errors are reported before any meaning is computed.
    tree = frontend.parse(text.removeprefix("\ufeff"), path)
    if settings.emit is Stage.AST:
        return Result(Stage.AST, dump(tree) + "\n")
    # Evaluate every definition exactly; semantic errors are located in the file.
    module = frontend.check(tree)
    target = module.target
    input_register = settings.input or target.input
    definition = _with_input(module.definition(settings.name), target.input, input_register)
    if settings.emit is Stage.KERNELS:
        return Result(Stage.KERNELS, format_definition(definition), definition=definition)
    ops = settings.ops or target.ops
    registers = settings.registers or target.registers
    target_name = settings.target or target.name
    if definition.channels:
        return _compile_channels(definition, path, settings.emit, ops, registers, target,
                                 target_name, clock, settings, deadline)
    _check_compilable(definition, input_register, registers, target_name,
                      from_options=bool(settings.registers or settings.input))
    warnings = _early_warnings(definition, settings.warn)
    clock.lap("front end")
    searched = _candidates(definition, settings, ops, deadline, clock, warnings)
    if isinstance(searched, Result):
        return searched  # --emit egraph or decomposition
    stats, candidates, provenance, large = searched
    program, winner, stop = _choose_program(candidates, definition.outputs, registers,
                                            input_register, ops, settings, deadline, large)
    decomposition = next((c[winner] for c in candidates.values() if winner in c), None)
    if stop:
        warnings.append(stop)
        if settings.warn:
            settings.warn(stop)
    clock.lap("codegen")
    program, winner, proof = _prove(settings, definition.outputs, program, winner, registers,
                                    input_register, ops, deadline)
    if proof is not None:
        stats["exhaustive search"] = proof
    clock.lap("exact searches")
    stats["candidate"] = winner
    stats["stop reason"] = stop or "searched every candidate"
    stats["provenance"] = {**provenance,
                           "horner": ["digit planes (Horner), no e-graph"],
                           "separable": ["row then column, each by Horner, no e-graph"],
                           "separable, column first": ["column then row, each by Horner, "
                                                       "no e-graph"],
                           "factor chain": ["integer factors applied in turn, no e-graph"],
                           "factor chain, halving first": [
                               "integer factors applied in turn, each after its halvings, "
                               "common factors of the outputs first, no e-graph"],
                           "split chain": ["integer factors applied in turn, a factor that is "
                                           "factorable plus a tap as its own chain plus the "
                                           "tap, no e-graph"],
                           "as written": ["the expression as written, no e-graph"],
                           "exhaustive search": ["exact search over all programs, no e-graph"],
                           KEPT: ["a value of the first instruction kept to the last, the "
                                  "middle by the exact search, no e-graph"],
                           FACTORED: ["the exact search's shortest program of each group of "
                                      "integer factors, one after another, no e-graph"],
                           MATRIX: ["outputs as a constant-matrix multiplication over the input "
                                    "divided once, no e-graph"],
                           ONE_AT_A_TIME: ["each output's own compile, one after another"],
                           LAST_IN_PLACE: ["constant-matrix program, the last output made in "
                                           "place from the others"],
                           }.get(winner, [winner])
    # Check once more, numerically, against the reference correlation (scipy-equivalent).
    image = np.random.default_rng(0).uniform(-1, 1, verify_shape(definition.outputs))
    verify_numeric(program, definition.outputs, image, input_register)
    clock.lap("verify")
    seconds = {stage: round(s, 3) for stage, s in clock.laps.items()}
    stats |= _program_stats(program, registers, ops) | {"seconds": seconds}
    if target_name == WIDE:
        stats["target"] = _WIDE_NOTE
    header = _header(definition, path, ops, registers, input_register, target_name)
    if proof is not None:
        header.append(f"length: {proof}")
    return Result(Stage.PROGRAM, format_program(program, header=header), stats, program,
                  definition=definition, decomposition=decomposition, verified=True,
                  warnings=warnings, input_register=input_register)


def _candidates(definition: frontend.Definition, settings: Settings, ops: str,
                deadline: _Deadline, clock: Clock, warnings: list[str]):
    """The candidate decompositions with the search's statistics and provenance, and whether
    the kernel took the large path; or the `Result` of --emit egraph / decomposition."""
    large = _large_candidates(definition.outputs) if settings.emit is Stage.PROGRAM else None
    if large:
        # Large separable or factorable kernels: the direct candidates only (see LARGE_TAPS).
        stats: dict[str, object] = {"algebra e-graph": _LARGE_NOTE}
        provenance: dict[str, list[str]] = {}
        candidates = {ops: large}
    elif len(definition.outputs) > JOINT_OUTPUTS and settings.emit is Stage.PROGRAM:
        # Its candidates would not be searched (`_choose`): the filter's own programs only.
        stats, provenance, candidates = {"algebra e-graph": _FILTER_NOTE}, {}, {ops: {}}
    else:
        if settings.progress:
            settings.progress("e-graph: saturating the algebra, extracting decompositions")
        # Search the algebra: seeded e-graph, bounded saturation, DAG-cost extraction.
        optimized = optimize(definition.outputs, _options(ops, settings, deadline),
                             definition.structure)
        clock.lap("optimize")
        stats = _search_stats(optimized)
        if settings.emit is Stage.EGRAPH:
            return Result(Stage.EGRAPH, _format_stats(stats), stats, definition=definition,
                          warnings=warnings)
        if settings.emit is Stage.DECOMPOSITION:
            return Result(Stage.DECOMPOSITION, str(optimized.decomposition) + "\n", stats,
                          definition=definition, decomposition=optimized.decomposition,
                          warnings=warnings)
        # Generate code for every candidate decomposition; the shortest verified program wins.
        shared = {"e-graph variants": optimized.applied,
                  "horner": direct_decomposition(definition.outputs)}
        if optimized.as_written is not None:
            shared["as written"] = optimized.as_written
        if (chain := codegen.factor_chain(definition.outputs)) is not None:
            shared["factor chain"] = chain
        if (first := codegen.factor_chain(definition.outputs, halve_first=True)) is not None:
            shared["factor chain, halving first"] = first
        if (split := codegen.factor_chain(definition.outputs, split=True)) is not None:
            shared["split chain"] = split
        extracted = {ops: optimized.decomposition, **optimized.extra}
        candidates = {op_set: {_egraph_name(op_set, ops): extracted[op_set], **shared}
                      for op_set in extracted}
        provenance = {"e-graph": optimized.provenance,
                      "e-graph variants": optimized.applied_provenance}
    return stats, candidates, provenance, bool(large)


def verify_shape(outputs: dict[str, Kernel]) -> tuple[int, int]:
    """The random image a program for `outputs` is checked on: at least `VERIFY_SHAPE`, and
    wide enough for an interior of 16 pixels whatever the kernels' reach."""
    reach = max((k.radius() for k in outputs.values()), default=0)
    side = max(VERIFY_SHAPE[0], 2 * reach + 16)
    return (side, side)


class _Deadline:
    """The end of `--timeout`: seconds left, and whether it has passed (never, without one)."""

    def __init__(self, seconds: float | None):
        self.seconds = seconds
        self.end = None if seconds is None else time.monotonic() + seconds

    def left(self) -> float:
        return math.inf if self.end is None else self.end - time.monotonic()

    def passed(self) -> bool:
        return self.left() <= 0


def _compile_channels(definition: frontend.Definition, path: str | Path, emit: Stage, ops: str,
                      registers: tuple[str, ...], target, target_name: str,
                      clock: Clock, settings: Settings, deadline: _Deadline) -> Result:
    """A filter over several inputs (`kalg.channels`): compiled as one constant-matrix program
    (`codegen.matrix_channels`, each input divided once, sharing within and across channels
    through the walk of each output); when every output applies its kernel to one mix of the
    inputs (`channels.common_mix`), as the mix followed by the ordinary filter compile on it
    (`_mixed_program`: e-graph and every candidate), or each output on its own mix
    (`_mixes_program`); and as stages of one-input programs from one e-graph per channel
    (`_staged_program`). The shortest is kept, verified exactly on every input and
    numerically on random images."""
    if emit is not Stage.PROGRAM:
        raise KalgError(f"'{definition.name}' reads several inputs: its programs come from "
                        "one e-graph per input channel and constant-matrix programs, so there "
                        "is no single e-graph or decomposition to emit (--emit kernels and "
                        "ast work)")
    for err in definition.unapproximated.values():
        raise err  # SCAMP-5 can only halve: a non-dyadic kernel needs an approx setting
    universe = SIMULATED_REGISTERS if target_name == WIDE else SCAMP5_REGISTERS
    if missing := sorted(({*definition.channels, *target.inputs} - set(registers))
                         | (set(registers) - set(universe))):
        raise KalgError(f"register(s) {', '.join(missing)} are not in the register budget "
                        f"{' '.join(registers)} of target {target_name}")
    program = codegen.matrix_channels(definition.channels, registers, target.inputs, ops)
    winner = MATRIX
    for name, build in ((MIXED, _mixed_program), (MIXES, _mixes_program),
                        (STAGED, _staged_program)):
        found = build(definition, registers, target.inputs, ops, settings, deadline, clock,
                      len(program) if program is not None else None)
        if found is not None and (program is None or len(found) < len(program)):
            program, winner = found, name
    if program is None:
        raise RegisterPressureError(
            f"no program for the {len(definition.channels)} output(s) over the inputs "
            f"{', '.join(target.inputs)} fits in {len(registers)} register(s)",
            hint="each input needs a register for its divided copy and each output one to "
                 "accumulate in; give more registers or fewer outputs")
    clock.lap("codegen")
    rng = np.random.default_rng(0)
    images = {c: rng.uniform(-1, 1, VERIFY_SHAPE) for c in target.inputs}
    verify_numeric_channels(program, definition.channels, images)
    clock.lap("verify")
    stats = _program_stats(program, registers, ops) | {
        "candidate": winner, "inputs": " ".join(target.inputs),
        "seconds": {stage: round(s, 3) for stage, s in clock.laps.items()}}
    header = _header(definition, path, ops, registers, " ".join(target.inputs), target_name)
    return Result(Stage.PROGRAM, format_program(program, header=header), stats, program,
                  definition=definition, verified=True, input_register=target.inputs[0])


MIXED = "one mix of the inputs, then the filter on it"


def _mixed_program(definition: frontend.Definition, registers: tuple[str, ...],
                   inputs: tuple[str, ...], ops: str, settings: Settings, deadline: _Deadline,
                   clock: Clock, bound: int | None = None) -> list[Instr] | None:
    """For a filter whose outputs all apply their kernel to one integer mix m of the inputs
    (`channels.common_mix`): m written into a register that is no output (the shortest
    `codegen.matrix_channels` program of the candidate registers), then the ordinary compile
    of the one-input filter on m (`_candidates`, `_choose_program`: the e-graph and every
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
        searched = _candidates(one, settings, ops, deadline, clock, [])
        _, candidates, _, large = searched
        program, _, _ = _choose_program(candidates, kernels, registers, place, ops, settings,
                                        deadline, large)
    except RegisterPressureError:
        return None
    if program is None:
        return None
    program = [*mixing, *program]
    verify_exact_channels(program, definition.channels, inputs)
    return program


MIXES = "each output's mix of the inputs, then its kernel on it"


def _mixes_program(definition: frontend.Definition, registers: tuple[str, ...],
                   inputs: tuple[str, ...], ops: str, settings: Settings, deadline: _Deadline,
                   clock: Clock, bound: int | None = None) -> list[Instr] | None:
    """For a filter of several outputs, each applying one kernel to ITS OWN integer mix of the
    inputs (`channels.common_mix` per output; frame_pair: smooth * (A - B), sobel * (A + B)):
    the outputs one after another, the one with most taps last. Each output's mix is written
    by adds and subtractions into a register that holds no input and no output made, then the
    output's kernel is compiled on it (`_candidates`, `_choose_program`) with the registers not
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
        # not made yet is free room)
        place = next((r for r in budget if r != out and r not in mix), None)
        if place is None or out not in budget:  # an output in an input kept for later
            return None
        one = frontend.Definition(definition.name, "filter", {out: kernel}, REAL,
                                  definition.span, exact={out: kernel})
        try:
            _, candidates, _, large = _candidates(one, settings, ops, deadline, clock, [])
            stage, _, _ = _choose_program(candidates, {out: kernel}, budget, place, ops,
                                          settings, deadline, large)
        except RegisterPressureError:
            return None
        if stage is None:
            return None
        program += [*_integer_mix(mix, place), *stage]
    verify_exact_channels(program, definition.channels, inputs)
    return program


STAGED = ("each output's kernels on its inputs from one e-graph per channel, summed or "
          "their common factor applied to their mix")


def _staged_program(definition: frontend.Definition, registers: tuple[str, ...],
                    inputs: tuple[str, ...], ops: str, settings: Settings, deadline: _Deadline,
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
fraction of a second each), and made again with the best refined (`_best_program`) only when
the screened plan came within this many instructions of the best program found before it:
refining rarely saves more, and on filters the constant-matrix program wins (random kernels
over few inputs) the refined stages would cost seconds for nothing."""


class _ChannelStages:
    """`channel_stages.Apply` for one filter: a kernel on one register into another, by the
    shortest program over its candidate decompositions (`_best_program`). The terms' kernels
    take theirs from their channel's e-graph (computed once per channel, on first use), any
    other kernel (a common factor, a term of a mix) from its own; programs are memoised."""

    def __init__(self, channels: dict, ops: str, settings: Settings, deadline: _Deadline,
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
                return _best_program(stage, budget, source, self.ops, self.deadline)[0]
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
        options = _options(self.ops, self.settings, self.deadline)
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
            self.candidates[kernel] = {"e-graph": optimized.decomposition,
                                       "e-graph variants": optimized.applied}
        found = dict(self.candidates[kernel])
        found["horner"] = direct_decomposition({"k": kernel})
        if (chain := codegen.factor_chain({"k": kernel})) is not None:
            found["factor chain"] = chain
        return found


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


def _check_compilable(definition: frontend.Definition, input_register: str,
                      registers: tuple[str, ...], target_name: str = "scamp5",
                      from_options: bool = False) -> None:
    """Refuse, before any search, what cannot become a SCAMP-5 program (located at the
    definition where it is the definition's fault). `from_options`: the budget or input came
    from the command line, so a budget that misses them is a usage error (exit 2)."""
    if definition.semiring is not REAL:
        raise KalgSemanticError(
            f"'{definition.name}' is a {definition.semiring.name} kernel; SCAMP-5's analogue "
            "registers compute real sums only", definition.span,
            "'kalg optimize FILE --target cpu' finds its cheapest decomposition for a CPU")
    for err in definition.unapproximated.values():
        raise err  # SCAMP-5 can only halve: a non-dyadic kernel needs an approx setting
    universe = SIMULATED_REGISTERS if target_name == WIDE else SCAMP5_REGISTERS
    unknown = [r for r in registers if r not in universe]
    if unknown and target_name == WIDE:
        raise KalgError(f"register(s) {', '.join(unknown)} are not in the simulated register file "
                        f"{SIMULATED_REGISTERS[0]}..{SIMULATED_REGISTERS[-1]}")
    if unknown:
        raise KalgError(f"register(s) {', '.join(unknown)} do not exist on SCAMP-5: its analogue "
                        f"registers are {'..'.join(SCAMP5_REGISTERS[::5])}; use a subset of them "
                        f"(for a hypothetical wider register file, in simulation only, use "
                        f"'--target {WIDE}' or write 'target {WIDE} {{ registers: A..R }}')")
    _check_budget(definition, input_register, registers, from_options)
    for register, kernel in sorted(definition.outputs.items()):
        _check_output(definition, register, kernel)


def _check_budget(definition: frontend.Definition, input_register: str,
                  registers: tuple[str, ...], from_options: bool = False) -> None:
    """The input register and every output register must be in the budget; say which is which."""
    roles: dict[str, list[str]] = {}
    if input_register not in registers:
        roles.setdefault(input_register, []).append("the input register (the image starts there)")
    for register in sorted(definition.outputs):
        if register not in registers:
            role = ("the output register (a kernel's result replaces its input)"
                    if definition.kind == "kernel"
                    else f"an output register of '{definition.name}'")
            roles.setdefault(register, []).append(role)
    if roles:
        said = "; ".join(f"{r} is {' and '.join(what)}" for r, what in roles.items())
        error = UsageError if from_options else KalgSemanticError
        raise error(
            f"register(s) {', '.join(roles)} must be in the register budget "
            f"{' '.join(registers)}: {said}",
            span=None if from_options else definition.span,
            hint=f"add them to --registers, or move the input with --input REG "
                 f"(e.g. --input {registers[0]}: a kernel's result then ends in it too)")


def _check_output(definition: frontend.Definition, register: str, kernel: Kernel) -> None:
    where = f"'{definition.name}'" + (f" output {register}" if definition.kind != "kernel" else "")
    if not kernel.trimmed().entries:
        raise KalgSemanticError(f"{where} is the zero kernel: there is nothing to compute",
                                definition.span)
    if kernel.radius() > MAX_REACH:
        raise KalgSemanticError(
            f"{where} reaches {kernel.radius()} pixels from its centre: on SCAMP-5's 256x256 "
            f"array no output pixel would see all its inputs (at most {MAX_REACH})",
            definition.span)


def _with_input(definition: frontend.Definition, file_input: str,
                input_register: str) -> frontend.Definition:
    """A kernel's result replaces its input: with the input moved, so is its output."""
    if definition.kind != "kernel" or input_register == file_input:
        return definition
    return dataclasses.replace(definition,
                               outputs={input_register: definition.outputs[file_input]})


def _early_warnings(definition: frontend.Definition,
                    warn: Callable[[str], None] | None = None) -> list[str]:
    """What the user should know before a long search (each also sent to `warn` at once):
    coefficients too wide for analogue registers (each bit a doubling: a long program, and
    noise far above the signal)."""
    warnings = []
    for register, kernel in sorted(definition.outputs.items()):
        values = [v for v in kernel.taps.values() if v]
        scale = math.lcm(*(Fraction(v).denominator for v in values))
        bits = max(abs(int(Fraction(v) * scale)).bit_length() for v in values)
        if bits > PRECISION_BITS:
            largest = max(values, key=abs)
            where = (f"'{definition.name}'"
                     + (f" output {register}" if definition.kind != "kernel" else ""))
            warnings.append(
                f"{where} has a coefficient of {bits} bits ({_short(largest)}): SCAMP-5's analogue "
                f"registers hold about 8, so the program will be long and its result dominated "
                f"by noise; consider scaling the kernel down or approximating it")
            if warn:
                warn(warnings[-1])
    return warnings


def _short(value: object) -> str:
    text = str(value)
    return text if len(text) <= 24 else f"{float(Fraction(value)):.3g}"


def _options(ops: str, settings: Settings, deadline: _Deadline) -> Options:
    """Search options; under --timeout, saturation gets half the time left and extraction
    the rest, so that code generation starts in time to find a program."""
    seconds, extraction = settings.time_limit, 3 * settings.time_limit
    if deadline.end is not None:
        left = max(deadline.left(), 0.1)
        seconds, extraction = min(seconds, left / 3), min(extraction, left / 3)
    limits = engine.Limits(nodes=settings.node_limit, seconds=seconds)
    included = portfolio.OP_ORDER[: portfolio.OP_ORDER.index(ops)]  # searched too (monotone)
    return Options(op_set=ops, limits=limits, extraction_seconds=extraction, also=included)


def _egraph_name(op_set: str, ops: str) -> str:
    """The e-graph candidate's name: "e-graph", or "e-graph (basic)" for the basic extraction
    searched under op set all."""
    return "e-graph" if op_set == ops else f"e-graph ({op_set})"


# The code-generation budgets (screen, refine, the narrow refine, the value cap) are the
# portfolio's: one definition serves the portfolio's rungs and the large-kernel and filter stages.
SCREEN, REFINE, REFINE_NARROW = portfolio.SCREEN, portfolio.REFINE, portfolio.REFINE_NARROW
MAX_VALUES = portfolio.MAX_VALUES

REFINED = 1
"""How many screened candidates are searched again with `REFINE`... Over both op sets of the
benchmark, refining the runner-up too (2, with margin 3, the earlier setting) never changed a
program once the best is also searched with `REFINE_NARROW`; it cost a refine per kernel."""

REFINE_MARGIN = 0
"""...of those at most this many instructions longer than the best screened program."""

LARGE_TAPS = 49
"""Kernels with more taps than this (beyond 7x7, the benchmark's largest) that are separable
or factor into integer factors get only the direct candidates (the factor chain, row-then-column
by Horner, Horner over the whole kernel), and no e-graph: on a 31x31 box the e-graph's flat
literals took 34 s to extract and 48 s to lower, for 520 instructions where row-then-column
gives 43 in a few seconds; the 9x9 Gaussian took 20 s for the factor chain's 36 instructions,
now found in under 2 s of CPU time."""

_LARGE_NOTE = (f"not run (more than {LARGE_TAPS} taps and separable or factorable: direct "
               "candidates only)")


LARGE_VALUES = 200
"""In the large path, candidates with more live values than this are left out (Horner over a
whole 9x9 Gaussian, 285 values: 14 s of screening for 287 instructions)."""

FLAT_LARGE_VALUES = 256
"""...except Horner over a kernel of one digit plane (a flat sum: no halvings, one add per
tap), admitted up to this many: the 11x11 box's 241 values screen in under a second and refine
to 15 instructions, where row-then-column gives 16 (a random 9x9 of three planes, 163 values,
takes 6.5 s to screen)."""

LARGE_REFINE_MARGIN = 4
"""In the large path, only candidates whose screened program is at most 1/this longer than
the best screened one are refined: refining a far worse candidate cost time and did not win
(a random separable 9x9: Horner 101 screened, 78 refined, 22 s, against 31 row-then-column)."""

CHAIN_WIDTH = 3

LARGE_REFINE_VALUES = FLAT_LARGE_VALUES
"""In the large path, candidates with at most this many live values are refined with `REFINE`,
except the separable ones (`SEPARABLE_REFINE_VALUES`): every admitted Horner (the 11x11 box's
flat sum: 17 screened, 15 refined, about 4.5 s). Refining gives the 9x9 box's Horner 12
(15 screened) and the 15x15 Gaussian's chain 62 (64)."""

SEPARABLE_REFINE_VALUES = 64
"""The separable candidate screened shorter (row then column, or column then row) is refined
only up to this many live values: refining their long flat sums grows with the side (31x31
box: 12 s CPU for 41 instead of 43) while it pays on mid-sized kernels (15x15 box: 23 -> 20,
about 2 s). The beam search is not monotone in its budget (21x21 box: 28 screened, 315
refined), which costs time only: the shortest program wins."""


def _large_candidates(outputs: dict) -> dict[str, Decomposition] | None:
    """The direct candidates of a large kernel (`LARGE_TAPS`), or None for the full search.
    When the kernel is separable, the factor chain is offered only if its factors are small
    sums (at most `CHAIN_WIDTH` taps, as the binomial Gaussian's 1 + x): a chain of long factors
    (a box's cyclotomic factors) groups the same row sums differently and took 12 s to screen
    on a 21x21 box for 48 instructions, where row-then-column took 4 s for 28."""
    if max(len(k.trimmed()) for k in outputs.values()) <= LARGE_TAPS:
        return None
    found = {}
    split = separable_candidate(outputs)
    chain = codegen.factor_chain(outputs)
    widths = [w for k in outputs.values() for w in chain_widths(k)]
    if chain is not None and (split is None or max(widths) <= CHAIN_WIDTH):
        # both orders of halving: neither is shorter on every kernel (LoG 9x9: 33 halving
        # after each factor, 37 halving first; binomial Gaussians: halving first)
        found["factor chain"] = chain
        found["factor chain, halving first"] = codegen.factor_chain(outputs, halve_first=True)
    if split is not None:
        found["separable"] = split
        if "factor chain" not in found:  # the chain of small factors wins there (Gaussians)
            found["separable, column first"] = separable_candidate(outputs, column_first=True)
    if not found:
        return None
    horner = direct_decomposition(outputs)
    flat = all(abs(c) == 1 for k in outputs.values() for c in k.trimmed().taps.values())
    if len(horner.live()) <= (FLAT_LARGE_VALUES if flat else LARGE_VALUES):
        found["horner"] = horner
    return found


def _best_program(candidates: dict[str, Decomposition], registers: tuple[str, ...],
                  input_register: str, ops: str, deadline: _Deadline | None = None,
                  progress: Callable[[str], None] | None = None, large: bool = False,
                  ) -> tuple[list[Instr], str, str | None]:
    """The shortest program (then fewest bus steps) over all candidates and searches, the
    name of the candidate it came from, and why the search stopped early (None: it did not).
    Ties keep the earlier candidate (deterministic). Past the deadline no further search
    starts, and a running one stops with what it has; without any program that is an error.
    `large`: refine as `LARGE_REFINE_VALUES` says, no narrow refine."""
    deadline = deadline or _Deadline(None)
    usable = portfolio.searchable(candidates)
    screens = [(name, order, SCREEN) for order, name in enumerate(usable)]
    longest = None  # the screens' best length, once known: a refine only wins within it

    def attempt(job: tuple[str, int, codegen.Limits], number: int, count: int):
        name, order, limits = job
        if deadline.passed():
            return None
        if progress:
            progress(f"code generation: search {number} of {count} ({name})")
        if large:
            limits = _flat_sum_limits(limits)
        try:
            program = portfolio.generate_within(usable[name], registers, input_register, ops,
                                                limits, deadline, longest=longest)
        except RegisterPressureError as err:
            return err
        if program is None:
            return None
        return (len(program), bus_steps(program), order), name, program

    found, pressure = _searched(attempt, screens, usable, 0)
    if found:  # screening done: refine the most promising
        refines = _large_refines(sorted(found), usable) if large else _refines(sorted(found))
        longest = min(found)[0][0]
        found += _searched(attempt, refines, usable, len(screens))[0]
    stop = portfolio.timeout_stop(deadline, found=bool(found))
    if not found:
        assert pressure is not None
        raise pressure
    _, winner, best = min(found, key=lambda f: f[0])
    return best, winner, stop


def _searched(attempt: Callable, jobs: list[tuple[str, int, codegen.Limits]], usable: dict,
              before: int) -> tuple[list, RegisterPressureError | None]:
    """The programs of independent searches `jobs` (`attempt(job, number, count)`), computed
    on the worker processes (`workers.ordered_map`, the candidates with most values first)
    and taken in the jobs' order, and the last RegisterPressureError among them (None: none)."""
    count = before + len(jobs)
    first = sorted(range(len(jobs)), key=lambda i: (-len(usable[jobs[i][0]].live()), i))
    outcomes = workers.ordered_map(lambda i: attempt(jobs[i], before + i + 1, count),
                                   len(jobs), first)
    found, pressure = [], None
    for outcome in outcomes:
        if isinstance(outcome, RegisterPressureError):
            pressure = outcome
        elif outcome is not None:
            found.append(outcome)
    return found, pressure


def _flat_sum_limits(limits: codegen.Limits) -> codegen.Limits:
    """`limits` without the centre-difference ranking (`Weights.self_difference`), for the
    large path: a difference against a neighbour in one `subx` pays where it is a large share
    of a short sum, while on the long flat sums of large kernels its three-way splits cost
    about four times the code generation (11x11 box: 29 s of CPU against 7 s) for no shorter
    program on any large kernel of the suites."""
    kept = tuple(w for w in limits.portfolio if not w.self_difference)
    return dataclasses.replace(limits, portfolio=kept)


def _large_refines(screened: list, usable: dict) -> list[tuple[str, int, codegen.Limits]]:
    """The refines of the large path: see `LARGE_REFINE_VALUES`, `SEPARABLE_REFINE_VALUES`
    and `LARGE_REFINE_MARGIN`."""
    def bound(name: str) -> int:
        return SEPARABLE_REFINE_VALUES if name.startswith("separable") else LARGE_REFINE_VALUES
    best = screened[0][0][0]
    # One axis order of a separable kernel: the one screened shorter (the first on a tie).
    first = next((name for _, name, _ in screened if name.startswith("separable")), None)
    return [(name, order, REFINE) for (length, _, order), name, _ in screened
            if len(usable[name].live()) <= bound(name)
            and length <= best + best // LARGE_REFINE_MARGIN
            and (name == first or not name.startswith("separable"))]


def _refines(screened: list) -> list[tuple[str, int, codegen.Limits]]:
    """The searches after screening: `REFINED` candidates within `REFINE_MARGIN` of the best
    with `REFINE`, and the best once more with `REFINE_NARROW`."""
    jobs = [(name, order, REFINE) for (length, _, order), name, _ in screened[:REFINED]
            if length <= screened[0][0][0] + REFINE_MARGIN]
    (_, _, order), name, _ = screened[0]
    return [*jobs, (name, order, REFINE_NARROW)]


EXACT_UP_TO = 5
"""Without --exhaustive, kalg still runs the exact search when its program has at most this
many instructions (one output, at most six registers): every shorter length is then searched
in about 12000 nodes (0.2 to 0.3 s of CPU for 5-instruction programs), so such programs are
proven shortest or replaced."""

EXACT_NODES = 20_000
"""Node budget of that default search (deterministic; depth 4 takes 10000 to 12000)."""


def _prove(settings: Settings, outputs: dict, program: list[Instr], winner: str,
           registers: tuple[str, ...], inp: str, ops: str,
           deadline: _Deadline) -> tuple[list[Instr], str, str | None]:
    """The exact search when asked for (--exhaustive) or cheap (`EXACT_UP_TO`); proof None
    when it did not run."""
    six = _six_registers(registers, inp, outputs)
    program, winner = _by_factors(outputs, program, winner, six, inp, ops)
    program, winner = _by_kept_value(outputs, program, winner, six, inp, ops)
    if not (settings.exhaustive or _cheap_to_prove(program, outputs, registers)):
        return program, winner, None
    nodes = settings.exhaustive_nodes if settings.exhaustive else EXACT_NODES
    seconds = None if deadline.end is None else max(deadline.left(), 0.1)
    return _exhaustive(outputs, program, winner, registers, inp, ops, nodes, seconds)


def _six_registers(registers: tuple[str, ...], inp: str, outputs: dict) -> tuple[str, ...]:
    """The register budget of the exact searches that find shorter programs: `registers`, or
    with more than six of them six (the input's, the outputs', then the first others): the
    searches are made for six, and a program on six of the registers is a program on all of
    them, so a larger budget is never longer than A..F for want of these searches."""
    if len(registers) <= 6:
        return registers
    first = [inp, *(o for o in outputs if o != inp)]
    rest = [r for r in registers if r not in first]
    return tuple([*first, *rest][:6]) if len(first) <= 6 else registers


FACTORED = "shortest factors"
FACTOR_NODES = 10_000
"""Node budget of the exact searches for a small kernel's factors (`codegen.factored`), all
together: deterministic, at most about half a second of CPU (robinson_ne's 5 takes about
6000 nodes)."""

FACTOR_TAPS = 25
"""The factors' programs are searched only for kernels of at most this many taps (5x5): the
exact search is for small factors, and factoring large kernels whole is slow."""


def _by_factors(outputs: dict, program: list[Instr], winner: str, registers: tuple[str, ...],
                inp: str, ops: str) -> tuple[list[Instr], str]:
    """`program`, or a shorter one made of the shortest programs of the kernel's factors."""
    if len(outputs) != 1 or len(registers) > 6:
        return program, winner
    ((out, kernel),) = outputs.items()
    if len(kernel.trimmed()) > FACTOR_TAPS:
        return program, winner
    found = shortest_chain(kernel, registers=registers, input_register=inp, output=out,
                           op_set=ops, shorter_than=len(program), nodes=FACTOR_NODES)
    return (program, winner) if found is None else (found, FACTORED)


KEPT = "kept value"
KEPT_LENGTHS = (6, 7)
"""Programs of these lengths also meet the family of programs that keep a value of their first
instruction to the last (`codegen.kept`); shorter ones are searched whole by the exact search
(`EXACT_UP_TO`), longer ones would need middles too long to search by default."""

KEPT_NODES = 30_000
"""Node budget of those searches, all together: deterministic, at most about 0.4 s of CPU
(mean_cross's 6 takes about 16500 nodes, some of its middles needing a proof that no
4-instruction program exists)."""


def _by_kept_value(outputs: dict, program: list[Instr], winner: str,
                   registers: tuple[str, ...], inp: str, ops: str) -> tuple[list[Instr], str]:
    """`program`, or a shorter one whose first instruction makes a value its last reads."""
    if len(outputs) != 1 or len(registers) > 6 or len(program) not in KEPT_LENGTHS:
        return program, winner
    ((out, kernel),) = outputs.items()
    found = kept_program(kernel, registers=registers, input_register=inp, output=out,
                         op_set=ops, shorter_than=len(program), nodes=KEPT_NODES)
    return (program, winner) if found is None else (found, KEPT)


def _cheap_to_prove(program: list[Instr], outputs: dict, registers: tuple[str, ...]) -> bool:
    return len(program) <= EXACT_UP_TO and len(outputs) == 1 and len(registers) <= 6


def _exhaustive(outputs: dict, program: list[Instr], winner: str, registers: tuple[str, ...],
                inp: str, ops: str, nodes: int,
                seconds: float | None = None) -> tuple[list[Instr], str, str]:
    """The exact search for a program shorter than `program`: the shorter program if one was
    found, and in words what was proven about the length (for the program header)."""
    where = f"op set {ops}, {len(registers)} registers"
    if len(outputs) != 1:
        return program, winner, "not proven (the exhaustive search takes one output only)"
    ((out, kernel),) = outputs.items()
    outcome = exact.shortest_program(kernel, registers=registers, input_register=inp,
                                          output=out, op_set=ops, max_length=len(program) - 1,
                                          nodes=nodes, seconds=seconds)
    if outcome.program is not None:
        return outcome.program, "exhaustive search", outcome.describe(ops, len(registers))
    if outcome.stopped is None:
        return program, winner, (f"proven shortest ({where}, exhaustive search, "
                                 f"{outcome.nodes} nodes, found no shorter program)")
    return program, winner, (f"not proven: no program shorter than {outcome.lower} "
                             f"instructions exists ({where}), search bound reached "
                             f"({outcome.stopped}, {outcome.nodes} nodes)")
JOINT_OUTPUTS = 3
"""Filters with more outputs than this skip code generation for the joint decomposition
candidates: searching a DAG of four to ten outputs takes tens of seconds (and with six
registers ends without a program), while the constant-matrix program (`_filter_programs`) was
shorter than that search on every filter of four or more outputs of the scaling study."""

_FILTER_NOTE = (f"not run (more than {JOINT_OUTPUTS} outputs: the joint decomposition is not "
                "searched, the filter's own programs are)")

MATRIX = "shared matrix"
CSE = "shared shifted sums"
REVERSE = "outputs built backwards"
ONE_AT_A_TIME = "outputs one at a time"
LAST_IN_PLACE = "last output in place"


def _joint_program(candidates: dict[str, dict[str, Decomposition]], outputs: dict,
                   registers: tuple[str, ...], input_register: str, ops: str,
                   settings: Settings, deadline: _Deadline, large: bool,
                   ) -> tuple[list[Instr], str, str | None]:
    """The decomposition candidates' best program: on the large path `_best_program`, else the
    monotone portfolio (`kalg.portfolio`: a ladder of register files, op set all also runs
    basic) over the candidates of each op set."""
    if large:
        return _best_program(candidates[ops], registers, input_register, ops, deadline,
                             settings.progress, large=True)
    wide = any(r not in SCAMP5_REGISTERS for r in registers)
    universe = SIMULATED_REGISTERS if wide else SCAMP5_REGISTERS
    budget = portfolio.Budget(tuple(registers), input_register, ops, tuple(sorted(outputs)),
                              universe)
    best = portfolio.best_program(candidates, budget, deadline, settings.progress)
    return best.program, best.candidate, best.stop


def _choose_program(candidates: dict[str, dict[str, Decomposition]], outputs: dict,
                    registers: tuple[str, ...], input_register: str, ops: str,
                    settings: Settings, deadline: _Deadline, large: bool = False,
                    ) -> tuple[list[Instr], str, str | None]:
    """The decomposition candidates' best program (`_best_program`, for up to `JOINT_OUTPUTS`
    outputs) against the filter's own programs (`_filter_programs`): the shortest, its name,
    and why a search stopped early (None: none did). Python's cycle collector is paused
    meanwhile (`codegen.collector_paused`: a third of code generation's time)."""
    with codegen.collector_paused():
        return _choose(candidates, outputs, registers, input_register, ops, settings, deadline,
                       large)


def _choose(candidates: dict[str, dict[str, Decomposition]], outputs: dict,
            registers: tuple[str, ...], input_register: str, ops: str, settings: Settings,
            deadline: _Deadline, large: bool) -> tuple[list[Instr], str, str | None]:
    found, stop = None, None
    pressure = _no_joint_program(outputs, registers)
    matrix = (codegen.matrix_filter(outputs, registers, input_register, ops)
              if len(outputs) > 1 else None)
    if len(outputs) <= JOINT_OUTPUTS and (
            matrix is None or _joint_may_win(candidates[ops], registers, input_register, ops,
                                             deadline, len(matrix))):
        try:
            program, winner, stop = _joint_program(candidates, outputs, registers,
                                                   input_register, ops, settings, deadline,
                                                   large)
            found = (program, winner)
        except RegisterPressureError as err:
            pressure = err
    program, winner = _filter_programs(found, outputs, registers, input_register, ops,
                                       settings, deadline, matrix)
    if program is None:
        raise pressure
    return program, winner, stop


JOINT_PROBE_SLACK = 2
"""A filter's joint decomposition ladder (`_joint_program`: two op sets, up to six register
files, each candidate screened and the best refined twice; 10-50 s of CPU for two or three
outputs) is run only where a probe - every candidate screened once on the whole register
file - is at most this many instructions longer than the constant-matrix program. On 19
filters of docs/scaling.md's study (18 registers: seeds 0-9 and 100-102, 106-108 with two
or three outputs; 6 registers: seed 3 with three) the ladder's program was at most 3
instructions shorter than its probe (seed 108, two outputs: probe 21, ladder 18, matrix 19),
so a probe more than 2 longer than the matrix program leaves the ladder 4 or more to find to
win. A slack of 1/8 of the matrix program ran it where it cannot win and cost up to 43 s (seed
106, three outputs: probe 31, matrix 28, ladder 29)."""


def _joint_may_win(candidates: dict[str, Decomposition], registers: tuple[str, ...],
                   input_register: str, ops: str, deadline: _Deadline, bound: int) -> bool:
    """Whether the joint ladder is worth running against a program of `bound` instructions
    (`JOINT_PROBE_SLACK`); also where no candidate fits the whole register file in one screen
    (the probe says nothing then). Deterministic: the screen is bounded by counts. The
    candidates are screened fewest live values first, and the first within the slack ends the
    probe."""
    usable = dict(enumerate(dict.fromkeys(portfolio.searchable(candidates).values())))
    fits = False
    for _, key in portfolio.screen_order(usable):
        try:
            program = portfolio.generate_within(usable[key], registers, input_register, ops,
                                                SCREEN, deadline)
        except RegisterPressureError:
            continue
        if len(program) <= bound + JOINT_PROBE_SLACK:
            return True  # the answer whatever the other candidates give: stop here
        fits = True
    return not fits


def _filter_programs(found: tuple[list[Instr], str] | None, outputs: dict,
                     registers: tuple[str, ...], input_register: str, ops: str,
                     settings: Settings, deadline: _Deadline | None = None,
                     matrix: list[Instr] | None = None,
                     ) -> tuple[list[Instr] | None, str | None]:
    """The shortest of `found` (the decomposition candidates' best, if any) and the programs
    built for the filter as a whole: the constant-matrix program over the input divided once
    (`codegen.matrix_filter`), for two or more outputs each output's own compile run one
    after another (`_one_at_a_time`), and for one output per register the program whose last
    output is made in place from the others (`codegen.full_filter`). Ties keep `found`, then
    that order (deterministic). With one output per register and no program at all, the
    RegisterPressureError says why the in-place form has none. `matrix`: the constant-matrix
    program when the caller has built it already."""
    programs = [found] if found is not None else []
    if matrix is None:
        matrix = codegen.matrix_filter(outputs, registers, input_register, ops)
    if matrix is not None:
        programs.append((matrix, MATRIX))
    # shared shifted sums: never shorter in op set all (measured, issue-12-cse): basic only
    if len(outputs) > 1 and ops == "basic" and (
            cse := codegen.cse_filter(outputs, registers, input_register, ops)) is not None:
        programs.append((cse, CSE))
    if len(outputs) > 1 and (
            back := codegen.reverse_filter(outputs, registers, input_register, ops)) is not None:
        programs.append((back, REVERSE))
    bound = min((len(p) for p, _ in programs), default=None)
    if len(outputs) > 1 and (seq := _one_at_a_time(outputs, registers, input_register, ops,
                                                     settings, bound, deadline)) is not None:
        programs.append((seq, ONE_AT_A_TIME))
    why = None
    if len(outputs) > 1 and len(outputs) == len(registers):
        full, why = codegen.full_filter(outputs, registers, input_register, ops)
        if full is not None:
            programs.append((full, LAST_IN_PLACE))
    if not programs:
        if why is not None:
            raise _full_register_file(outputs, registers, why)
        return None, None
    return min(programs, key=lambda p: (len(p[0]), bus_steps(p[0])))


def _full_register_file(outputs: dict, registers: tuple[str, ...],
                        why: str) -> RegisterPressureError:
    return RegisterPressureError(
        f"no program found for {len(outputs)} outputs in {len(registers)} registers "
        f"{' '.join(registers)}: with one output per register, the output written last is "
        "made in its own register once every other holds its output, by instructions that "
        "write only that register; " + why,
        hint="give one more register, or one output fewer (docs/scaling.md, 'One output per "
             "register', has the argument)")


def _no_joint_program(outputs: dict, registers: tuple[str, ...]) -> RegisterPressureError:
    return RegisterPressureError(
        f"no program for the {len(outputs)} output(s) fits in {len(registers)} register(s) "
        f"{' '.join(registers)}",
        hint="every output needs its register, and the outputs need the input divided once "
             "and a register to accumulate in; give more registers or fewer outputs")


def _lower_bound(kernel) -> int:
    """Instructions any program needs for `kernel` from the input: n taps take at least
    (n - 1) / 2 additions (three operands at most), and a halving where a coefficient is not an
    integer (a single tap only a move). A bound for pruning, not an estimate."""
    taps = [c for c in kernel.taps.values() if c != 0]
    adds = (len(taps) - 1 + 1) // 2
    halves = any(Fraction(c).denominator != 1 for c in taps)
    return max(adds + halves, 1)


def _one_at_a_time(outputs: dict, registers: tuple[str, ...], input_register: str, ops: str,
                   settings: Settings, bound: int | None = None,
                   deadline: _Deadline | None = None) -> list[Instr] | None:
    """Each output compiled on its own (its own e-graph and candidates) and the programs run
    one after another, each stage keeping the input and the outputs already made, the output
    in the input's register last (it may overwrite the input); after any stage the outputs
    left may instead be finished by one constant-matrix program in the registers left.
    The register order first (the *sequence of the outputs' own programs* with the registers
    actually free: the filter is never longer than it, where every stage fits); where a stage
    of it did not fit, the heaviest output first too (most coefficient mass: it gets the most
    registers, the light ones are left to the constant-matrix finish; where every stage fits
    the order is not what limits the program, and a second order would double the stages'
    code generation). The shortest program; None if nothing beats `bound`."""
    deadline = deadline or _Deadline(None)
    memo: dict = {}
    if not _may_finish(outputs, registers, input_register, ops, settings, deadline, memo):
        return None
    mass = {r: sum(abs(c) for c in k.taps.values()) for r, k in outputs.items()}
    plain = sorted(outputs, key=lambda r: (r == input_register, registers.index(r)))
    heavy = sorted(outputs, key=lambda r: (r == input_register, -mass[r], registers.index(r)))
    best = None
    for order in (plain, heavy):
        if order is heavy and (heavy == plain or not memo.get("a stage did not fit")):
            break
        limit = min([b for b in (bound, best and len(best)) if b], default=None)
        found = _sequence(outputs, order, registers, input_register, ops, settings, limit,
                          deadline, memo)
        if found is not None and (best is None or len(found) < len(best)):
            best = found
    return best


def _may_finish(outputs: dict, registers: tuple[str, ...], input_register: str, ops: str,
                settings: Settings, deadline: _Deadline, memo: dict) -> bool:
    """False where no sequence can be completed: with one output per register every order
    ends with the input's register as the only one free, so its own stage there (computed
    first, memoised for the sequences) must fit, or a constant-matrix finish must keep the
    last output in place, which needs an output that is a pool value (the input times ±2^j,
    unshifted; `matrix._Builder._kept`). Saves every other stage's compile where neither
    holds (six random outputs on six registers: about 14 s of CPU)."""
    if len(outputs) != len(registers) or input_register not in outputs:
        return True
    key = (input_register, (input_register,))
    memo[key] = _stage(input_register, outputs[input_register], key[1], input_register, ops,
                       settings, deadline, memo)
    return memo[key] is not None or any(_scaled_input(k) for k in outputs.values())


def _scaled_input(kernel) -> bool:
    """Whether `kernel` is the unshifted input times ±2^j (j any integer)."""
    taps = {d: Fraction(c) for d, c in kernel.taps.items() if c != 0}
    if set(taps) != {(0, 0)}:
        return False
    c = abs(taps[(0, 0)])
    return c.numerator & (c.numerator - 1) == 0 and c.denominator & (c.denominator - 1) == 0


def _sequence(outputs: dict, order: list[str], registers: tuple[str, ...], source: str,
              ops: str, settings: Settings, bound: int | None, deadline: _Deadline,
              memo: dict) -> list[Instr] | None:
    """The outputs' own compiles in `order`, each from `source` (kept until the output in its
    register, which must come last if it is one), or finished after any stage by one
    constant-matrix program in the registers left: the shortest of these. None if nothing
    beats `bound` (a stage is not started once the program cannot get shorter than `bound` or
    the best so far, the stages left counted at `_lower_bound`) or no stage fits."""
    program: list[Instr] = []
    best: list[Instr] | None = None
    done: list[str] = []
    for i, reg in enumerate(order):
        free = tuple(r for r in registers if r not in done)
        rest = codegen.matrix_filter({r: outputs[r] for r in order[i:]}, free,
                                     source, ops) if i > 0 else None
        if rest is not None and (bound is None or len(program) + len(rest) < bound) and (
                best is None or len(program) + len(rest) < len(best)):
            best = program + rest
        limit = min([b for b in (bound, best and len(best)) if b], default=None)
        if limit is not None and len(program) + sum(_lower_bound(outputs[r])
                                                    for r in order[i:]) >= limit:
            return best
        key = (reg, free)
        if key not in memo:
            memo[key] = _stage(reg, outputs[reg], free, source, ops, settings, deadline, memo)
        part = memo[key]
        if part is None:
            memo["a stage did not fit"] = True
            return best
        program += part
        done.append(reg)
    if bound is not None and len(program) >= bound:
        return best
    return program if best is None or len(program) <= len(best) else best


def _stage(reg: str, kernel, free: tuple[str, ...], input_register: str, ops: str,
           settings: Settings, deadline: _Deadline, memo: dict | None = None,
           ) -> list[Instr] | None:
    """One output's own compile into `reg` within `free`, keeping the input (unless `reg` is
    the input's register); None if it does not fit. `memo` keeps each output's e-graph
    search for its next stage (it does not depend on the registers)."""
    if deadline.passed():
        return None
    memo = {} if memo is None else memo
    if (reg, "e-graph") not in memo:
        memo[reg, "e-graph"] = optimize({reg: kernel}, _options(ops, settings, deadline))
    optimized = memo[reg, "e-graph"]
    stage = {"e-graph": optimized.decomposition, "e-graph variants": optimized.applied,
             "horner": direct_decomposition({reg: kernel})}
    if (chain := codegen.factor_chain({reg: kernel})) is not None:
        stage["factor chain"] = chain
    keep = () if reg == input_register else ((input_register, 0),)
    stage = {n: Decomposition(d.values, (*d.outputs, *keep)) for n, d in stage.items()}
    try:
        part, _, _ = _best_program(stage, free, input_register, ops, deadline)
    except (RegisterPressureError, ResourceLimitError):
        return None
    return part


def _search_stats(o: Optimized) -> dict[str, object]:
    algebra = o.algebra
    stats: dict[str, object] = {
        "algebra e-graph": (f"{algebra.nodes} e-nodes, {algebra.stop_reason} after "
                            f"{algebra.iterations} iterations" if algebra else "not run"),
        "lowering e-graph": f"{o.enodes} e-nodes in {o.eclasses} e-classes",
        "lowering saturation": (f"{o.saturation.stop_reason} after "
                                f"{o.saturation.iterations} iterations"),
        "extraction": "optimal (ILP)" if o.optimal else "greedy or unproven",
        "estimated cost": round(o.cost, 3),
        "literals": o.literals,
        "seeds": ", ".join(f"{k} {v}" for k, v in sorted(o.analyses.items())),
        "provenance": o.provenance,
    }
    for name, terms in o.variants.items():
        stats[f"best term {name}"] = terms[0] if terms else "none"
    return stats


def _program_stats(program: list[Instr], registers: tuple[str, ...], ops: str) -> dict:
    used = sorted({r for i in program for r in i.registers()})
    return {"instructions": len(program), "bus steps": bus_steps(program),
            "registers": f"{len(used)} of {len(registers)} ({' '.join(used)})", "op set": ops}


def _format_stats(stats: dict[str, object]) -> str:
    return "".join(f"{k}: {v}\n" for k, v in stats.items())


_WIDE_NOTE = ("scamp5_wide: a SIMULATED register file wider than SCAMP-5's A..F; "
              "the program cannot run on the device")


def _header(definition: frontend.Definition, path: str | Path, ops: str,
            registers: tuple[str, ...], inp: str, target_name: str = "scamp5") -> list[str]:
    lines = [f"kernel: {definition.name} (from {Path(path).name})",
             f"produced by: kalg, op set {ops}, registers {' '.join(registers)}, input in {inp}",
             "verified: exactly (symbolic) and numerically (simulated)"]
    lines[2:2] = approximation_lines(definition)
    if target_name == WIDE:
        lines.insert(1, f"target: {_WIDE_NOTE}")
    return lines


def approximation_lines(definition: frontend.Definition) -> list[str]:
    """For each approximated output: the kernel the program computes instead of the one
    written, and the largest coefficient error (the program is exact for the former)."""
    lines = []
    for register in sorted(definition.approx_depth):
        where = f" output {register}" if definition.kind != "kernel" else ""
        if definition.channels:  # a kernel per input
            computes = " + ".join(f"{_rows(k)} * {c}"
                                  for c, k in definition.channels[register].items())
        else:
            computes = _rows(definition.outputs[register])
        error = definition.approx_error.get(register, Fraction(0))
        exact = f"{error} = " if error.denominator <= 10**6 else ""
        lines.append(f"approximated{where}: computes {computes} (depth "
                     f"{definition.approx_depth[register]}), not the kernel written; largest "
                     f"coefficient error {exact}{float(error):.3g}")
    return lines


def _rows(kernel: Kernel) -> str:
    """A kernel on one line, its bounding box north row first: [1/8 1/8 1/8; 1/8 0 1/8; ...]."""
    return "[" + "; ".join(" ".join("." if c is None else str(c) for c in row)
                           for row in kernel.to_rows(centred=False)) + "]"
