"""The pipeline: .kalg text → AST → exact kernels → e-graph → decomposition → verified program.

`compile_file` is the whole compiler, one step per stage; `Settings.emit` stops it early and the
`Result` then holds that stage's artefact as text. Only this module knows the stage order; the
stages are `kalg.targets.scamp5.candidates` (decompositions), `kalg.targets.scamp5.programs` and
`kalg.targets.scamp5.filters` (code generation), the exact searches below, and
`kalg.targets.scamp5.channel_programs` for several inputs.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from fractions import Fraction
from pathlib import Path

import numpy as np

from kalg import effort, frontend
from kalg.algebra.kernel import REAL, Kernel
from kalg.clock import Clock
from kalg.diagnostics import KalgError, KalgSemanticError, UsageError, VerificationError
from kalg.frontend.stages import front_end
from kalg.frontend.target import WIDE
from kalg.results import Result
from kalg.settings import Deadline, Settings, bounded
from kalg.stages import Stage
from kalg.targets.scamp5 import (
    budget,
    channel_programs,
    codegen,
    filters,
    layers,
    portfolio,
    sources,
)
from kalg.targets.scamp5 import candidates as search_stage
from kalg.targets.scamp5.exact import exhaustive as exact
from kalg.targets.scamp5.exact.bounds import describe_bound, lower_bound
from kalg.targets.scamp5.exact.factored import shortest_chain
from kalg.targets.scamp5.exact.kept import kept_program
from kalg.targets.scamp5.fallback import CANDIDATE as DIRECT
from kalg.targets.scamp5.fallback import Fallback, direct_program
from kalg.targets.scamp5.filters import choose_program
from kalg.targets.scamp5.machine.isa import Instr, bus_steps, outside_op_set
from kalg.targets.scamp5.machine.simulator import footprint, verify_numeric, verify_numeric_channels
from kalg.targets.scamp5.machine.symbolic import verify_exact
from kalg.targets.scamp5.machine.text import format_program
from kalg.targets.scamp5.registers import six_registers
from kalg.targets.scamp5.sources import EXHAUSTIVE, FACTORED, GOAL_BAGS, KEPT

__all__ = ["Result", "Settings", "Stage", "compile_file", "compile_text"]


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
    if settings.timeout is not None:  # an import cannot be cut: load egglog before the clock
        from kalg.eqsat import engine

        engine.preload()
    doing = _Doing(settings.progress)
    clock, fallback = Clock(doing), Fallback()
    token = filters.COMPILE_ALONE.set(compile_text)  # a filter's stages may compile a kernel alone
    try:
        return bounded(settings.timeout, doing.stage,
                       lambda: _compile_text(text, path,
                                             dataclasses.replace(settings, progress=doing),
                                             clock, fallback),
                       lambda stage: fallback.answer(stage, settings.timeout))
    finally:
        filters.COMPILE_ALONE.reset(token)


class _Doing:
    """The progress messages passed on, the last one kept: what --timeout's cut interrupted."""

    def __init__(self, progress: Callable[[str], None] | None) -> None:
        self.progress, self.last = progress, ""

    def __call__(self, message: str) -> None:
        self.last = message
        if self.progress is not None:
            self.progress(message)

    def stage(self) -> str:
        return f"'{self.last}'" if self.last else "the front end"


