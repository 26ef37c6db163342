"""The candidate portfolio: candidate decompositions → the shortest verified program, monotone in
resources.

Contract (tests/test_monotone.py): for the same candidates, a larger register budget, or op set
`all` instead of `basic`, never gives a longer program, and never "no program" where the smaller
budget finds one. The code generator's beam search is not monotone in its budget (a wider register
file fills the beam with different states), so the portfolio makes the *result* monotone:

* a register budget R is searched as a ladder of register files, one per size k in `sizes(|R|)`
  (every size from the fewest that can hold the outputs up to |R|; beyond six registers only the
  sizes in `WIDE_SIZES`), and the shortest program of any rung wins. A rung is searched with
  *virtual* registers - the input and output registers, then the first free names of the register
  universe - and its program renamed onto R's free registers, so a rung's search is the same
  computation whichever budget it belongs to: a larger budget runs every rung a smaller one runs.
* op set `all` also runs what op set `basic` runs (a basic program is an `all` program), with the
  basic candidates (the e-graph extracted under basic costs).

One rung (`_rung`) is the screen-and-refine of every candidate: each candidate with `SCREEN`,
fewest live values first, each search after the rung's first program bounded by the shortest so
far (`codegen.generate`'s `longest`: a candidate that cannot be as short stops within that many
levels of its beam, where a huge one used to be searched to its end for hundreds of
instructions), then the best screened one again with `REFINE` and `REFINE_NARROW`, bounded the
same way. The bound depends only on the rung's own candidates, so a rung stays the same search
whichever budget runs it. Every bound is a count, so the result is deterministic. Ties go to
the op set asked for, the largest rung (the program a single search of the whole budget finds,
when no smaller rung beats it), then the earlier candidate.

Searches that cannot change the answer are left out (docs/cain-families.md, session 16): where
the exact search proves the top rung's program shortest with the fewest bus steps of its
length (`_unbeatable`), its later candidates' refines, and under op set all basic's rungs
(`_ladder`). The program is the one every search would give, so the contracts above hold as
they did. Bounding basic's searches by op set all's program instead would not keep them: a
search's program is not monotone in its bound.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, replace
from fractions import Fraction

from kalg import effort, workers
from kalg.algebra.decomp import Decomposition
from kalg.diagnostics import KalgError, RegisterPressureError, ResourceLimitError
from kalg.targets.scamp5 import codegen
from kalg.targets.scamp5.codegen.opset import as_op_set_all
from kalg.targets.scamp5.exact import exhaustive
from kalg.targets.scamp5.exact.bounds import WIDEST
from kalg.targets.scamp5.machine.isa import OP_SETS, Instr, bus_steps, outside_op_set
from kalg.targets.scamp5.machine.symbolic import verify_exact
from kalg.targets.scamp5.registers import rung

SCREEN = codegen.QUICK
"""Code generation limits every candidate gets first (a fraction of a second each)."""

SCREEN_ONLY = replace(codegen.QUICK, beam=8, children=6, moves=12, moves_per_goal=16,
                      expansions=300, extend=False)
"""The limits of a rung below `FULL_SIZES`: half a screen, never extended (these rungs are run
by every budget, so they must be cheap)."""

REFINE = codegen.Limits(expansions=1000, total_expansions=2000)
"""Limits for the best screened candidate: a wider search, about a second."""

REFINE_NARROW = codegen.Limits(expansions=700, total_expansions=1400, in_sequence=False)
"""A second budget the best screened candidate is also searched with. The beam search is not
monotonic in its budget: a search cut off earlier keeps different states, and its program is
sometimes shorter than the wider search's (never worse overall: the shortest program wins).
The outputs-in-sequence program is left to `REFINE`, which already compares it."""

MAX_VALUES = 400
"""Candidates with more live values than this are not given to the code generator: its search state
grows with them, and the bound keeps a compile within its memory
(`resources.PROCESS_MEMORY_MIB`)."""

FULL_SIZES = (6, 8, 12, 18, 26)
"""Rungs searched in full (screen and refine): SCAMP-5's six registers and, for the simulated
wide target, a few larger files. The two smallest rungs are only screened (a fraction of the
time): a budget between two rungs is searched with the rungs below it, so the ladder stays short
and a larger budget still runs every rung a smaller one runs."""

OP_ORDER = ("basic", "all")
"""Op sets searched for a budget: its own and those before it. A program of an earlier op set
counts for a later one only in the later one's macros (`all` has no `divq`: a basic program
counts for op set all where its halvings can be `div`s, `codegen.opset`)."""


@dataclass(frozen=True, slots=True)
class Resources:
    """The resources a program may use: registers (a subset of `universe`), the input register,
    the op set, and the outputs' registers (which every rung must contain)."""

    registers: tuple[str, ...]
    input: str
    ops: str
    outputs: tuple[str, ...]
    universe: tuple[str, ...]

    def required(self) -> tuple[str, ...]:
        """The input and output registers, in universe order."""
        need = {self.input, *self.outputs}
        return tuple(r for r in self.universe if r in need)

    def op_sets(self) -> tuple[str, ...]:
        """The op sets searched: `ops` and every op set it includes."""
        return OP_ORDER[: OP_ORDER.index(self.ops) + 1]

    def sizes(self) -> list[int]:
        """The rungs' register counts, smallest first: the fewest that can hold the outputs
        (`low`, at least two) and one more, then `FULL_SIZES` - as far as the budget reaches."""
        n = len(set(self.registers))
        low = max(len(self.required()), 2)
        ladder = sorted({low, low + 1, *(k for k in FULL_SIZES if k > low)})
        return [k for k in ladder if k <= n]

    def rung(self, size: int) -> tuple[tuple[str, ...], dict[str, str]]:
        """The virtual register file of `size` registers (required ones first, then free names
        of the universe in order), and the renaming of its free names onto this budget's."""
        required = self.required()
        mine = [r for r in self.universe if r in self.registers and r not in required]
        spare = [r for r in self.universe if r not in required]
        file = rung(required, spare, size)
        free = file[len(required):]
        return file, dict(zip(free, mine, strict=False))


