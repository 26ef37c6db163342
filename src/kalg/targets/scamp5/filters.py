"""A filter's program: the decomposition candidates' best against the programs built for the
filter as a whole (`choose_program`).

For several outputs those are the constant-matrix program over the input divided once, the
shared shifted sums and the outputs built backwards (op set basic), each output's own compile
one after another, and with one output per register the program whose last output is made in
place from the others. The shortest wins; ties keep the earlier (deterministic).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from contextvars import ContextVar
from fractions import Fraction
from typing import Any

from kalg import effort
from kalg.algebra.decomp import Decomposition
from kalg.algebra.kernel import Kernel
from kalg.diagnostics import KalgError, RegisterPressureError, ResourceLimitError
from kalg.settings import Deadline, Settings
from kalg.targets.scamp5 import codegen, portfolio
from kalg.targets.scamp5.candidates import JOINT_OUTPUTS, search_options
from kalg.targets.scamp5.layers import kernel_text
from kalg.targets.scamp5.machine.isa import REGISTERS as SCAMP5_REGISTERS
from kalg.targets.scamp5.machine.isa import SIMULATED_REGISTERS, Instr, Res, bus_steps
from kalg.targets.scamp5.optimize import optimize
from kalg.targets.scamp5.programs import SCREEN, best_program
from kalg.targets.scamp5.registers import six_registers
from kalg.targets.scamp5.sources import (
    COMMON,
    CSE,
    EGRAPH,
    LAST_IN_PLACE,
    MATRIX,
    ONE_AT_A_TIME,
    REVERSE,
    STAGE,
    assemble,
)


def _joint_program(candidates: dict[str, dict[str, Decomposition]], outputs: dict,
                   registers: tuple[str, ...], input_register: str, ops: str,
                   settings: Settings, deadline: Deadline, large: bool,
                   ) -> tuple[list[Instr], str, str | None]:
    """The decomposition candidates' best program: on the large path `best_program`, else the
    monotone portfolio (`kalg.targets.scamp5.portfolio`: a ladder of register files, op set all
    also runs basic) over the candidates of each op set."""
    if large:
        return best_program(candidates[ops], registers, input_register, ops, deadline,
                             settings.progress, large=True)
    wide = any(r not in SCAMP5_REGISTERS for r in registers)
    universe = SIMULATED_REGISTERS if wide else SCAMP5_REGISTERS
    budget = portfolio.Resources(tuple(registers), input_register, ops, tuple(sorted(outputs)),
                              universe)
    best = portfolio.best_on_ladder(candidates, budget, deadline, settings.progress)
    return best.program, best.candidate, best.stop


def choose_program(candidates: dict[str, dict[str, Decomposition]], outputs: dict,
                    registers: tuple[str, ...], input_register: str, ops: str,
                    settings: Settings, deadline: Deadline, large: bool = False,
                    ) -> tuple[list[Instr], str, str | None]:
    """The decomposition candidates' best program (`best_program`, for up to `JOINT_OUTPUTS`
    outputs) against the filter's own programs (`_filter_programs`): the shortest, its name,
    and why a search stopped early (None: none did). Python's cycle collector is paused
    meanwhile (`codegen.collector_paused`: a third of code generation's time)."""
    with codegen.collector_paused():
        return _choose(candidates, outputs, registers, input_register, ops, settings, deadline,
                       large)


def _choose(candidates: dict[str, dict[str, Decomposition]], outputs: dict,
            registers: tuple[str, ...], input_register: str, ops: str, settings: Settings,
            deadline: Deadline, large: bool) -> tuple[list[Instr], str, str | None]:
    found, stop = None, None
    pressure: KalgError = _no_joint_program(outputs, registers)
    single = len(outputs) == 1  # a large kernel of one output: probed first
    matrix = codegen.matrix_filter(outputs, registers, input_register, ops)
    try:  # a kernel too large for the code generator still gets the constant-matrix program
        searchable = [portfolio.searchable(c) for c in candidates.values()]
    except KalgError as err:
        searchable, pressure = [], err
    if searchable and len(outputs) <= JOINT_OUTPUTS and (
            matrix is None
            or (portfolio.search_may_win(candidates, outputs, registers, input_register,
                                         len(matrix), deadline) if single
                else _joint_may_win(candidates[ops], registers, input_register, ops, deadline,
                                    len(matrix)))):
        try:
            program, winner, stop = _joint_program(candidates, outputs, registers,
                                                   input_register, ops, settings, deadline,
                                                   large)
            found = (program, winner)
        except RegisterPressureError as err:
            pressure = err
        except MemoryError:  # the search's, within KALG_MEMORY_MIB (dense kernels of many taps)
            pressure = ResourceLimitError(MEMORY)
            stop = f"{MEMORY}: the program is the best of the filter's own constructions"
        except ResourceLimitError as err:  # --timeout before any program: the filter's own
            pressure, stop = err, f"{err}: the program is the best of the filter's own " \
                                  "constructions"
    program, winner = _filter_programs(found, outputs, registers, input_register, ops,
                                       settings, deadline, matrix)
    if program is None:
        raise pressure
    return program, winner, stop


MEMORY = ("the code generator's search over the candidate decompositions ran out of memory "
          "(KALG_MEMORY_MIB)")


JOINT_PROBE_SLACK = 2
"""A filter's joint decomposition ladder (`_joint_program`: two op sets, up to six register files,
each candidate screened and the best refined twice; tens of seconds of CPU for two or three
outputs) is run only where a probe - every candidate screened once on the whole register file -
is at most this many instructions longer than the constant-matrix program. Refining gains a few
instructions over screening, not many: a probe far behind the matrix program leaves the ladder
nothing to win, and the slack is a count, so whether the ladder runs does not depend on the
machine."""


def _joint_may_win(candidates: dict[str, Decomposition], registers: tuple[str, ...],
                   input_register: str, ops: str, deadline: Deadline, bound: int) -> bool:
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
                     settings: Settings, deadline: Deadline | None = None,
                     matrix: list[Instr] | None = None,
                     ) -> tuple[list[Instr] | None, str | None]:
    """The shortest of `found` (the decomposition candidates' best, if any) and the programs
    built for the filter as a whole: the constant-matrix program over the input divided once
    (`codegen.matrix_filter`), for two or more outputs each output's own compile run one
    after another (`one_at_a_time`), and for one output per register the program whose last
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
    if len(outputs) > 1 and (seq := one_at_a_time(outputs, registers, input_register, ops,
                                                    settings, bound, deadline)) is not None:
        programs.append((seq, ONE_AT_A_TIME))
    why = None
    if len(outputs) > 1 and len(outputs) == len(registers):
        full, why = codegen.full_filter(outputs, registers, input_register, ops)
        if full is not None:
            programs.append((full, LAST_IN_PLACE))
    bound = min((len(p) for p, _ in programs), default=None)
    if (common := common_parts(outputs, registers, input_register, ops, bound,
                               deadline or Deadline(None))) is not None:
        programs.append(common)
    if not programs:
        if why is not None:
            raise _full_register_file(outputs, registers, why)
        return None, None
    return min(programs, key=lambda p: (len(p[0]), bus_steps(p[0])))


def common_parts(outputs: dict, registers: tuple[str, ...], input_register: str, ops: str,
                 bound: int | None, deadline: Deadline,
                 ) -> tuple[list[Instr], str] | None:
    """The shortest program of the filter's common-part decompositions (`sources.COMMON`: a
    sub-kernel common to several outputs made once) and its candidate's name, where it is
    shorter than `bound` (None: any program); None otherwise, or where the filter has none.
    Each candidate is screened once (`SCREEN`, a count: deterministic), bounded by the best
    so far (ties keep the earlier); the one that beats `bound` is searched again, wider
    (`_refined`; the portfolio's refine of every candidate costs seconds and was longer on
    the banks measured, docs/cain-families.md). Searched under op set all on six of the
    registers (`six_registers`, as the goal bags): a larger register budget runs the same
    search, and op set basic none, so neither contract of `portfolio` (more registers, op
    set all: never longer) can break."""
    six = six_registers(registers, input_register, outputs)
    if ops != "all" or len(six) != 6 or len(outputs) < 2:
        return None
    candidates = assemble(outputs, None, COMMON)
    best: tuple[list[Instr], str] | None = None
    for name, decomposition in candidates.items():
        limit = len(best[0]) if best is not None else bound
        if len(decomposition.live()) > portfolio.MAX_VALUES or deadline.passed():
            continue
        try:
            program = portfolio.generate_within(decomposition, six, input_register, ops,
                                                SCREEN, deadline,
                                                longest=None if limit is None else limit - 1)
        except (RegisterPressureError, ResourceLimitError):
            continue
        if program is not None:
            best = (program, name)
    return best if best is None else _refined(candidates[best[1]], best, six, input_register,
                                              ops, deadline)


WIDE_SCREEN = dataclasses.replace(SCREEN, beam=2 * SCREEN.beam, children=2 * SCREEN.children,
                                  moves=2 * SCREEN.moves,
                                  moves_per_goal=2 * SCREEN.moves_per_goal)
"""The screen at twice its width (states kept, children, moves evaluated, moves per goal),
its expansions unchanged: what the winning common part is searched again with (a second of
CPU at most on the banks measured, where the portfolio's `REFINE` takes several; session 20,
docs/cain-families.md)."""


def _refined(decomposition: Decomposition, best: tuple[list[Instr], str],
             registers: tuple[str, ...], input_register: str, ops: str, deadline: Deadline,
             ) -> tuple[list[Instr], str]:
    """`best` (the winning common part's screened program, and its name) or a shorter program
    of the same `decomposition` searched again at `WIDE_SCREEN`, bounded by `best`. Counts,
    not seconds: deterministic."""
    if deadline.passed():
        return best
    try:
        program = portfolio.generate_within(decomposition, registers, input_register, ops,
                                            WIDE_SCREEN, deadline, longest=len(best[0]) - 1)
    except (RegisterPressureError, ResourceLimitError):
        return best
    return best if program is None else (program, best[1])


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


def one_at_a_time(outputs: dict, registers: tuple[str, ...], input_register: str, ops: str,
                  settings: Settings, bound: int | None = None,
                  deadline: Deadline | None = None) -> list[Instr] | None:
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
    deadline = deadline or Deadline(None)
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
                settings: Settings, deadline: Deadline, memo: dict) -> bool:
    """False where no sequence can be completed: with one output per register every order
    ends with the input's register as the only one free, so its own stage there (computed
    first, memoised for the sequences) must fit, or a constant-matrix finish must keep the
    last output in place, which needs an output that is a pool value (the input times ±2^j,
    unshifted; `matrix._Builder._kept`). Saves every other stage's compile where neither
    holds (six random outputs on six registers: about 14 s of CPU)."""
    if len(outputs) != len(registers) or input_register not in outputs:
        return True
    key = (input_register, (input_register,))
    memo[key] = output_stage(input_register, outputs[input_register], key[1], input_register,
                             ops, settings, deadline, memo, registers)
    return memo[key] is not None or any(_scaled_input(k) for k in outputs.values())


def _scaled_input(kernel) -> bool:
    """Whether `kernel` is the unshifted input times ±2^j (j any integer)."""
    taps = {d: Fraction(c) for d, c in kernel.taps.items() if c != 0}
    if set(taps) != {(0, 0)}:
        return False
    c = abs(taps[(0, 0)])
    return c.numerator & (c.numerator - 1) == 0 and c.denominator & (c.denominator - 1) == 0


def _sequence(outputs: dict, order: list[str], registers: tuple[str, ...], source: str,
              ops: str, settings: Settings, bound: int | None, deadline: Deadline,
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
            memo[key] = output_stage(reg, outputs[reg], free, source, ops, settings, deadline,
                                     memo, registers)
        part = memo[key]
        if part is None:
            memo["a stage did not fit"] = True
            return best
        program += part
        done.append(reg)
    if bound is not None and len(program) >= bound:
        return best
    return program if best is None or len(program) <= len(best) else best


def output_stage(reg: str, kernel, free: tuple[str, ...], input_register: str, ops: str,
                 settings: Settings, deadline: Deadline, memo: dict | None = None,
                 whole: tuple[str, ...] | None = None) -> list[Instr] | None:
    """One output's own compile into `reg` within `free`, keeping the input (unless `reg` is
    the input's register); None if it does not fit: the best program of the output's
    candidates on `free`. At a level with `Effort.own_stages` (high, max) also the program of
    the output's kernel compiled alone (`own_program`: into the input's register on `whole`,
    the filter's register file, None: `free`) moved into the stage (`codegen.relocate`) where
    it fits there, if shorter; so there a filter is never longer than its outputs compiled
    alone, summed, where each of those programs fits its stage of `one_at_a_time`. `memo`
    keeps each output's e-graph search and own compile for its next stage (they do not depend
    on the stage's registers)."""
    if deadline.passed():
        return None
    memo = {} if memo is None else memo
    if (reg, EGRAPH) not in memo:
        memo[reg, EGRAPH] = optimize({reg: kernel}, search_options(ops, settings, deadline))
    optimized = memo[reg, EGRAPH]
    stage = assemble({reg: kernel}, optimized, STAGE)
    keep = () if reg == input_register else ((input_register, 0),)
    stage = {n: Decomposition(d.values, (*d.outputs, *keep)) for n, d in stage.items()}
    try:
        part, _, _ = best_program(stage, free, input_register, ops, deadline)
    except (RegisterPressureError, ResourceLimitError):
        part = None
    own = None
    if effort.current().own_stages:
        own = _own_stage(reg, kernel, free, whole or free, input_register, ops, settings,
                         deadline, memo)
    # ties keep the candidates' program: a level without own stages gets the same
    return min((p for p in (part, own) if p is not None), key=len, default=None)