def _compile_text(text: str, path: str, settings: Settings, clock: Clock,
                  fallback: Fallback) -> Result:
    """`compile_text` within its --timeout."""
    deadline = Deadline(settings.timeout)
    checked = front_end(text, path, settings)
    if isinstance(checked, Result):  # a stage of the front end
        return checked
    target, definition = checked.module.target, checked.definition
    input_register = checked.input_register
    ops = settings.ops or target.ops
    registers = settings.registers or target.registers
    target_name = settings.target or target.name
    if definition.pipeline is not None:
        return _compile_pipeline(definition, path, settings, ops, registers, input_register,
                                 target_name, clock)
    # A layer (more outputs than a program holds) and a filter over several inputs have
    # compiles of their own.
    if (own := _own_compile(definition, path, settings, ops, registers, input_register, target,
                            target_name, clock, deadline, fallback)) is not None:
        return own
    _check_compilable(definition, input_register, registers, target_name,
                      from_options=bool(settings.registers or settings.input))
    full, definition, zeros, warnings = filters.without_zeros(definition, settings.warn)
    if (early := _cleared_or_direct(full, definition, zeros, path, ops, registers,
                                    input_register, target_name, warnings, settings,
                                    fallback)) is not None:
        return early
    warnings += _early_warnings(definition, settings.warn)
    clock.lap("front end")
    found = search_stage.search(definition, settings, ops, deadline, clock)
    stats = found.stats
    if settings.emit is Stage.EGRAPH:
        return Result(Stage.EGRAPH, _format_stats(stats), stats, definition=definition,
                      warnings=warnings)
    if settings.emit is Stage.DECOMPOSITION:
        decomposition = found.optimized.decomposition
        return Result(Stage.DECOMPOSITION, str(decomposition) + "\n", stats,
                      definition=definition, decomposition=decomposition, warnings=warnings)
    settings.progress("code generation: the candidates and the filter's own constructions")
    with effort.using(settings.effort) as level:
        program, winner, stop = choose_program(found.candidates, definition.outputs, registers,
                                               input_register, ops, settings, deadline,
                                               found.large)
    decomposition = next((c[winner] for c in found.candidates.values() if winner in c), None)
    if stop:
        warnings.append(stop)
        if settings.warn:
            settings.warn(stop)
    clock.lap("codegen")
    program, winner, proof, proven, bags = _prove(settings, definition.outputs, program,
                                                  winner, registers, input_register, ops,
                                                  deadline)
    if bags is not None:
        stats["goal-bag search"] = bags
    if proof is not None:
        stats["exhaustive search"] = proof
    program, winner, noise = _by_noise(settings, found.candidates.get(ops, {}),
                                       definition.outputs, program, winner, registers,
                                       input_register, ops)
    bound = lower_bound(definition.outputs, registers, input_register, ops, len(program),
                        level.bound_nodes or settings.bound_nodes, proven)
    stats["lower bound"] = bound
    program, definition = filters.cleared(program, zeros), full
    clock.lap("exact searches")
    stats["candidate"] = winner
    stats |= _approximation_stats(definition)
    stats["stop reason"] = stop or (
        f"--timeout {settings.timeout:g} s expired during the search: searches were cut, this "
        "is the best verified program found" if deadline.passed() else
        "searched every candidate")
    stats["provenance"] = sources.provenance(winner, found.provenance)
    # Check once more, numerically, against the reference correlation (scipy-equivalent).
    image = np.random.default_rng(0).uniform(-1, 1, verify_shape(definition.outputs, program))
    verify_numeric(program, definition.outputs, image, input_register)
    clock.lap("verify")
    seconds = {stage: round(s, 3) for stage, s in clock.laps.items()}
    stats |= _program_stats(program, registers, ops) | {"seconds": seconds}
    if target_name == WIDE:
        stats["target"] = _WIDE_NOTE
    header = _header(definition, path, ops, registers, input_register, target_name)
    header += [] if zeros else _length_lines(proof, bound, len(program))
    header.append(writes_line(program, (input_register,)))
    header += noise  # --noise-slack: the chosen program's SNR, also in the statistics
    stats |= {"noise": noise[0].removeprefix("noise: ")} if noise else {}
    return Result(Stage.PROGRAM, format_program(program, header=header), stats, program,
                  definition=definition, decomposition=decomposition, verified=True,
                  warnings=warnings, input_register=input_register)


def _length_lines(proof: str | None, bound: int, length: int) -> list[str]:
    """The header's lines on the program's length: what an exact search proved, if one ran,
    and the lower bound (`exact.bounds`)."""
    lines = [] if proof is None else [f"length: {proof}"]
    return [*lines, f"lower bound: {describe_bound(bound, length)}"]


def _by_noise(settings: Settings, candidates: dict, outputs: dict,
              program: list[Instr], winner: str, registers: tuple[str, ...], inp: str,
              ops: str) -> tuple[list[Instr], str, list[str]]:
    """With --noise-slack N, the quietest program within N instructions of `program`
    (`kalg.targets.scamp5.noise_objective`) and the header line saying so; else `program` as
    it is."""
    if not settings.noise_slack:
        return program, winner, []
    from kalg.targets.scamp5 import noise_objective as quiet

    model = quiet.MODELS[settings.noise_model]()
    best, shortest, compared = quiet.quietest(program, winner, candidates, outputs, registers,
                                              inp, ops, settings.noise_slack, model)
    line = (f"noise: SNR {best.snr_db:.1f} dB under the {settings.noise_model} model (worst "
            f"output), longest chain of {quiet.write_depth(best.program, inp)} writes, the "
            f"quietest of {compared} programs within {settings.noise_slack} instructions of the "
            f"shortest ({len(program)} instructions, SNR {shortest.snr_db:.1f} dB)")
    return best.program, best.name, [line]