@dataclass(frozen=True)
class Best:
    """The portfolio's answer: the program, the candidate it came from (and its decomposition),
    and why the search stopped early (None: every rung ran)."""

    program: list[Instr]
    candidate: str
    decomposition: Decomposition
    stop: str | None = None


class _NoDeadline:
    seconds = None
    end = None

    def left(self) -> float:
        return math.inf

    def passed(self) -> bool:
        return False


def searchable(candidates: dict[str, Decomposition]) -> dict[str, Decomposition]:
    """The candidates the code generator is given: at most `MAX_VALUES` live values each (its
    search state grows with them). None left is a KalgError: the kernel is too large."""
    usable = {n: d for n, d in candidates.items() if len(d.live()) <= MAX_VALUES}
    if not usable:
        raise KalgError(f"every candidate decomposition has over {MAX_VALUES} values: the "
                        "kernel is too large for the code generator; approximate or split it")
    return usable


def generate_within(decomposition: Decomposition, registers: tuple[str, ...],
                    input_register: str, op_set: str, limits: codegen.Limits,
                    deadline, memo: codegen.Memo | None = None,
                    longest: int | None = None) -> list[Instr] | None:
    """`codegen.generate` with its time cut to what `deadline` (--timeout) leaves, if any
    (None: nothing within `longest`)."""
    if deadline.end is not None:
        limits = replace(limits, seconds=max(deadline.left(), 0.01))
    return codegen.generate(decomposition, registers, input_register, op_set, limits, memo=memo,
                            longest=longest)


