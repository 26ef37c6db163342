"""Soundness of the exact search's pruning: every bound is admissible and every "proven
shortest" is true, checked against random programs and an independent brute force.

Random programs are run with kalg's symbolic simulator (not the search's own arithmetic), so a
wrong bound, a wrong two-instruction test or a wrong last-step inversion shows up as a program
the search says cannot exist."""

from __future__ import annotations

import math
import random

import pytest

from kalg.algebra.kernel import Kernel
from kalg.targets.scamp5.exact.exhaustive import (
    _exact,
    _instructions,
    _Search,
    shortest_program,
    tap_steps,
)
from kalg.targets.scamp5.exact.twostep import fingerprint
from kalg.targets.scamp5.machine.symbolic import initial_state, step

from .brute import shortest_by_brute_force

SIX = ("A", "B", "C", "D", "E", "F")


def _key(kernel: Kernel) -> tuple:
    return _exact(kernel)


def _random_program(rng: random.Random, templates, length: int):
    """A random program of `length` instructions (legal, reading only defined registers), each
    instruction after the first reading a result of the one before it; with its states."""
    states = [initial_state("A")]
    program = []
    for _ in range(length):
        state = states[-1]
        choices = [t for t in templates
                   if all(state[r] is not None for r in t.reads())
                   and (not program or set(t.reads()) & set(program[-1].writes()))]
        instr = rng.choice(choices)
        program.append(instr)
        states.append(step(state, instr))
    return program, states


def _all_used(program) -> bool:
    """Every instruction but the last has a result that a later instruction reads (before it
    is overwritten): the programs the search's pruning must keep."""
    for i, instr in enumerate(program[:-1]):
        live = set(instr.writes())
        used = False
        for later in program[i + 1:]:
            if live & set(later.reads()):
                used = True
                break
            live -= set(later.writes())
            if not live:
                break
        if not used:
            return False
    return True


def _programs(seed: int, length: int, count: int, registers=SIX):
    """`count` random programs of `length` with every instruction used and a nonzero result
    in the last instruction's first destination, never a zero value: (program, states,
    output register)."""
    rng = random.Random(seed)
    templates = [t.instr for t in _instructions("all", registers)]
    found = []
    while len(found) < count:
        program, states = _random_program(rng, templates, length)
        out = program[-1].writes()[0]
        value = states[-1][out]
        if value is None or not _all_used(program) or any(
                v is not None and not v.taps for s in states for v in s.values()):
            continue  # the search never writes zero (a zero is never needed)
        if any(states[-1][out].same_values(s[out]) for s in states[:-1] if s[out] is not None):
            continue
        found.append((program, states, out))
    return found


def _replay(search: _Search, program, states):
    """The search's (regs, writer, used) after each prefix of `program`."""
    by_instr = {t[0]: t for t in search.templates}
    regs = [-1] * len(search.registers)
    regs[search.index["A"]] = search.pool.intern(0, ((0, 0, 1),))
    writer, used = [-1] * len(search.registers), []
    out = [(list(regs), list(writer), list(used))]
    for depth, (instr, state) in enumerate(zip(program, states[1:], strict=True)):
        template = by_instr.get(instr)
        if template is None:  # an instruction with the same effect as a kept one
            template = next(t for t in search.templates if t[2] == search._compile(
                next(u for u in _instructions("all", search.registers) if u.instr == instr))[2])
        after = search._after(template[1], template[2], writer, used, depth)
        assert after is not None, "a program with every instruction used was pruned"
        writer, used = after
        regs = [-1 if state.get(r) is None else search.pool.intern(*_key(state[r]))
                for r in search.registers]
        out.append((list(regs), list(writer), list(used)))
    return out


@pytest.mark.parametrize("length", [2, 3, 4, 5])
def test_lower_bounds_never_exceed_the_length_of_a_program_that_exists(length):
    """Random programs of L instructions: after i of them, the bound is at most L - i; two
    before the end the two-instruction test passes; one before, the inversion finds a last
    instruction."""
    for program, states, out in _programs(100 + length, length, 8):
        target = states[-1][out]
        search = _Search(target, SIX, "A", out, "all", 10**6, 10**6, None)
        for i, (regs, writer, used) in enumerate(_replay(search, program, states)):
            left = length - i
            assert search._bound(regs, writer, used) <= left, (program, i)
            if left == 2:
                prints = [fingerprint(*_key(states[i][r])) for r in SIX
                          if states[i][r] is not None]
                assert search.two.possible(prints), (program, i)
                need = search._needed(regs)
                nxt = states[i + 1]
                if need is not None and len(program[i].writes()) == 1:
                    w = search.pool.intern(*_key(nxt[program[i].writes()[0]]))
                    assert search.pool.prints[w] in need or w == search.target, program
            if left == 1:
                assert search._last(regs) is not None, program


@pytest.mark.parametrize("length", [2, 3])
def test_the_search_finds_a_program_at_most_as_long_as_any_random_one(length):
    for program, states, out in _programs(200 + length, length, 6):
        outcome = shortest_program(states[-1][out], output=out, nodes=200_000)
        assert outcome.stopped is None and outcome.proven, program
        assert len(outcome.program) <= length


def _brute_force(registers, depth: int) -> dict[tuple, int]:
    """Fewest instructions leaving each kernel in A, over every program of at most `depth`
    (op set all), by breadth-first search over exact register states: no pruning at all."""
    templates = [t.instr for t in _instructions("all", registers)]
    return shortest_by_brute_force(templates, registers, ("A",), depth)