def _cleared_result(definition: frontend.Definition, path: str | Path, ops: str,
                    registers: tuple[str, ...], input_register: str, target_name: str,
                    warnings: list[str], emit: Stage) -> Result:
    """The program of a definition whose every output is zero: one `res` each, verified."""
    if emit is not Stage.PROGRAM:
        raise KalgError(f"every output of '{definition.name}' is zero: there is no "
                        f"{emit.value} (its program clears the registers)")
    program = filters.cleared([], tuple(sorted(definition.outputs)))
    verify_exact(program, definition.outputs, input_register)
    image = np.random.default_rng(0).uniform(-1, 1, VERIFY_SHAPE)
    verify_numeric(program, definition.outputs, image, input_register)
    stats = _program_stats(program, registers, ops) | {
        "candidate": sources.CLEARED, "provenance": sources.provenance(sources.CLEARED, {})}
    header = _header(definition, path, ops, registers, input_register, target_name)
    header.append(writes_line(program, (input_register,)))
    return Result(Stage.PROGRAM, format_program(program, header=header), stats, program,
                  definition=definition, verified=True, warnings=warnings,
                  input_register=input_register)


def verify_shape(outputs: dict[str, Kernel] | dict[str, dict[str, Kernel]],
                 program: list[Instr] = ()) -> tuple[int, int]:
    """The random image a program for `outputs` is checked on: at least `VERIFY_SHAPE`, and
    wide enough for an interior of 16 pixels whatever the kernels' reach and however far the
    program reads (its footprint: a program may move values further out than its kernels
    reach; sizing by the kernels alone left a random 31x31 kernel's program no interior, an
    internal limit that was reported as an error in the input)."""
    kernels = [k for v in outputs.values() for k in (v.values() if isinstance(v, dict) else [v])]
    reach = max((k.radius() for k in kernels), default=0)
    reach = max(reach, footprint(program).radius if program else 0)
    side = max(VERIFY_SHAPE[0], 2 * reach + 16)
    return (side, side)


def _compile_channels(definition: frontend.Definition, path: str | Path, emit: Stage, ops: str,
                      registers: tuple[str, ...], target, target_name: str,
                      clock: Clock, settings: Settings, deadline: Deadline) -> Result:
    """A filter over several inputs (`kalg.algebra.channels`): the shortest of the constructions of
    `channel_programs.shortest_program`, each verified exactly on every input, then checked
    numerically on random images."""
    if emit is not Stage.PROGRAM:
        raise KalgError(f"'{definition.name}' reads several inputs: its programs come from "
                        "one e-graph per input channel and constant-matrix programs, so there "
                        "is no single e-graph or decomposition to emit (--emit kernels and "
                        "ast work)")
    for err in definition.unapproximated.values():
        raise err  # SCAMP-5 can only halve: a non-dyadic kernel needs an approx setting
    budget.check_budget(definition, registers, target_name, settings_input=settings.input)
    program, winner = channel_programs.shortest_program(definition, registers, target.inputs,
                                                        ops, settings, deadline, clock)
    clock.lap("codegen")
    rng = np.random.default_rng(0)
    shape = verify_shape(definition.channels, program)
    images = {c: rng.uniform(-1, 1, shape) for c in target.inputs}
    verify_numeric_channels(program, definition.channels, images)
    clock.lap("verify")
    stats = _program_stats(program, registers, ops) | {
        "candidate": winner, "provenance": sources.provenance(winner, {}),
        "inputs": " ".join(target.inputs),
        "seconds": {stage: round(s, 3) for stage, s in clock.laps.items()}}
    header = _header(definition, path, ops, registers, " ".join(target.inputs), target_name)
    header.append(writes_line(program, target.inputs))
    if settings.exhaustive:  # asked for, so say why there is no proof
        header.append("length: not proven (the exhaustive search takes one input and one "
                      "output only)")
    return Result(Stage.PROGRAM, format_program(program, header=header), stats, program,
                  definition=definition, verified=True, input_register=target.inputs[0])