def _own_stage(reg: str, kernel, free: tuple[str, ...], whole: tuple[str, ...],
               input_register: str, ops: str, settings: Settings, deadline: Deadline,
               memo: dict) -> list[Instr] | None:
    """`own_program` of the output moved into its stage (`codegen.relocate`), verified exactly
    (the output, and the input where it is kept); None where it does not fit. Not compiled
    where no program of the kernel fits: one of two or more taps needs a register besides
    the input's (a program on one register makes a single tap)."""
    room = len(free) - (1 if reg == input_register else 2)
    if room < (1 if len(kernel.trimmed()) > 1 else 0):
        return None
    if (reg, OWN) not in memo:
        memo[reg, OWN] = own_program(kernel, whole, input_register, ops, settings, deadline)
    if memo[reg, OWN] is None:
        return None
    moved = codegen.relocate(memo[reg, OWN], free, input_register, reg)
    if moved is None:
        return None
    kept = {} if reg == input_register else {input_register: Kernel.unit()}
    codegen.verify_program(moved, {reg: kernel} | kept, input_register, ops, free)
    return moved


OWN = "own compile"
"""`memo`'s key (with the output's register) of the output's `own_program`."""


COMPILE_ALONE: ContextVar[Callable[[str, str, Settings], Any] | None] = ContextVar(
    "compile_alone", default=None)