def test_proven_lengths_agree_with_brute_force_on_three_registers():
    """Every kernel a random 3-instruction program leaves in A (three registers): the search's
    proven length equals the brute-force minimum when that is at most 2, else it is 3."""
    registers = ("A", "B", "C")
    exact = _brute_force(registers, 2)
    rng = random.Random(7)
    templates = [t.instr for t in _instructions("all", registers)]
    checked = 0
    while checked < 25:
        program, states = _random_program(rng, templates, 3)
        target = states[-1]["A"]
        if target is None or not target.taps:
            continue
        outcome = shortest_program(target, registers=registers, nodes=200_000)
        assert outcome.proven, program
        assert len(outcome.program) == exact.get(_key(target), 3), program
        checked += 1


def test_a_last_instruction_reading_the_new_register_twice_is_not_filtered_out():
    """mov2x(B, A, east, east); subx(C, B, east, B) makes x^3 - x^2, the last instruction
    reading the register written just before twice (no single-position form gives it). The
    last-but-one filter once solved for the new value in one position of the last form only,
    so this program was invisible to it."""
    target = Kernel.of({(3, 0): 1, (2, 0): -1})
    search = _Search(target, SIX, "A", "C", "all", 10**6, 10**6, None)
    regs = [-1] * 6
    regs[0] = search.pool.intern(0, ((0, 0, 1),))
    need = search._needed(regs)
    x2 = search.pool.intern(0, ((2, 0, 1),))
    assert need is None or search.pool.prints[x2] in need
    outcome = shortest_program(target, output="C", nodes=100_000)
    assert outcome.proven and len(outcome.program) == 2


def _tap_heavy_program(rng: random.Random, templates, length: int):
    """A random program whose instructions mostly gather taps (three-term adds, shifted
    sums, divisions making copies): the programs that come closest to the tap bound."""
    heavy = [t for t in templates if t.mnemonic in ("add", "addx", "add2x", "subx", "sub2x",
                                                    "div", "diva")]
    state, states, program = initial_state("A"), [initial_state("A")], []
    for _ in range(length):
        choices = [t for t in heavy if all(state[r] is not None for r in t.reads())]
        instr = rng.choice(choices)
        state = step(state, instr)
        program.append(instr)
        states.append(state)
    return program, states


@pytest.mark.parametrize("seed", range(3))
def test_the_tap_bound_never_exceeds_the_instructions_a_random_program_takes(seed):
    """After i of L instructions, `tap_steps` (the registers' tap counts, the taps of any value
    the program holds at the end) is at most L - i, and so is it on sums of absolute
    coefficients (in units of that value's 2^-e, rounded up): on tap-gathering random
    programs, and against hand-counted cases."""
    rng = random.Random(seed)
    templates = [t.instr for t in _instructions("all", SIX)]
    for _ in range(40):
        length = rng.randint(2, 6)
        program, states = _tap_heavy_program(rng, templates, length)
        for value in states[-1].values():
            if value is None or not value.trimmed().taps:
                continue
            taps = len(value.trimmed().taps)
            e, exact = _exact(value)
            size = sum(abs(n) for _, _, n in exact)
            for i, state in enumerate(states):
                counts = sorted((0 if state[r] is None else len(state[r].trimmed().taps)
                                 for r in SIX), reverse=True)
                assert tap_steps(tuple(counts), taps) <= length - i, (program, i, taps)
                sizes = sorted((0 if state[r] is None else
                                math.ceil(sum(abs(c) for c in state[r].taps.values()) * 2 ** e)
                                for r in SIX), reverse=True)
                assert tap_steps(tuple(sizes), size) <= length - i, (program, i, size)
    one = (1, 0, 0, 0, 0, 0)
    # From x alone: 1 instruction makes at most 2 taps (x(p+d) - x), 2 at most 4, 3 at most 8.
    assert [tap_steps(one, t) for t in (1, 2, 3, 4, 5, 8, 9)] == [0, 1, 2, 2, 3, 3, 4]


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_the_batched_two_step_test_agrees_with_the_single_one(seed):
    """`TwoStep.possible_with(held, ws)` (the held values' part shared) answers exactly as
    `possible([*held, w])` for each w: on the states three instructions before the end of
    random programs, with w the next instruction's result (a true answer is required) and the
    values other instructions would write (mostly false answers)."""
    rng = random.Random(seed)
    for program, states, out in _programs(300 + seed, 4, 4):
        target = states[-1][out]
        search = _Search(target, SIX, "A", out, "all", 10**6, 10**6, None)
        state = states[1]
        held = [fingerprint(*_key(v)) for v in state.values() if v is not None]
        made = [fingerprint(*_key(v)) for v in states[2].values() if v is not None]
        others = []
        for instr in rng.sample([t.instr for t in _instructions("all", SIX)], 200):
            if all(state[r] is not None for r in instr.reads()):
                got = step(state, instr)[instr.writes()[0]]
                if got is not None:
                    others.append(fingerprint(*_key(got)))
        ws = sorted(set(made + others))
        batched = search.two.possible_with(held, ws)
        single = [search.two.possible([*held, w]) for w in ws]
        assert list(batched) == single, program
        assert any(batched[ws.index(w)] for w in made), program