def _own_compile(definition: frontend.Definition, path: str | Path, settings: Settings, ops: str,
                 registers: tuple[str, ...], input_register: str, target, target_name: str,
                 clock: Clock, deadline: Deadline, fallback: Fallback) -> Result | None:
    """A layer's or a filter over several inputs' compile; None for any other definition.
    With --timeout each first makes its fallback (a layer: of direct programs)."""
    # A budget given as an option that misses outputs named as the file's registers is the
    # option's contradiction (a usage error, `budget.check_budget`), not a layer to refuse.
    contradicted = bool(settings.registers) and set(
        definition.channels or definition.outputs) <= set(target.registers)
    if _layer(definition, registers, input_register, settings.split or target.split,
              contradicted):
        direct = dataclasses.replace(settings, direct=True, timeout=None, progress=None)
        fallback.prepare(settings, lambda: _compile_layer(
            definition, path, direct, ops, registers, input_register, target_name, Clock()))
        return _compile_layer(definition, path, settings, ops, registers, input_register,
                              target_name, clock)
    if definition.channels:  # also a layer's group over several inputs
        if settings.emit is Stage.PROGRAM and not definition.unapproximated and (
                answer := fallback.prepare(settings, lambda: _direct_result(
                    definition, definition.channels, (), path, ops, registers, target.inputs,
                    target_name, []))) is not None:
            return answer
        settings.progress("channel filter: each input's e-graph and the constant-matrix programs")
        return _compile_channels(definition, path, settings.emit, ops, registers, target,
                                 target_name, clock, settings, deadline)
    return None


def _cleared_or_direct(full: frontend.Definition, definition: frontend.Definition,
                       zeros: tuple[str, ...], path: str | Path, ops: str,
                       registers: tuple[str, ...], input_register: str, target_name: str,
                       warnings: list[str], settings: Settings,
                       fallback: Fallback) -> Result | None:
    """The result of a definition whose every output is zero; else, with `settings.direct`,
    the direct construction's (`Fallback.prepare`, which with --timeout keeps it as the
    fallback); else None (the searches come next)."""
    if not definition.outputs:
        return _cleared_result(full, path, ops, registers, input_register, target_name,
                               warnings, settings.emit)
    return fallback.prepare(settings, lambda: _direct_result(
        full, {r: {input_register: k} for r, k in definition.outputs.items()}, zeros, path,
        ops, registers, (input_register,), target_name, warnings))


def _direct_result(definition: frontend.Definition, outputs: dict, zeros: tuple[str, ...],
                   path: str | Path, ops: str, registers: tuple[str, ...],
                   inputs: tuple[str, ...], target_name: str,
                   warnings: list[str]) -> Result | None:
    """The direct construction's verified program as a result (`kalg.targets.scamp5.fallback`:
    --timeout's fallback, and each program of a cut layer's); None where it does not apply."""
    if definition.semiring is not REAL:
        return None
    program = direct_program(outputs, registers, inputs, ops, verify_shape)
    if program is None:
        return None
    program = filters.cleared(program, zeros)
    header = _header(definition, path, ops, registers, " ".join(inputs), target_name)
    header.append(writes_line(program, inputs))
    stats = _program_stats(program, registers, ops) | {"candidate": DIRECT}
    stats |= _approximation_stats(definition)
    return Result(Stage.PROGRAM, format_program(program, header=header), stats, program,
                  definition=definition, verified=True, warnings=list(warnings),
                  input_register=inputs[0])


def _layer(definition: frontend.Definition, registers: tuple[str, ...], input_register: str,
           split: str | None, contradicted: bool = False) -> bool:
    """Whether `definition` compiles as a layer (`kalg.targets.scamp5.layers`); a filter with
    more outputs than one program holds is an error without a split (unless the budget
    `contradicted` the file: then the budget's own usage error says so)."""
    if definition.kind != "filter" or (split is None and contradicted):
        return False
    channels = bool(definition.channels)
    inputs = definition.inputs if channels else (input_register,)
    count = len(definition.channels or definition.outputs)
    if not layers.is_layer(count, registers, inputs, channels, split):
        return False
    if split is None:
        room = layers.capacity(registers, inputs, channels)
        raise KalgSemanticError(
            f"'{definition.name}' has {count} outputs, more than one program holds: "
            f"{room} on the registers {' '.join(registers)}"
            + (f" besides its inputs {' '.join(inputs)}" if channels else ""),
            definition.span,
            hint="compile it as a layer, a sequence of programs read out in turn: "
                 "--split auto (or 'split: auto' in the target block, split='auto' in "
                 "kalg.compile); or, in simulation only, --target scamp5_wide --registers "
                 f"A..{chr(ord('A') + count - 1 + (len(inputs) if channels else 0))}")
    return True