def timeout_stop(deadline, found: bool) -> str | None:
    """The stop reason once `deadline` has passed (None before): the best program found so far
    stands; with nothing `found`, a ResourceLimitError."""
    if not deadline.passed():
        return None
    if not found:
        raise ResourceLimitError(
            f"--timeout {deadline.seconds:g} s expired before code generation found a "
            "program", hint="raise --timeout, or approximate or split the kernel")
    return (f"--timeout {deadline.seconds:g} s expired during code generation: this is the "
            "best verified program found so far (a longer timeout may find a shorter one)")


def best_on_ladder(candidates: dict[str, dict[str, Decomposition]], budget: Resources,
                 deadline=None, progress: Callable[[str], None] | None = None) -> Best:
    """The shortest program (then fewest bus steps) over every op set and rung of `budget`.
    `candidates[op_set]` are the candidates searched with that op set (ordered: ties keep the
    earlier one). `deadline` (the pipeline's --timeout: `end`, `left()`, `passed()`, `seconds`)
    stops the search with what it has - the one way the result can depend on the clock.
    The rungs are independent searches: `workers.ordered_map` runs them on this process and a
    forked one (`KALG_WORKERS`), the full rungs first, and they are compared in ladder order,
    so the program is the one a serial search finds. A rung that cannot change the answer is
    not run (`_ladder`): the program is the same as with every rung run."""
    deadline = deadline or _NoDeadline()
    plan = [(op_rank, op_set, size) for op_rank, op_set in enumerate(budget.op_sets())
            for size in budget.sizes()]
    usable = {op_set: _distinct(searchable(candidates[op_set])) for op_set in budget.op_sets()}
    fractional = _fractional(usable)
    top = (budget.ops, max(budget.sizes(), default=0))

    def rung(index: int):
        _, op_set, size = plan[index]
        if deadline.passed():
            return None
        if progress:
            progress(f"code generation: rung {index + 1} of {len(plan)} ({op_set}, {size} "
                     "registers)")
        registers, _ = budget.rung(size)
        if fractional and op_set == "all" and size < DIV_REGISTERS:
            return _no_division(usable[op_set], registers, op_set)
        # The rung's own memo, so that what it holds when each search starts (and so where
        # `codegen.limits.HELD_OPERANDS` stops a search) is the same in whichever process,
        # after whichever rungs, it runs: its candidates share their moves and rankings.
        memo = codegen.Memo()
        try:
            return _rung(usable[op_set], registers, budget.input, op_set, size in FULL_SIZES,
                         deadline, memo, prove=(op_set, size) == top)
        except RegisterPressureError as err:
            return err
        finally:
            memo.release()

    outcomes = _ladder(plan, rung, budget, usable)
    if deadline.end is None:
        _remember(plan, outcomes, budget, usable)
    best: tuple[tuple[int, int, int, int, int], str, list[Instr], dict[str, str],
                Decomposition] | None = None
    pressure: RegisterPressureError | None = None
    for (op_rank, op_set, size), outcome in zip(plan, outcomes, strict=True):
        if isinstance(outcome, RegisterPressureError):
            pressure = pressure or outcome
            continue
        if (kept := _in_op_set(outcome, budget, size)) is None:
            continue
        (length, bus, order), name, program = kept
        key = (length, bus, -op_rank, -size, order)
        if best is None or key < best[0]:
            best = (key, name, program, budget.rung(size)[1], usable[op_set][name])
    stop = timeout_stop(deadline, found=best is not None)
    if best is None:
        raise pressure or RegisterPressureError(
            f"no program fits in {len(budget.registers)} register(s) "
            f"{' '.join(budget.registers)}", hint="give at least two registers")
    _, name, program, renaming, decomp = best
    return Best(_renamed(program, renaming, decomp, budget.input), name, decomp, stop)