"""The whole pipeline's compile of .kalg text (`pipeline.compile_text`), which `own_program`
runs: the pipeline sets it around each compile (this module cannot import the pipeline, which
imports it). None outside a compile: no own program."""


def own_program(kernel, registers: tuple[str, ...], input_register: str, ops: str,
                settings: Settings, deadline: Deadline) -> list[Instr] | None:
    """The program of `kernel` compiled alone, as a filter of one output in `input_register`
    on `registers` with `settings` (the whole pipeline, `COMPILE_ALONE`: what `kalg optimize`
    gives the kernel alone); None where that compile fails, the deadline has passed, or no
    compile is running."""
    compile_text = COMPILE_ALONE.get()
    if deadline.passed() or compile_text is None:
        return None
    target = "scamp5_wide" if any(r not in SCAMP5_REGISTERS for r in registers) else "scamp5"
    text = (f"target {target} {{ registers: {' '.join(registers)}, input: {input_register}, "
            f"ops: {ops} }}\nfilter own = [{input_register}: {kernel_text(kernel)}]\n")
    left = None if deadline.end is None else max(deadline.left(), 0.1)
    alone = dataclasses.replace(settings, name=None, registers=None, input=None, ops=None,
                                target=None, split=None, progress=None, warn=None,
                                timeout=left)
    try:
        return list(compile_text(text, "<an output alone>", alone).program)
    except KalgError:
        return None