def _compile_layer(definition: frontend.Definition, path: str | Path, settings: Settings,
                   ops: str, registers: tuple[str, ...], input_register: str,
                   target_name: str, clock: Clock) -> Result:
    """A layer: its groups' programs (each compiled by this pipeline, so verified) in
    sequence, the sequence verified as a whole (`kalg.targets.scamp5.layers.compile_layer`)."""
    if settings.emit is not Stage.PROGRAM:
        raise KalgError(f"'{definition.name}' is a layer, a sequence of programs, one per group "
                        "of outputs: there is no single e-graph or decomposition to emit "
                        "(--emit kernels and ast work)")
    if definition.semiring is not REAL:
        _check_compilable(definition, input_register, registers, target_name)
    for err in definition.unapproximated.values():
        raise err  # SCAMP-5 can only halve: a non-dyadic kernel needs an approx setting
    channels = bool(definition.channels)
    inputs = definition.inputs if channels else (input_register,)
    spec = layers.LayerSpec(definition.name, dict(definition.outputs),
                            {o: dict(p) for o, p in definition.channels.items()}, inputs,
                            registers, ops, target_name)
    group = dataclasses.replace(settings, name=None, registers=None, input=None, ops=None,
                                target=target_name, split=None, progress=None)
    deadline, made = Deadline(settings.timeout), []  # --timeout bounds the whole layer

    def compile_group(text: str, _inputs: tuple[str, ...]) -> Result:
        made.append(text)
        if settings.progress:
            settings.progress(f"layer: program {len(made)}")
        left = None if deadline.end is None else max(deadline.left(), 0.1)
        return compile_text(text, f"{path} (a group)", dataclasses.replace(group, timeout=left))

    size = layers.group_size(registers, inputs, settings.split)
    program, readouts, warnings, kept = layers.compile_layer(spec, size, compile_group,
                                                              verify_shape)
    clock.lap("layer")
    stats = _program_stats(program, registers, ops) | {
        "programs": len(readouts), "candidate": sources.LAYER,
        "provenance": sources.provenance(sources.LAYER, {}),
        "seconds": {stage: round(s, 3) for stage, s in clock.laps.items()}}
    header = _header(definition, path, ops, registers, " ".join(inputs), target_name)
    header[0] = (f"layer: {definition.name} (from {Path(path).name}), {len(readouts)} programs "
                 f"read out in turn, {len(program)} instructions and {bus_steps(program)} bus "
                 "steps in all")
    header[-1] = ("verified: each program exactly (symbolic) and numerically (simulated), and "
                  "the sequence replayed from the input, each readout against its kernels")
    text = layers.layer_text(header, program, readouts, kept, writes_line)
    return Result(Stage.PROGRAM, text, stats, program, definition=definition, verified=True,
                  warnings=warnings,
                  input_register=inputs[0], readouts=readouts, kept=kept)


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
    budget.check_budget(definition, registers, target_name, input_register, from_options)
    for register, kernel in sorted(definition.outputs.items()):
        _check_output(definition, register, kernel)


def _check_output(definition: frontend.Definition, register: str, kernel: Kernel) -> None:
    where = f"'{definition.name}'" + (f" output {register}" if definition.kind != "kernel" else "")
    if not kernel.trimmed().entries:
        if (depth := definition.approx_depth.get(register)) is not None:
            raise KalgSemanticError(
                f"{where} approximated at depth {depth} is the zero kernel: every coefficient "
                f"rounds to 0 (largest error {definition.approx_error[register]})",
                definition.span, "raise the approximation's depth (or give a max_error)")
        if definition.kind == "kernel":
            raise KalgSemanticError(f"{where} is the zero kernel: there is nothing to compute",
                                    definition.span)
        return  # a filter's output zero as written: its register is cleared (`filters.cleared`)
    if kernel.radius() > MAX_REACH:
        raise KalgSemanticError(
            f"{where} reaches {kernel.radius()} pixels from its centre: on SCAMP-5's 256x256 "
            f"array no output pixel would see all its inputs (at most {MAX_REACH})",
            definition.span)