def _ladder(plan: list[tuple[int, str, int]], rung: Callable[[int], object], budget: Resources,
            usable: dict[str, dict[str, Decomposition]]) -> list:
    """The outcome of each rung of `plan` (`rung(i)`), None for a rung not run.

    Op set all's rungs run first where its top rung may prove its program shortest
    (`may_prove`); where it did (`Found.proof`), op set basic's rungs are not run: none of
    their programs can win. Each is a program on a rung's file, which is part of the top
    rung's file, and made an op set all program of the same length (`_in_op_set`); so it is
    no shorter, has no fewer bus steps (the top rung's program has the fewest any program of
    its length can have, `fewest_bus`), and loses the tie to op set all. Elsewhere every rung
    runs, as they always did, the full rungs of the richest op set handed out first."""
    first = sorted(range(len(plan)), key=lambda i: (plan[i][2] not in FULL_SIZES,
                                                    -plan[i][0], -plan[i][2]))
    if not plan or len(budget.op_sets()) == 1 or not may_prove(usable[budget.ops], budget):
        return workers.ordered_map(rung, len(plan), first)
    now = [i for i in first if plan[i][1] == budget.ops]
    found = dict(zip(now, workers.ordered_map(lambda j: rung(now[j]), len(now)), strict=True))
    top = max(now, key=lambda i: plan[i][2])
    if not (isinstance(found[top], Found) and found[top].proof is not None):
        later = [i for i in first if i not in found]
        found |= dict(zip(later, workers.ordered_map(lambda j: rung(later[j]), len(later)),
                          strict=True))
    return [found.get(i) for i in range(len(plan))]


_SEARCHED: dict[tuple, exhaustive.Outcome] = {}
"""The last ladder's top rung's exact searches (`Found.searched`), by their arguments
(`_proof_key`), whether they proved the program shortest or found a shorter one: the
pipeline's own exact search with the same arguments (`remembered`) is then not run again. The
search is a function of its arguments (counts, no clock), so the outcome is the one it would
compute."""


def _proof_key(kernel, registers: tuple[str, ...], input_register: str, output: str,
               op_set: str, max_length: int, nodes: int) -> tuple:
    """The arguments the exact search's outcome depends on: its kernel without zero entries
    (it searches for `kernel.trimmed()`'s taps), registers, input, output, op set, bounds."""
    return kernel.trimmed(), tuple(registers), input_register, output, op_set, max_length, nodes


def remembered(kernel, registers: tuple[str, ...], input_register: str, output: str,
               op_set: str, max_length: int, nodes: int) -> exhaustive.Outcome | None:
    """`exhaustive.shortest_program`'s outcome for these arguments (no --timeout) where the
    last ladder's top rung computed it (`_unbeatable`), else None."""
    return _SEARCHED.get(_proof_key(kernel, registers, input_register, output, op_set,
                                    max_length, nodes))


def _remember(plan: list[tuple[int, str, int]], outcomes: list, budget: Resources,
              usable: dict[str, dict[str, Decomposition]]) -> None:
    """Keep the top rung's exact searches for `remembered` (only the last ladder's)."""
    _SEARCHED.clear()
    top = max((i for i, p in enumerate(plan) if p[1] == budget.ops), default=None,
              key=lambda i: plan[i][2])
    if top is None or not isinstance(found := outcomes[top], Found):
        return
    if len(kernels := usable[budget.ops][found.name].output_kernels()) != 1:
        return
    ((output, kernel),) = kernels.items()
    registers = budget.rung(plan[top][2])[0]
    for max_length, outcome in found.searched:
        key = _proof_key(kernel, registers, budget.input, output, budget.ops, max_length,
                         PROOF_NODES)
        _SEARCHED[key] = outcome


def _in_op_set(outcome, budget: Resources, size: int):
    """A rung's outcome (a `Found`) as ((length, bus, order), name, program) with its program
    in the budget's op set: as it is, or an earlier op set's with basic's divq made all's div
    (`codegen.opset`); None where it cannot be, or where the rung did not run (the deadline
    had passed, or `_ladder` left it out)."""
    if outcome is None:
        return None
    (length, _, order), name, program = outcome.key, outcome.name, outcome.program
    if outside_op_set(program, budget.ops) is None:
        return outcome.key, name, program
    if (program := as_op_set_all(program, budget.rung(size)[0], budget.outputs)) is None:
        return None
    return (length, bus_steps(program), order), name, program


