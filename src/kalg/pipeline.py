"""The pipeline: .kalg text → AST → exact kernels → e-graph → decomposition → verified program.

`compile_file` is the whole compiler, one step per stage; `Settings.emit` stops it early and the
`Result` then holds that stage's artefact as text. Only this module knows the stage order.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path

import numpy as np

from kalg import codegen, frontend
from kalg.clock import Clock
from kalg.decomp import Decomposition
from kalg.diagnostics import KalgError, KalgSemanticError, RegisterPressureError
from kalg.eqsat import engine
from kalg.eqsat.optimize import Optimized, Options, direct_decomposition, optimize
from kalg.frontend.ast import dump
from kalg.frontend.report import format_definition
from kalg.frontend.target import WIDE
from kalg.kernel import REAL
from kalg.scamp5.isa import REGISTERS as SCAMP5_REGISTERS
from kalg.scamp5.isa import SIMULATED_REGISTERS, Instr, bus_steps
from kalg.scamp5.simulator import verify_numeric
from kalg.scamp5.text import format_program


class Stage(StrEnum):
    AST = "ast"
    KERNELS = "kernels"
    EGRAPH = "egraph"
    DECOMPOSITION = "decomposition"
    PROGRAM = "program"


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
    progress: Callable[[str], None] | None = None


@dataclass
class Result:
    stage: Stage
    text: str
    stats: dict[str, object] = field(default_factory=dict)
    program: list[Instr] = field(default_factory=list)


VERIFY_SHAPE = (48, 48)
"""Size of the random image every program is simulated on before it is printed."""


def compile_file(path: str | Path, settings: Settings = Settings()) -> Result:
    """Compile the definition `settings.name` (default: the file's last) of the .kalg file."""
    clock = Clock(settings.progress)
    text = frontend.read_source(path)
    # Parse first, so syntax errors are reported before any meaning is computed.
    tree = frontend.parse(text, str(path))
    if settings.emit is Stage.AST:
        return Result(Stage.AST, dump(tree) + "\n")
    # Evaluate every definition exactly; semantic errors are located in the file.
    module = frontend.check(tree)
    definition = module.definition(settings.name)
    if settings.emit is Stage.KERNELS:
        return Result(Stage.KERNELS, format_definition(definition))
    target = module.target
    ops = settings.ops or target.ops
    registers = settings.registers or target.registers
    target_name = settings.target or target.name
    _check_compilable(definition, target.input, registers, target_name)
    clock.lap("front end")
    # Search the algebra: seeded e-graph, bounded saturation, DAG-cost extraction.
    optimized = optimize(definition.outputs, _options(ops, settings))
    clock.lap("optimize")
    stats = _search_stats(optimized)
    if settings.emit is Stage.EGRAPH:
        return Result(Stage.EGRAPH, _format_stats(stats), stats)
    if settings.emit is Stage.DECOMPOSITION:
        return Result(Stage.DECOMPOSITION, str(optimized.decomposition) + "\n", stats)
    # Generate code for every candidate decomposition; the shortest verified program wins.
    candidates = {"e-graph": optimized.decomposition,
                  "e-graph variants": optimized.applied,
                  "horner": direct_decomposition(definition.outputs)}
    if (chain := codegen.factor_chain(definition.outputs)) is not None:
        candidates["factor chain"] = chain
    program, winner = _best_program(candidates, registers, target.input, ops)
    stats["candidate"] = winner
    stats["provenance"] = {"e-graph": optimized.provenance,
                           "e-graph variants": optimized.applied_provenance,
                           "horner": ["digit planes (Horner), no e-graph"],
                           "factor chain": ["integer factors applied in turn, no e-graph"],
                           }.get(winner, [winner])
    clock.lap("codegen")
    # Check once more, numerically, against the reference correlation (scipy-equivalent).
    image = np.random.default_rng(0).uniform(-1, 1, VERIFY_SHAPE)
    verify_numeric(program, definition.outputs, image, target.input)
    clock.lap("verify")
    seconds = {stage: round(s, 3) for stage, s in clock.laps.items()}
    stats |= _program_stats(program, registers, ops) | {"seconds": seconds}
    if target_name == WIDE:
        stats["target"] = _WIDE_NOTE
    header = _header(definition.name, path, ops, registers, target.input, target_name)
    return Result(Stage.PROGRAM, format_program(program, header=header), stats, program)


def _check_compilable(definition: frontend.Definition, input_register: str,
                      registers: tuple[str, ...], target_name: str = "scamp5") -> None:
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
    missing = sorted(set(definition.outputs) - set(registers)) + (
        [input_register] if input_register not in registers else [])
    if missing:
        raise KalgError(f"register(s) {', '.join(missing)} are not in the register budget "
                        f"{' '.join(registers)}")


def _options(ops: str, settings: Settings) -> Options:
    limits = engine.Limits(nodes=settings.node_limit, seconds=settings.time_limit)
    return Options(op_set=ops, limits=limits, extraction_seconds=3 * settings.time_limit)


SCREEN = codegen.QUICK
"""Code generation limits every candidate gets first (a fraction of a second each)."""

REFINE = codegen.Limits(expansions=1000, total_expansions=2000)
"""Limits for the most promising candidates after screening: a wider search, about a second."""

MAX_VALUES = 400
"""Candidates with more live values than this are not given to the code generator: its search
state grows with them (a 1600-value greedy extraction of a 13x13 Gaussian exhausts memory)."""

REFINED = 1
"""How many screened candidates are searched again with `REFINE`... Over both op sets of the
benchmark, refining the runner-up too (2, with margin 3, the earlier setting) never changed a
program once the best is also searched with `REFINE_NARROW`; it cost a refine per kernel."""

REFINE_MARGIN = 0
"""...of those at most this many instructions longer than the best screened program."""

REFINE_NARROW = codegen.Limits(expansions=700, total_expansions=1400, in_sequence=False)
"""A second budget the best screened candidate is also searched with. The beam search is not
monotonic in its budget: a search cut off earlier keeps different states, and its program is
sometimes shorter than the wider search's (never worse overall: the shortest program wins).
The outputs-in-sequence program is left to `REFINE`, which already compares it."""


def _best_program(candidates: dict[str, Decomposition], registers: tuple[str, ...],
                  input_register: str, ops: str) -> tuple[list[Instr], str]:
    """The shortest program (then fewest bus steps) over all candidates and searches, and the
    name of the candidate it came from. Ties keep the earlier candidate (deterministic)."""
    found: list[tuple[tuple[int, int, int], str, list[Instr]]] = []
    pressure: RegisterPressureError | None = None

    def attempt(name: str, order: int, limits: codegen.Limits) -> None:
        nonlocal pressure
        try:
            program = codegen.generate(usable[name], registers, input_register, ops, limits)
        except RegisterPressureError as err:
            pressure = err
            return
        found.append(((len(program), bus_steps(program), order), name, program))

    usable = {name: d for name, d in candidates.items() if len(d.live()) <= MAX_VALUES}
    if not usable:
        raise KalgError(f"every candidate decomposition has over {MAX_VALUES} values: the kernel "
                        "is too large for the code generator; approximate or split it")
    for order, name in enumerate(usable):
        attempt(name, order, SCREEN)
    screened = sorted(found)
    for (length, _, order), name, _ in screened[:REFINED]:
        if length <= screened[0][0][0] + REFINE_MARGIN:
            attempt(name, order, REFINE)
    if screened:
        (_, _, order), name, _ = screened[0]
        attempt(name, order, REFINE_NARROW)
    if not found:
        assert pressure is not None
        raise pressure
    _, winner, best = min(found, key=lambda f: f[0])
    return best, winner


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


def _header(name: str, path: str | Path, ops: str, registers: tuple[str, ...],
            inp: str, target_name: str = "scamp5") -> list[str]:
    lines = [f"kernel: {name} (from {Path(path).name})",
             f"produced by: kalg, op set {ops}, registers {' '.join(registers)}, input in {inp}",
             "verified: exactly (symbolic) and numerically (simulated)"]
    if target_name == WIDE:
        lines.insert(1, f"target: {_WIDE_NOTE}")
    return lines