def _compile_pipeline(definition: frontend.Definition, path: str | Path, settings: Settings,
                      ops: str, registers: tuple[str, ...], input_register: str,
                      target_name: str, clock: Clock) -> Result:
    """A pipeline: located errors at the first stage SCAMP-5 cannot run, else one program of
    linear blocks (each compiled by this pipeline, so verified) and `abs`, verified as a whole
    against the pipeline (`kalg.targets.scamp5.graph_program`)."""
    from kalg.targets.scamp5.dataflow import check_scamp5
    from kalg.targets.scamp5.graph_program import lower_graph

    graph = definition.pipeline
    check_scamp5(graph, target_name, definition.span)
    if settings.emit is not Stage.PROGRAM:
        raise KalgError(f"pipeline {graph.name!r} compiles as linear blocks and abs: there is no "
                        "single e-graph or decomposition to emit (--emit kernels and ast work)")
    if input_register not in registers:
        raise UsageError(f"the input register {input_register} must be in the register budget "
                         f"{' '.join(registers)}")
    block = dataclasses.replace(settings, name=None, registers=None, input=None, ops=None,
                                target=target_name, split=None, progress=None)
    deadline = Deadline(settings.timeout)

    def compile_block(text: str) -> list[Instr]:
        left = None if deadline.end is None else max(deadline.left(), 0.1)
        made = compile_text(text, f"{path} (a block)", dataclasses.replace(block, timeout=left))
        return list(made.program)

    lowered = lower_graph(graph, registers, input_register, ops, target_name, compile_block,
                          definition.span)
    clock.lap("pipeline")
    program = lowered.program
    stats = _program_stats(program, registers, ops) | {
        "candidate": "pipeline", "outputs": dict(lowered.outputs), "blocks": lowered.blocks,
        "abs": lowered.absolutes,
        "seconds": {stage: round(s, 3) for stage, s in clock.laps.items()}}
    where = ", ".join(f"{n} in {r}" for n, r in lowered.outputs.items())
    header = [f"pipeline: {graph.name} (from {Path(path).name}), {lowered.blocks} linear "
              f"blocks and {lowered.absolutes} abs",
              f"produced by: kalg, op set {ops}, registers {' '.join(registers)}, input in "
              f"{input_register}",
              "verified: exactly (symbolic over the input and each abs taken) and in the "
              "simulator against the pipeline's reference on integer images (interior PEs)",
              f"outputs: {where}", writes_line(program, (input_register,))]
    if target_name == WIDE:
        header.insert(1, f"target: {_WIDE_NOTE}")
    return Result(Stage.PROGRAM, format_program(program, header=header), stats, program,
                  definition=definition, verified=True, input_register=input_register)


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


EXACT_UP_TO = portfolio.PROVE_UP_TO  # one number: the ladder's proof is this search's
"""Without --exhaustive, kalg still runs the exact search when its program has at most this
many instructions (one output; on six of the registers): every shorter length is then searched
in about 12000 nodes (0.2 to 0.3 s of CPU for 5-instruction programs), so such programs are
proven shortest or replaced."""


EXACT_NODES = portfolio.PROOF_NODES  # likewise
"""Node budget of that default search (deterministic; depth 4 takes 10000 to 12000)."""


def _prove(settings: Settings, outputs: dict, program: list[Instr], winner: str,
           registers: tuple[str, ...], inp: str, ops: str,
           deadline: Deadline) -> tuple[list[Instr], str, str | None, int, str | None]:
    """The exact search when asked for (--exhaustive) or cheap (`EXACT_UP_TO`); proof None
    when it did not run. The fourth item is the length below which that search proved no
    program exists on `registers` (0: nothing proven on them; a search on six of more
    registers proves nothing about the whole budget). Last, the goal-bag search's program
    where it is shorter, and what that search found, in words (None where it does not apply;
    it is not run where the exact search proved the program shortest on the six registers it
    would search: nothing shorter exists for it to find (about a third of a short kernel's
    search time)."""
    six = six_registers(registers, inp, outputs)
    found = _proved(settings, outputs, program, winner, registers, six, inp, ops, deadline)
    nodes = effort.LEVELS[settings.effort].goal_bags
    if ops != "all" or len(six) != 6:
        return (*found, None)
    if found[3] >= len(found[0]):  # proven shortest on these six: the search cannot win
        return (*found, f"not run: the other searches' best, {len(found[0])} instructions, "
                        "is proven shortest")
    bags = codegen.goalbag_filter(outputs, six, inp, nodes)
    words = (f"{'no program' if bags is None else f'{len(bags)} instructions'} within "
             f"{nodes} bags made; the other searches' best: {len(found[0])}")
    if bags is not None and len(bags) < len(found[0]):
        return bags, GOAL_BAGS, found[2], found[3], words
    return (*found, words)