@dataclass(frozen=True)
class Found:
    """A rung's program: its key (length, bus steps, the candidate's place), the candidate's
    name, the program, and the exact search's outcome where it proved no program on the
    rung's file beats the key's length and bus steps (`_unbeatable`; None: not proven), and
    every exact search the rung ran, as (its `max_length`, its outcome), for `remembered`:
    one that found a shorter program is the search the pipeline would run again."""

    key: tuple[int, int, int]
    name: str
    program: list[Instr]
    proof: exhaustive.Outcome | None = None
    searched: tuple[tuple[int, exhaustive.Outcome], ...] = ()


def _rung(usable: dict[str, Decomposition], registers: tuple[str, ...], input_register: str,
          op_set: str, refine: bool, deadline, memo: codegen.Memo,
          prove: bool = False) -> Found:
    """One rung: every candidate screened, then (`refine`) the best screened one refined twice.

    Candidates are screened fewest live values first (`screen_order`), and each search after
    the first program is bounded by the shortest program found so far (`codegen.generate`'s
    `longest`): a candidate that cannot be that short is not searched further. The bound
    admits ties, which the earlier candidate (`usable`'s order) or fewer bus steps win.

    With `prove`, the best screened program is also given to the exact search
    (`_unbeatable`); where it is proven shortest with the fewest bus steps, the refines that
    could only tie with it are not run: those of candidates placed after it (a tie keeps the
    earlier candidate). The rung's program is the same either way. Where a refine found a
    better program, that one is given to the exact search after the refines (for `_ladder`:
    the proof then leaves out op set basic's rungs)."""
    found: list[tuple[tuple[int, int, int], str, list[Instr]]] = []
    pressure: RegisterPressureError | None = None
    unbeaten_from: int | None = None  # attempts of candidates from this place on cannot win

    def attempt(name: str, order: int, limits: codegen.Limits) -> None:
        nonlocal pressure
        if deadline.passed() or (unbeaten_from is not None and order >= unbeaten_from):
            return
        longest = min(f[0][0] for f in found) if found else None
        try:
            program = generate_within(usable[name], registers, input_register, op_set, limits,
                                      deadline, memo, longest)
        except RegisterPressureError as err:
            pressure = err
            return
        if program is not None:
            found.append(((len(program), bus_steps(program), order), name, program))

    for order, name in screen_order(usable):
        attempt(name, order, SCREEN if refine else SCREEN_ONLY)
    if not found:
        raise pressure or RegisterPressureError(
            f"no program found in {len(registers)} registers")
    (length, bus, found_order), name, _ = min(found, key=lambda f: f[0])
    proof, searched = None, {}
    if prove and (proof := _unbeatable(length, bus, usable[name], registers, input_register,
                                       op_set, deadline, searched)) is not None:
        unbeaten_from = found_order
    if refine:
        attempt(name, found_order, REFINE)
        attempt(name, found_order, REFINE_NARROW)
        level = effort.current()  # a higher level adds wider searches (`kalg.effort`)
        ranked = sorted(found, key=lambda f: f[0])
        if level.widens(ranked[0][0][0]):
            best = dict.fromkeys((n, o) for (_, _, o), n, _ in ranked)
            for n, o in list(best)[:level.refined]:
                attempt(n, o, level.widened(REFINE))
            attempt(name, found_order, level.widened(REFINE_NARROW))
    key, best, program = min(found, key=lambda f: f[0])
    if prove and proof is None and key[:2] != (length, bus):  # a refine found a shorter one
        proof = _unbeatable(*key[:2], usable[best], registers, input_register, op_set, deadline,
                            searched)
    return Found(key, best, program, proof, tuple(searched.items()))