def zero_outputs(outputs: dict) -> tuple[str, ...]:
    """The registers of the outputs that are the zero kernel. Such an output is no output of
    the search: it is made by clearing its register (`res`) after the others (`cleared`), as
    the program's last instructions, since the others may use the register meanwhile."""
    return tuple(sorted(r for r, k in outputs.items() if not k.trimmed().entries))


def without_zeros(definition, warn=None) -> tuple:
    """(`definition`, it without its zero outputs, their registers, the warning that names
    them, or none): what the search compiles, and what `cleared` adds after it. (A zero
    `kernel` is refused before: alone, it is a mistake; a filter's zero output is a layer's
    zero weights.)"""
    zeros = zero_outputs(definition.outputs)
    if not zeros:
        return definition, definition, zeros, []
    what = (f"output{'s' if len(zeros) > 1 else ''} {', '.join(zeros)} "
            f"{'are' if len(zeros) > 1 else 'is'}")
    text = (f"'{definition.name}': {what} zero: the program clears "
            f"{'its register' if len(zeros) == 1 else 'their registers'} (res)")
    if warn:
        warn(text)
    rest = {r: k for r, k in definition.outputs.items() if r not in zeros}
    return definition, dataclasses.replace(definition, outputs=rest), zeros, [text]


def cleared(program: list[Instr], zeros: tuple[str, ...]) -> list[Instr]:
    """`program` followed by one `res` per register of `zeros` (both op sets have it)."""
    return [*program, *(Res(r) for r in zeros)]