def _proved(settings: Settings, outputs: dict, program: list[Instr], winner: str,
            registers: tuple[str, ...], six: tuple[str, ...], inp: str, ops: str,
            deadline: Deadline) -> tuple[list[Instr], str, str | None, int]:
    """`_prove` but for the goal-bag search, which runs last, so that it only ever replaces a
    program by a shorter one: the proof and the bound stay true of the shorter one."""
    program, winner = _by_factors(outputs, program, winner, six, inp, ops)
    program, winner = _by_kept_value(outputs, program, winner, six, inp, ops)
    seconds = None if deadline.end is None else max(deadline.left(), 0.1)
    if settings.exhaustive:
        return _exhaustive(outputs, program, winner, registers, inp, ops,
                           settings.exhaustive_nodes, seconds)
    # The default searches run on six of the registers whatever the budget, so that a larger
    # budget is never longer for want of them (their proof then speaks of those six).
    if not _cheap_to_prove(program, outputs):
        found = _shorter_by_search(outputs, program, winner, six, inp, ops, seconds)
    else:
        found = _exhaustive(outputs, program, winner, six, inp, ops, EXACT_NODES, seconds)
    return (*found[:3], found[3] if six == registers else 0)




FACTOR_NODES = 10_000
"""Node budget of the exact searches for a small kernel's factors (`codegen.factored`), all
together: a count, so the result does not depend on the machine, of at most about half a second
of CPU, a fraction of a small kernel's compile."""


FACTOR_TAPS = 25
"""The factors' programs are searched only for kernels of at most this many taps (5x5): the
exact search is for small factors, and factoring large kernels whole is slow."""


def _by_factors(outputs: dict, program: list[Instr], winner: str, registers: tuple[str, ...],
                inp: str, ops: str) -> tuple[list[Instr], str]:
    """`program`, or a shorter one made of the shortest programs of the kernel's factors."""
    if len(outputs) != 1:
        return program, winner
    ((out, kernel),) = outputs.items()
    if len(kernel.trimmed()) > FACTOR_TAPS:
        return program, winner
    found = shortest_chain(kernel, registers=registers, input_register=inp, output=out,
                           op_set=ops, shorter_than=len(program), nodes=FACTOR_NODES)
    return (program, winner) if found is None else (found, FACTORED)




KEPT_LENGTHS = (6, 7)
"""Programs of these lengths also meet the family of programs that keep a value of their first
instruction to the last (`codegen.kept`); shorter ones are searched whole by the exact search
(`EXACT_UP_TO`), longer ones would need middles too long to search by default."""


KEPT_NODES = 30_000
"""Node budget of those searches, all together: a count, so the result does not depend on the
machine, of at most about 0.4 s of CPU, a fraction of a small kernel's compile."""


KEPT_INPUT_NODES = 150_000
"""Node budget of the same family's searches with the input itself kept (no first
instruction; `codegen.kept`), after those: deterministic, at most about 0.7 s of CPU. A
6-instruction program's middles (at most 4 instructions) take about 3000 nodes each to the
end, so all are searched."""


KEPT_INPUT_SEARCH = 60_000
"""Node cap of each of those searches. A 7-instruction program's middles (5 instructions) take
hundreds of thousands of nodes to search to the end, but the guided order tries the likeliest
first, so one that exists is found early; a search that has found nothing within a tenth of the
full search is given up (a count: the result does not depend on the machine)."""


def _by_kept_value(outputs: dict, program: list[Instr], winner: str,
                   registers: tuple[str, ...], inp: str, ops: str) -> tuple[list[Instr], str]:
    """`program`, or a shorter one whose first instruction makes a value its last reads (or
    that keeps the input itself to its last instruction)."""
    if len(outputs) != 1 or len(program) not in KEPT_LENGTHS:
        return program, winner
    ((out, kernel),) = outputs.items()
    found = kept_program(kernel, registers=registers, input_register=inp, output=out,
                         op_set=ops, shorter_than=len(program), nodes=KEPT_NODES,
                         input_nodes=KEPT_INPUT_NODES, input_search=KEPT_INPUT_SEARCH)
    return (program, winner) if found is None else (found, KEPT)


FIND_LENGTH = 6
"""Without --exhaustive, a program of this many instructions (one output; on six of the
registers) also gets the exact search for a shorter one, within `FIND_NODES`: not a proof
(the budget rarely exhausts length 5), only programs it finds cheaply."""


FIND_NODES = 100_000
"""Node budget of that search: a count, so the result does not depend on the machine, of about 0.3
s of CPU on an idle core; a longer search is what `--exhaustive` is for."""