PROVE_UP_TO = 5
"""The top rung's best screened program is given to the exact search (`_unbeatable`) where it
has at most this many instructions: every shorter length is then searched within
`PROOF_NODES` (as `pipeline.EXACT_UP_TO`, which proves such programs shortest after the
ladder)."""


PROOF_NODES = 20_000
"""Node budget of that search (a count: deterministic; measured 0.01 to 0.7 s of CPU)."""


def may_prove(usable: dict[str, Decomposition], budget: Resources) -> bool:
    """Whether the top rung may prove its program shortest (`_unbeatable`): one output, a top
    rung of at most `exact.bounds.WIDEST` registers, and a candidate of at most `PROVE_LIVE`
    live values. Only where it may does op set all run its rungs before basic's (`_ladder`);
    elsewhere all run side by side on the worker processes, the shorter wall-clock time. It
    decides the order the rungs run in, never the program."""
    return (len(budget.outputs) == 1 and max(budget.sizes(), default=0) <= WIDEST
            and min(len(d.live()) for d in usable.values()) <= PROVE_LIVE)


PROVE_LIVE = 12
"""Live values of the smallest candidate up to which `may_prove` holds. Measured on fresh
draws (docs/cain-families.md, session 16): every ladder program of at most `PROVE_UP_TO`
instructions had a candidate of 8 to 12 live values, longer ones mostly 13 or more."""


def fewest_bus(length: int, op_set: str) -> int:
    """Fewest bus steps a program of `length` instructions of `op_set` can have: that many
    times its cheapest macro's."""
    return length * min(m.bus for m in OP_SETS[op_set])


def _unbeatable(length: int, bus: int, decomposition: Decomposition,
                registers: tuple[str, ...], input_register: str, op_set: str,
                deadline, searched: dict | None = None) -> exhaustive.Outcome | None:
    """The exact search's outcome where it proves that no program of `op_set` on `registers`
    has fewer instructions than `length`, and `bus` is the fewest bus steps of that many
    (`fewest_bus`); else None (not tried, or not proven within `PROOF_NODES`). Only for one
    output, at most `PROVE_UP_TO` instructions and `exact.bounds.WIDEST` registers. Without
    --timeout, the outcome, whatever it is, goes into `searched` by its `max_length`."""
    kernels = decomposition.output_kernels()
    if (len(kernels) != 1 or length > PROVE_UP_TO or len(registers) > WIDEST
            or bus > fewest_bus(length, op_set)):
        return None
    ((output, kernel),) = kernels.items()
    seconds = None if deadline.end is None else max(deadline.left(), 0.01)
    outcome = exhaustive.shortest_program(kernel, registers=registers,
                                          input_register=input_register, output=output,
                                          op_set=op_set, max_length=length - 1,
                                          nodes=PROOF_NODES, seconds=seconds)
    if searched is not None and seconds is None:
        searched[length - 1] = outcome
    return outcome if outcome.program is None and outcome.stopped is None else None


def screen_order[K](usable: dict[K, Decomposition]) -> list[tuple[int, K]]:
    """The candidates (their place in `usable`, their key) in the order they are screened:
    fewest live values first (the cheap searches, and the usual winners, set the bound the
    large ones are then searched within), ties in `usable`'s order."""
    return sorted(enumerate(usable), key=lambda c: (len(usable[c[1]].live()), c[0]))


DIV_REGISTERS = 3
"""Registers every halving of op set `all` takes (div and diva: y0, y1, y2 all different; the
4-argument div four), and no other instruction of it makes a fraction of a value."""


def _fractional(usable: dict[str, dict[str, Decomposition]]) -> bool:
    """Whether an output kernel has a coefficient that is not an integer (every candidate
    computes the same outputs: the one with fewest values is asked)."""
    every = [d for found in usable.values() for d in found.values()]
    if not every:
        return False
    smallest = min(every, key=lambda d: len(d.live()))
    return any(Fraction(c).denominator != 1 for k in smallest.output_kernels().values()
               for c in k.taps.values())


def _no_division(usable: dict[str, Decomposition], registers: tuple[str, ...],
                 op_set: str) -> RegisterPressureError:
    """A rung of op set `all` with fewer than `DIV_REGISTERS` registers for a kernel with a
    fraction: no program exists (it would need a halving), so the rung is not searched. The
    error is the one its search ends with: the last candidate's (`codegen.generate`)."""
    return codegen.pressure_error(list(usable.values())[-1], registers, op_set)


def _distinct(candidates: dict[str, Decomposition]) -> dict[str, Decomposition]:
    """The candidates without repeats (an equal decomposition searched again finds the same)."""
    seen: dict[Decomposition, str] = {}
    for name, d in candidates.items():
        seen.setdefault(d, name)
    return {name: d for d, name in seen.items()}


def _renamed(program: list[Instr], renaming: dict[str, str], decomp: Decomposition,
             input_register: str) -> list[Instr]:
    """The rung's program on the budget's own registers, checked exactly again."""
    if all(k == v for k, v in renaming.items()):
        return program
    moved = [i.renamed(renaming) for i in program]
    verify_exact(moved, decomp.output_kernels(), input_register)
    return moved


PROBE_TAPS = 25
"""A kernel of one output with more taps than this (beyond 5x5) is probed against its
constant-matrix program before the ladder runs (`search_may_win`)."""


def search_may_win(candidates: dict[str, dict[str, Decomposition]], outputs: dict,
                   registers: tuple[str, ...], input_register: str, bound: int,
                   deadline=None) -> bool:
    """Whether the ladder (`best_on_ladder`) over `candidates` (by op set) may find a program of
    one output shorter than `bound` instructions (its constant-matrix program), where that is
    in doubt; False only where it is clearly not worth the ladder's time.

    On dense kernels without structure the ladder's candidates hold more values than the
    constant-matrix program has instructions: the ladder then spends a minute and gigabytes
    for a longer program than the matrix program, made in milliseconds. Such kernels are
    recognised in two steps, both counts (deterministic):

    * a gate that costs nothing: more than `PROBE_TAPS` taps, and every candidate has more
      live values than `bound` (each value is an addition or a halving, a fused macro makes at
      most two: such candidates are far from a program of `bound` instructions). A kernel
      with structure (separable, factorable, few distinct coefficients) has candidates of far
      fewer values than its constant-matrix program has instructions, so it never passes;
    * a probe: every distinct candidate of every op set screened once (`SCREEN`) on the whole
      register file, each search stopped beyond `bound + bound // PROBE_SLACK` instructions
      (the ladder's refines gain less than a quarter on a screen: `programs.LARGE_REFINE_MARGIN`).
      If none is found within that, the ladder is not run."""
    if len(outputs) != 1 or max(len(k.trimmed()) for k in outputs.values()) <= PROBE_TAPS:
        return True
    jobs = [(op_set, d) for op_set, found in candidates.items()
            for d in _distinct(searchable(found)).values()]
    if not jobs or min(len(d.live()) for _, d in jobs) <= bound:
        return True
    deadline = deadline or _NoDeadline()
    longest = bound + bound // PROBE_SLACK

    def probe(i: int) -> bool:
        op_set, decomposition = jobs[i]
        if deadline.passed():  # cannot tell: the ladder then stops at once, and says why
            return True
        try:
            program = generate_within(decomposition, registers, input_register, op_set, SCREEN,
                                      deadline, longest=longest)
        except RegisterPressureError:
            return False
        return program is not None or deadline.passed()
    return any(workers.ordered_map(probe, len(jobs)))


PROBE_SLACK = 4
"""`search_may_win`'s probe admits screened programs up to 1/this longer than the bound."""