def _shorter_by_search(outputs: dict, program: list[Instr], winner: str,
                       registers: tuple[str, ...], inp: str, ops: str,
                       seconds: float | None) -> tuple[list[Instr], str, str | None, int]:
    """`program` with proof None, or, for a program of `FIND_LENGTH` instructions, the
    shorter program the bounded exact search found and what it proved; and the length below
    which no program exists (`_exhaustive`; 0 when it did not run)."""
    if len(program) != FIND_LENGTH or len(outputs) != 1:
        return program, winner, None, 0
    found, found_winner, proof, lower = _exhaustive(outputs, program, winner, registers, inp,
                                                    ops, FIND_NODES, seconds)
    if len(found) < len(program):
        return found, found_winner, proof, lower
    return program, winner, None, lower


def _cheap_to_prove(program: list[Instr], outputs: dict) -> bool:
    return len(program) <= EXACT_UP_TO and len(outputs) == 1


def _exhaustive(outputs: dict, program: list[Instr], winner: str, registers: tuple[str, ...],
                inp: str, ops: str, nodes: int,
                seconds: float | None = None) -> tuple[list[Instr], str, str, int]:
    """The exact search for a program shorter than `program`: the shorter program if one was
    found, in words what was proven about the length (for the program header), and the
    length below which no program exists on `registers` (0: nothing proven)."""
    where = f"op set {ops}, {len(registers)} registers"
    if len(outputs) != 1:
        return program, winner, "not proven (the exhaustive search takes one output only)", 0
    ((out, kernel),) = outputs.items()
    # The ladder's top rung may have run this very search (`portfolio.remembered`).
    outcome = (seconds is None and portfolio.remembered(
        kernel, registers, inp, out, ops, len(program) - 1, nodes)) or exact.shortest_program(
        kernel, registers=registers, input_register=inp, output=out, op_set=ops,
        max_length=len(program) - 1, nodes=nodes, seconds=seconds)
    if outcome.program is not None:
        return (outcome.program, EXHAUSTIVE, outcome.describe(ops, len(registers)),
                outcome.lower)
    if outcome.stopped is None:
        return program, winner, (f"proven shortest ({where}, exhaustive search, "
                                 f"{outcome.nodes} nodes, found no shorter program)"), \
            len(program)
    return program, winner, (f"not proven: no program shorter than {outcome.lower} "
                             f"instructions exists ({where}), search bound reached "
                             f"({outcome.stopped}, {outcome.nodes} nodes)"), outcome.lower


def _program_stats(program: list[Instr], registers: tuple[str, ...], ops: str) -> dict:
    """The program's statistics, among them the op set it is claimed to be in; that claim is
    checked here (VerificationError: a kalg bug, every construction keeps to its op set)."""
    if (outside := outside_op_set(program, ops)) is not None:
        raise VerificationError(f"{outside}: not in op set '{ops}'",
                                program_text="\n".join(map(str, program)))
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


def _approximation_stats(definition: frontend.Definition) -> dict[str, object]:
    """{"approximation": output → its errors (`approx.ApproximationReport.as_dict`)} where an
    output was approximated, else {}."""
    approximated = definition.approximation()
    return {"approximation": {r: a.as_dict() for r, a in approximated.items()}} if approximated \
        else {}


def writes_line(program: list[Instr], inputs: tuple[str, ...]) -> str:
    """The header line saying which registers the program writes (what a caller loses) and
    whether it overwrites its input(s), and where first."""
    written = sorted({r for i in program for r in i.writes()})
    firsts = [f"{r} by instruction {n}" for r in inputs
              if (n := next((k for k, i in enumerate(program, 1) if r in i.writes()), None))]
    said = (f"overwrites the input: {', '.join(firsts)}" if firsts
            else f"the input in {' '.join(inputs)} is kept")
    return f"writes: {' '.join(written) or 'nothing'} ({said})"


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
        measured = definition.approximation()[register].describe()
        lines.append(f"approximated{where}: computes {computes} (depth "
                     f"{definition.approx_depth[register]}), not the kernel written; largest "
                     f"coefficient error {exact}{float(error):.3g}, {measured}")
    return lines


def _rows(kernel: Kernel) -> str:
    """A kernel on one line, its bounding box north row first: [1/8 1/8 1/8; 1/8 0 1/8; ...]."""
    return "[" + "; ".join(" ".join("." if c is None else str(c) for c in row)
                           for row in kernel.to_rows(centred=False)) + "]"
