"""Exact search for the shortest SCAMP-5 program of one small kernel (`kalg optimize --exhaustive`).

`shortest_program(kernel, ...)` runs an iterative-deepening search (IDA*) over every program of
the op set's macros on the register budget, input in one register, the kernel wanted in another.
Register contents are exact kernels (integer numerators over a power of two), so a program is
found exactly when it computes the kernel. What makes it exhaustive yet feasible for short
programs:

* **Admissible lower bounds** on the instructions still needed (the search prunes a state only
  when a bound exceeds the depth left): the target is not yet in a goal register (1); halvings
  still needed (only a division macro halves, once) PLUS the larger of the distance of the
  farthest target tap from every tap held now (an instruction moves a value at most two steps,
  |dx| + |dy| <= 2) and the taps still to gather (an instruction's result has at most three
  times the taps of its operands) - added, because a division neither moves a value nor adds
  taps; taps to gather counted on the registers' tap counts (`tap_steps`: a result has at
  most the taps of its operands together, so from x alone one instruction makes at most 2
  taps, two at most 4); unused results (below). With three or more instructions left, the
  same tap-count game on the norms L1(h * v) of a fixed family of small kernels h and on the
  moduli |v(z)| at fixed points z of the torus (`codegen.norms`: every macro respects them
  as it does the plain size), the largest bound over them: it ends most searches of depth 6
  of kernels with large coefficients (5 * box3: depth 6 in 2883 nodes, 1.5 million without).
* **Every instruction used.** In a shortest program every instruction's result is read later,
  except the last one's, which is the kernel (else deleting it gives a shorter program, and
  iterative deepening has already searched every shorter length). A state where an instruction's
  results were all overwritten unread is pruned, and with U instructions still unread at least
  ceil((U - 1) / 2) more are needed (an instruction reads at most three registers).
* **No zero values.** An instruction that writes the zero kernel is never needed: every reader of
  a zero can be replaced by an instruction of the same length that does not read it.
* **Symmetry.** Registers other than the input's are interchangeable (renaming them maps programs
  to programs; the result is renamed into the output register at the end), so a transposition
  table keys states by the input register's value and the sorted multiset of the others (with
  which of them are still unread, and by which instruction); undefined registers are written
  in one fixed order. Instructions with the same effect (add(y, a, b) and add(y, b, a), ...) are
  tried once. A macro never overwrites a register other than the input's while such a
  register is free (`_Search._overwrites`: the program writing the free one instead, with
  the two names swapped afterwards, is as long and keeps one more value). When the target
  keeps some rotations or reflections of the grid
  (`codegen.dihedral`: the macros are closed under them, and they fix the input), a state and
  its images are equally far from the target: the key is the least over the images, so only
  one of them is searched (2.8x fewer nodes at depth 5 of mean_cross, 1.8x of kirsch_n).
* **The last instruction by inversion.** With one instruction left, the search does not try
  every macro: for each macro shape it solves for the operand that would make the kernel (for
  example v = T - u for an add reading u) and looks it up among the registers.
* **The last two by a test on prints** (`codegen.twostep`): with two instructions left, a
  state is dropped when no value one instruction can make is one the last instruction could
  finish from (vectorised over every form and source, on an over-approximation of the macros,
  so a "no" is a proof); with three left, an instruction's result w is tried only if that test
  passes on the values held plus w, decided for every w of a state at once: the prints of
  all one-result instructions' values come from the held values' prints in one array
  operation (prints are linear), and `TwoStep.possible_with` shares the held values' part of
  the test among the w (same answers and node counts as one test per w, 2.7x less CPU at
  depth 5 of rand3s1_1). With two left, the value the next
  instruction writes may fill several positions of the last form (subx(y, W, d, W)).

A search that looks for a program rather than a proof (`codegen.kept`'s) may take a guided
order at its root (`guided`): the first instructions whose values, scaled and shifted, match
the most taps of the kernel first; the same programs are searched, so the answer is the same
once it is searched to the end, and a program that exists is often found ten times sooner.

The search is bounded by a node count (deterministic) and a cap on stored kernels (memory); a
wall-time limit is an optional safety net. `Outcome` states what was proven: the shortest length
(when every shorter depth was searched to the end), or only that no program shorter than some
length exists. A program it returns has been executed exactly and numerically by kalg's verifiers.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Sequence
from dataclasses import dataclass, fields
from fractions import Fraction
from functools import cache
from itertools import combinations, product
from operator import itemgetter

import numpy as np

from kalg.algebra.kernel import Kernel
from kalg.settings import EXHAUSTIVE_NODES as NODES
from kalg.targets.scamp5.codegen import verify_program
from kalg.targets.scamp5.exact.dihedral import image, stabilizer
from kalg.targets.scamp5.exact.norms import POINTS, NormBound
from kalg.targets.scamp5.exact.norms import fits as norms_fit
from kalg.targets.scamp5.exact.norms import monomials as wave_monomials
from kalg.targets.scamp5.exact.twostep import P as SMALL_P
from kalg.targets.scamp5.exact.twostep import TwoStep
from kalg.targets.scamp5.exact.twostep import fingerprint as small_print
from kalg.targets.scamp5.exact.twostep import monomial as small_monomial
from kalg.targets.scamp5.machine.isa import NEWS, OP_SETS, REGISTERS, Dir, Instr

_SMALL_HALF = pow(2, -1, SMALL_P)

# ------------------------------------------------------------------ exact values

Taps = tuple[tuple[int, int, int], ...]
"""((x, y, numerator), ...) sorted by offset: the kernel sum numerator / 2^e at (x, y)."""


class _Pool:
    """Interned exact kernels: id -> (e, taps) meaning taps / 2^e, reduced (e = 0 or an odd
    numerator). Linear combinations are cached; both tables are capped (`capacity`)."""

    def __init__(self, capacity: int) -> None:
        self.values: list[tuple[int, Taps]] = []
        self.prints: list[int] = []
        self.ids: dict[tuple[int, Taps], int] = {}
        self.cache: dict[tuple, int] = {}
        self.capacity = capacity
        self.zero = self.intern(0, ())

    def intern(self, e: int, taps: Taps) -> int:
        while e > 0 and taps and all(n % 2 == 0 for _, _, n in taps):
            taps, e = tuple((x, y, n // 2) for x, y, n in taps), e - 1
        if not taps:
            e = 0
        key = (e, taps)
        found = self.ids.get(key)
        if found is None:
            if len(self.values) >= self.capacity:
                raise _Exhausted("memory")
            found = self.ids[key] = len(self.values)
            self.values.append(key)
            self.prints.append(fingerprint(e, taps))
        return found

    def lin(self, terms: tuple[tuple[int, int, int, int, int], ...]) -> int:
        """The id of sum p / 2^q * shift(value id, dx, dy) over the terms (p, q, id, dx, dy)."""
        found = self.cache.get(terms)
        if found is not None:
            return found
        top = max(self.values[i][0] + q for _, q, i, _, _ in terms)
        acc: dict[tuple[int, int], int] = {}
        for p, q, i, dx, dy in terms:
            e, taps = self.values[i]
            scale = p << (top - e - q)
            for x, y, n in taps:
                off = (x + dx, y + dy)
                acc[off] = acc.get(off, 0) + scale * n
        result = self.intern(top, tuple(sorted((x, y, n) for (x, y), n in acc.items() if n)))
        if len(self.cache) >= self.capacity:
            self.cache.clear()  # a pure cache: clearing it changes speed, never results
        self.cache[terms] = result
        return result

    def kernel(self, i: int) -> Kernel:
        e, taps = self.values[i]
        return Kernel.of({(x, y): Fraction(n, 1 << e) for x, y, n in taps})


PRIME = (1 << 61) - 1
_X, _Y = 1_000_003_457, 2_718_281_829
_HALF = pow(2, -1, PRIME)


def fingerprint(e: int, taps: Taps) -> int:
    """The kernel's polynomial evaluated at (X, Y) modulo a prime: shifts multiply it by
    X^dx Y^dy, sums add, halving multiplies by 1/2, so the value a macro would need can be
    looked up in O(1). Equal kernels have equal prints; a match is confirmed exactly."""
    return sum(n * pow(_X, x, PRIME) * pow(_Y, y, PRIME) for x, y, n in taps) \
        * pow(_HALF, e, PRIME) % PRIME


def _monomial(p: int, q: int, dx: int, dy: int) -> int:
    """The print of p / 2^q at (dx, dy)."""
    return p * pow(_HALF, q, PRIME) * pow(_X, dx, PRIME) * pow(_Y, dy, PRIME) % PRIME


class _Exhausted(Exception):
    """A search bound (nodes, memory or time) was reached."""


# ------------------------------------------------------------------ instructions as data

Term = tuple[int, int, str, int, int]
"""p, q, source register, dx, dy: p / 2^q times the source read at p + (dx, dy)."""


@dataclass(frozen=True, slots=True)
class _Template:
    instr: Instr
    reads: tuple[str, ...]
    writes: tuple[tuple[str, tuple[Term, ...] | None], ...]
    """(register, form) pairs; form None: left undefined (3-argument div's source)."""


def _instructions(op_set: str, registers: Sequence[str]) -> tuple[_Template, ...]:
    """Every legal instruction of `op_set` on `registers`, one per distinct effect, in a fixed
    order. `res` is left out (it writes zero)."""
    return _instruction_table(op_set, tuple(registers))


@functools.lru_cache(maxsize=8)
def _instruction_table(op_set: str, registers: tuple[str, ...]) -> tuple[_Template, ...]:
    """`_instructions`, made once per op set and register file in a process (4668 templates
    for op set all and six registers: about 0.05 s, as long as a small search itself)."""
    templates, seen = [], set()
    for cls in sorted(OP_SETS[op_set], key=lambda c: c.__name__):
        if cls.mnemonic == "res":
            continue
        kinds = [f.type for f in fields(cls)]
        choices = [list(Dir) if kind in ("Dir", Dir) else list(registers) for kind in kinds]
        for args in product(*choices):
            instr = cls(*args)
            if instr.violation() is not None:
                continue
            writes = tuple(sorted(
                (dest, None if form is None else tuple(sorted(_term(t) for t in form)))
                for dest, form in instr.effects() if dest != NEWS))
            if writes in seen:
                continue
            seen.add(writes)
            templates.append(_Template(instr, instr.reads(), writes))
    return tuple(templates)


def _term(t: tuple[Fraction, str, tuple[int, int]]) -> Term:
    coef, reg, (dx, dy) = t
    q = 0
    while coef.denominator != 1:
        coef, q = coef * 2, q + 1
    return (int(coef), q, reg, dx, dy)


# ------------------------------------------------------------------ the result


@dataclass(frozen=True)
class Outcome:
    """What the search established. `program` is a verified program of `length` instructions
    or None; `lower` is the proven lower bound (no program shorter than `lower` exists);
    `proven` is True exactly when `program` is a shortest program (`length == lower`)."""

    program: list[Instr] | None
    lower: int
    nodes: int
    stopped: str | None
    """None when the search finished; else which bound stopped it: nodes, memory or time."""
    register: str | None = None
    """The register `program` leaves the kernel in."""

    @property
    def proven(self) -> bool:
        return self.program is not None and len(self.program) == self.lower

    def describe(self, op_set: str, registers: int) -> str:
        """One line for a program header: what is proven, and for which op set and budget."""
        where = f"op set {op_set}, {registers} registers"
        if self.proven:
            return f"proven shortest ({where}, exhaustive search, {self.nodes} nodes)"
        bound = (f"no program shorter than {self.lower} instructions exists ({where})"
                 if self.lower > 0 else "nothing proven")
        reason = f"search bound reached ({self.stopped}, {self.nodes} nodes)"
        return f"{bound}, {reason}"


NORMS_FROM = 3
"""The norm bounds (`codegen.norms`) are tried on states with at least this many instructions
left (with two or one left the two-step test and the last instruction's inversion decide)."""

CAPACITY = 2_000_000
"""Default cap on stored kernels and transposition entries: bounds the search's memory whatever its
node budget (a count, like the budget)."""


def shortest_program(kernel: Kernel, *, registers: Sequence[str] = REGISTERS,
                     input_register: str = "A", output: str | None = "A", op_set: str = "all",
                     max_length: int = 12, nodes: int = NODES, capacity: int = CAPACITY,
                     seconds: float | None = None, keep_input: bool = False,
                     guided: bool = False) -> Outcome:
    """Search for the shortest program of at most `max_length` instructions that leaves
    `kernel` in `output` (input in `input_register`, only `registers`, macros of `op_set`);
    with `output` None, in any register (`Outcome.register` says which). With `keep_input`,
    only programs that never write the input register (it still holds the input at the end,
    for an instruction after them: `codegen.kept`); the output is then another register.
    `guided` tries first the first instructions whose values best match the kernel's taps:
    the same programs are searched (so the same proofs), a program is often found sooner.

    Deterministic for given bounds, unless `seconds` (a safety net) stops it. The returned
    program, if any, has passed kalg's exact and numeric verifiers."""
    if input_register not in registers or output not in (*registers, None):
        raise ValueError("the input and output registers must be in the register budget")
    if keep_input and output == input_register:
        raise ValueError("a program that keeps the input cannot leave its result there")
    search = _Search(kernel, tuple(registers), input_register, output, op_set, nodes, capacity,
                     seconds, keep_input=keep_input, guided=guided)
    return search.run(max_length)


class _Search:
    def __init__(self, kernel: Kernel, registers: tuple[str, ...], inp: str, out: str | None,
                 op_set: str, nodes: int, capacity: int, seconds: float | None,
                 symmetry: bool = True, dominance: bool = True, norms: bool = True,
                 keep_input: bool = False, guided: bool = False) -> None:
        self.kernel, self.registers, self.inp, self.out = kernel, registers, inp, out
        self.keep_input, self.guided = keep_input, guided
        self.target_taps: dict[tuple[int, int], int] | None = None
        self.root: list[int] | None = None
        self.op_set, self.max_nodes, self.capacity = op_set, nodes, capacity
        self.deadline = None if seconds is None else time.monotonic() + seconds
        self.pool = _Pool(capacity)
        self.index = {r: k for k, r in enumerate(registers)}
        self.target = self.pool.intern(*_exact(kernel))
        self.goal = ([k for r, k in self.index.items() if r != inp or not keep_input]
                     if out is None else [self.index[inp]] if out == inp else
                     [k for r, k in self.index.items() if r != inp])
        machine = _machine(op_set, registers)
        self.templates, self.form_list = machine.templates, machine.form_list
        self.masks, self.dests, self.values = machine.masks, machine.dests, machine.values
        self.by_defined = machine.by_defined
        self.single, self.coef, self.src = machine.single, machine.coef, machine.src
        # the plans depend only on the instruction set and these choices: shared by searches
        self.plans = machine.plans.setdefault((self.index[inp], dominance, keep_input), {})
        self.value_cache: dict[tuple, int] = {}
        self.shapes = machine.shapes(tuple(self.goal))
        if keep_input:  # nor as the last instruction (a division writes several registers)
            self.shapes = {shape: kept for shape, uses in self.shapes.items()
                           if (kept := [(k, w) for k, w in uses
                                        if self.index[inp] not in self.dests[k]])}
        self.table: dict[tuple, int] = {}
        self.nodes = 0
        target_e, target_taps = self.pool.values[self.target]
        self.target_e = target_e
        self.target_offsets = [(x, y) for x, y, _ in target_taps]
        self.solvers = self._solvers()
        self.target_print = self.pool.prints[self.target]
        self.forms = [tuple(_monomial(*term) for term in shape) for shape in self.shapes]
        self.facts: dict[int, tuple[int, int, tuple[int, ...]]] = {}
        self.sizes: dict[int, int] = {}
        self.target_size = sum(abs(n) for _, _, n in target_taps)
        self.two = TwoStep(machine.firsts, set(self.shapes), small_print(target_e, target_taps))
        self.small: dict[int, int] = {}
        self.symmetries = stabilizer(target_taps) if symmetry else ()
        self.dominance = dominance
        self.norms = NormBound(target_e, target_taps, len(registers), tap_steps) \
            if norms and norms_fit(self.target_size) else None
        self.images: list[dict[int, int]] = [{} for _ in self.symmetries]
        self.wave_coef = machine.wave_coef
        self.scaled: dict[int, np.ndarray] = {}
        self.wave_plans: dict[int, tuple[np.ndarray, np.ndarray]] = {}

    # ---------------------------------------------------------------- driver
    def run(self, max_length: int) -> Outcome:
        regs = [-1] * len(self.registers)
        regs[self.index[self.inp]] = self.pool.intern(0, ((0, 0, 1),))
        writer = [-1] * len(self.registers)
        lower, stopped = 0, None
        try:
            start = self._bound(regs, writer, [])
            lower = start
            for depth in range(start, max_length + 1):
                lower = depth
                found = self._dfs(regs, writer, [], [], depth)
                if found is not None:
                    program, register = self._finish(found)
                    return Outcome(program, depth, self.nodes, None, register)
            lower = max_length + 1
        except _Exhausted as why:
            stopped = str(why)
        return Outcome(None, lower, self.nodes, stopped)

    def _tick(self, count: int = 1) -> None:
        before, self.nodes = self.nodes, self.nodes + count
        if self.nodes > self.max_nodes:
            raise _Exhausted("nodes")
        if self.deadline is not None and self.nodes >> 10 != before >> 10 and \
                time.monotonic() > self.deadline:
            raise _Exhausted("time")

    # ---------------------------------------------------------------- lower bounds
    def _bound(self, regs: list[int], writer: list[int], used: list[bool]) -> int:
        if any(regs[g] == self.target for g in self.goal):
            return 0 if sum(not u for u in used) <= 1 else 1
        facts = [self._facts(v) for v in regs if v >= 0]
        if not facts:
            return 1 << 30  # nothing left to compute from
        halvings = max(0, self.target_e - max(f[0] for f in facts))
        most, taps, triples = max(f[1] for f in facts), len(self.target_offsets), 0
        while most < taps:
            most, triples = most * 3, triples + 1
        counts = sorted((self._facts(v)[1] if v >= 0 else 0 for v in regs), reverse=True)
        sizes = sorted((self._size(v) if v >= 0 else 0 for v in regs), reverse=True)
        far = max(map(min, zip(*(f[2] for f in facts), strict=True)))
        unread = len({w for w in writer if w >= 0 and not used[w]})
        # Only the division macros halve, and they neither move a value nor add taps: the
        # halvings and the other instructions' work are done by different instructions.
        work = halvings + max(triples, (far + 1) // 2)
        return max(1, work, tap_steps(tuple(counts), taps),
                   tap_steps(tuple(sizes), self.target_size), unread // 2)

    def _size(self, v: int) -> int:
        """Value v's sum of absolute coefficients in units of the target's 2^-e, rounded up
        (an over-estimate only weakens the bound). Every macro's coefficients are at most 1
        in magnitude, so, like the number of taps, a result's size is at most its operands'
        together (`tap_steps` applies to sizes as to tap counts; cached)."""
        found = self.sizes.get(v)
        if found is None:
            e, taps = self.pool.values[v]
            total, d = sum(abs(n) for _, _, n in taps), self.target_e - e
            found = self.sizes[v] = total << d if d >= 0 else -((-total) >> -d)
        return found

    def _small(self, v: int) -> int:
        """The print of value v for `TwoStep` (cached)."""
        found = self.small.get(v)
        if found is None:
            found = self.small[v] = small_print(*self.pool.values[v])
        return found

    def _facts(self, v: int) -> tuple[int, int, tuple[int, ...]]:
        """Of value v: halvings, number of taps, and for each target tap the distance
        |dx| + |dy| to v's nearest tap (cached)."""
        found = self.facts.get(v)
        if found is None:
            e, taps = self.pool.values[v]
            near = tuple(min(abs(x - a) + abs(y - b) for a, b, _ in taps)
                         for x, y in self.target_offsets)
            found = self.facts[v] = (e, len(taps), near)
        return found

    # ---------------------------------------------------------------- search
    def _dfs(self, regs: list[int], writer: list[int], used: list[bool], path: list,
             left: int) -> list | None:
        self._tick()
        if left == 2 and not self.two.possible([self._small(v) for v in regs if v >= 0]):
            return None
        bound = self._bound(regs, writer, used)
        if bound == 0:
            return list(path)
        if bound > left:
            return None
        key = self._key(regs, writer, used)
        if self.table.get(key, -1) >= left:
            return None
        if left >= NORMS_FROM and self.norms is not None and self.norms.needs_more(
                [self._units(v) for v in regs if v >= 0], left):
            self._store(key, left)
            return None
        if left == 1:
            found = self._last(regs)
            if found is not None:
                return [*path, found]
        else:
            found = self._expand(regs, writer, used, path, left)
            if found is not None:
                return found
        self._store(key, left)
        return None

    def _store(self, key: tuple, left: int) -> None:
        """Remember that the state `key` has no program of `left` instructions (while the
        table has room)."""
        if len(self.table) < self.capacity:
            self.table[key] = left

    def _units(self, v: int) -> np.ndarray:
        """Value v's norms for `codegen.norms` (cached there)."""
        return self.norms.units(v, *self.pool.values[v])

    def _expand(self, regs, writer, used, path, left):
        inp = self.index[self.inp]
        free = [k for k in range(len(regs)) if regs[k] < 0 and k != inp]
        depth, value_of = len(path), self._value
        # Two instructions left: the last must read the next one's result w (nothing else can
        # use it), so w must be a value that makes the target in one instruction with the
        # values held now. Checked for instructions with one result, by prints (necessary).
        need = self._needed(regs) if left == 2 else None
        # Three left: a one-result instruction writing w leads nowhere if no two instructions
        # make the target even from the values held now and w (decided once per value w).
        defined = sum(1 << k for k, v in enumerate(regs) if v >= 0)
        order, singles, halving = self._plan(defined, free)
        if self.guided and not path:  # the root: the same state in every iteration
            if self.root is None:
                self.root = self._guided(order, regs)
            order = self.root
        dropped = self._dropped(regs, singles, halving) if left == 3 else ()
        for k in order:
            if k in dropped:
                continue
            template = self.templates[k]
            _, reads, writes = template
            values = self.values[k]
            if need is not None and len(values) == 1 and self._unneeded(
                    value_of(values[0], regs), need):
                continue
            new = list(regs)
            zero = False
            for dest, fid, getter in values:
                value = -1 if fid < 0 else value_of((dest, fid, getter), regs)
                if value == self.pool.zero:
                    zero = True
                    break
                new[dest] = value
            if zero or new == regs:
                continue
            if left == 3 and not self.two.possible([self._small(v) for v in new if v >= 0]):
                self._tick()  # a child pruned here still counts: nodes measure the work
                continue
            state = self._after(reads, writes, writer, used, depth)
            if state is None:
                continue
            new_writer, new_used = state
            path.append(template)
            found = self._dfs(new, new_writer, new_used, path, left - 1)
            path.pop()
            if found is not None:
                return found
        return None

    def _guided(self, order: list[int], regs: list[int]) -> list[int]:
        """`order` with the templates whose new values best match the target first
        (`_match`; ties in the fixed order): the order in which the first instruction is
        tried by a search that looks for a program rather than a proof (the same tree, so
        the same answer once it is searched to the end)."""
        scores = []
        for k in order:
            made = [self._value(write, regs) for write in self.values[k] if write[1] >= 0]
            scores.append(max((self._match(v) for v in made), default=-(1 << 30)))
        return [k for _, _, k in sorted(zip((-s for s in scores), range(len(order)), order,
                                            strict=True))]

    def _match(self, v: int) -> int:
        """How well value v, scaled and shifted, covers taps of the target: over every
        alignment of one of its taps with one of the target's (which fixes the scale and the
        shift d), the most of its taps t with target(t + d) = scale * v(t), less the others
        (on the numerators: target(t + d) * c = tc * v(t) for the aligned pair c, tc)."""
        if self.target_taps is None:
            self.target_taps = {(x, y): n for x, y, n in self.pool.values[self.target][1]}
        target, mine = self.target_taps, self.pool.values[v][1]
        best = -len(mine)
        for (tx, ty), tc in target.items():
            for x, y, c in mine:
                dx, dy = tx - x, ty - y
                hits = sum(target.get((a + dx, b + dy), 0) * c == tc * n for a, b, n in mine)
                best = max(best, 2 * hits - len(mine))
        return best

    def _plan(self, defined: int, free: list[int]
              ) -> tuple[list[int], np.ndarray, dict[int, list[int]]]:
        """The templates a state with registers `defined` (a bit mask) may apply, in the fixed
        order, less those that would write an undefined register out of turn (undefined
        registers are interchangeable: they are filled in order) and, with `keep_input`, those
        writing the input register; as an array, those of them with one result; and the
        others (the division macros) by the register they halve (cached per mask)."""
        found = self.plans.get(defined)
        if found is None:
            inp, order = self.index[self.inp], []
            for k in self._usable(defined):
                fresh = sorted(d for d in self.dests[k] if not defined >> d & 1 and d != inp)
                if fresh and fresh != free[:len(fresh)]:
                    continue
                if self.dominance and self._overwrites(k, defined, free):
                    continue
                if self.keep_input and inp in self.dests[k]:
                    continue
                order.append(k)
            singles = np.array([k for k in order if self.single[k]], dtype=np.int64)
            halving: dict[int, list[int]] = {}
            for k in order:
                if not self.single[k]:
                    halving.setdefault(self.templates[k][1][0], []).append(k)
            found = self.plans[defined] = (order, singles, halving)
        return found

    def _overwrites(self, k: int, defined: int, free: list[int]) -> bool:
        """Whether template k overwrites a value it need not: it writes a defined register
        other than the input's (one it does not read, or the only result of a one-result
        template) while a free register other than the input's is left unwritten by it.
        Such a program P has a sibling P' of the same length that writes that free register f
        instead and swaps the names f and r in every later instruction: the same reads see
        the same values (f is undefined before, so later reads of f in P are of values
        written after; they read r in P', where the kept old value is overwritten then), a
        one-result macro's constraints only forbid its destination to equal some operands
        (a fresh f is none), and the renaming leaves the input register alone, so the goal
        register is unchanged. P' keeps one more value, so it is never farther from the
        target; searching only P' loses no shortest program (exactness is tested against
        the search without this rule)."""
        inp, dests = self.index[self.inp], self.dests[k]
        spare = [f for f in free if f not in dests]
        if not spare:
            return False
        _, reads, writes = self.templates[k]
        for dest, form in writes:
            if form is None or dest == inp or not defined >> dest & 1:
                continue
            if self.single[k] or dest not in reads:
                return True
        return False

    def _dropped(self, regs: list[int], singles: np.ndarray,
                 halving: dict[int, list[int]]) -> set[int]:
        """Three left: the one-result templates whose value w leaves no two instructions that
        make the target even from the values held and w (`TwoStep`, decided once per print
        of w). The prints of every w come at once from the held values' prints (prints are
        linear: a form's print is its terms' monomials times its sources' prints). Each
        template dropped counts as a node (nodes measure the work)."""
        prints = np.zeros(len(regs) + 1, dtype=np.int64)  # the last slot: an absent term
        for k, v in enumerate(regs):
            if v >= 0:
                prints[k] = self._small(v)
        held = [int(prints[k]) for k, v in enumerate(regs) if v >= 0]
        dropped: set[int] = set()
        if len(singles) and self.norms is not None:
            # the torus seminorms first (w's value at each point comes linearly from the
            # held values', like its print): a w too small to finish in two is dropped
            small = ~self._within_two(regs, singles)
            dropped.update(singles[small].tolist())
            singles = singles[~small]
        if len(singles):
            coef, src = self.coef[singles], self.src[singles]
            made = (coef[:, 0] * prints[src[:, 0]] % SMALL_P + coef[:, 1] * prints[src[:, 1]]
                    % SMALL_P + coef[:, 2] * prints[src[:, 2]] % SMALL_P) % SMALL_P
            distinct, where = np.unique(made, return_inverse=True)
            ok = self.two.possible_with(held, distinct)[where.ravel()]
            dropped.update(singles[~ok].tolist())
        # A division writes x/2, -x/2 and copies of x (held already): its state's values are
        # among the held ones and those two, so it is dropped when the test fails even on
        # all of them (the test can only pass on more values), once per halved register.
        for r, members in halving.items():
            half = int(prints[r]) * _SMALL_HALF % SMALL_P
            if not self.two.possible([*held, half, (SMALL_P - half) % SMALL_P]):
                dropped.update(members)
        self._tick(len(dropped))
        return dropped

    def _within_two(self, regs: list[int], singles: np.ndarray) -> np.ndarray:
        """Per one-result template of `singles`: whether its value w passes
        `NormBound.within_two` with the values held (w at each torus point computed from
        the held values' points: a form's value there is its terms' monomials times its
        sources' values)."""
        bound = self.norms
        units = [self._units(v)[len(bound.useful):][bound.strong] for v in regs if v >= 0]
        return self.norms.within_two(np.array(units, dtype=float),
                                     *self._wave_values(regs, singles))

    def _wave_values(self, regs: list[int], singles: np.ndarray
                     ) -> tuple[np.ndarray, np.ndarray]:
        """Per template of `singles`: its value w at the useful torus points, scaled as
        `NormBound.scaled` (computed from the held values' points), and a bound on the
        floating-point error of that (the sources' errors together: |coefficients| <= 1)."""
        bound = self.norms
        points = len(bound.strong)
        at = np.zeros((len(regs) + 1, points), dtype=complex)  # the last: an absent term
        err = np.zeros((len(regs) + 1, points))
        for k, v in enumerate(regs):
            if v >= 0:
                found = self.scaled.get(v)
                if found is None:
                    found = self.scaled[v] = bound.scaled(*self.pool.values[v])
                at[k], err[k] = found
        key = id(singles)  # the plans' arrays are cached per register mask, so is this
        found = self.wave_plans.get(key)
        if found is None:
            found = self.wave_plans[key] = (singles,
                                            self.wave_coef[singles][:, :, bound.waves[
                                                bound.strong]])
        coef = found[1]  # (templates, 3, points)
        src = self.src[singles]
        made = (coef[:, 0] * at[src[:, 0]] + coef[:, 1] * at[src[:, 1]]
                + coef[:, 2] * at[src[:, 2]])
        return made, err[src[:, 0]] + err[src[:, 1]] + err[src[:, 2]]

    def _unneeded(self, value: int, need: set[int]) -> bool:
        """Two left: whether the last instruction cannot read `value` to make the target (its
        print is not among the values `need` holds, and it is not the target itself)."""
        return self.pool.prints[value] not in need and value != self.target

    def _usable(self, defined: int) -> list[int]:
        """Indices of the templates that read only registers in the bit mask `defined`."""
        found = self.by_defined.get(defined)
        if found is None:
            found = self.by_defined[defined] = [k for k, m in enumerate(self.masks)
                                                if m & ~defined == 0]
        return found

    def _value(self, write: tuple, regs: list[int]) -> int:
        """The value a compiled write (dest, form id, source getter) gives from `regs`."""
        _, fid, getter = write
        key = (fid, getter(regs))
        found = self.value_cache.get(key)
        if found is None:
            form = self.form_list[fid]
            found = self.pool.lin(tuple((p, q, regs[s], dx, dy) for p, q, s, dx, dy in form))
            if len(self.value_cache) >= self.capacity:
                self.value_cache.clear()  # a pure cache
            self.value_cache[key] = found
        return found

    @staticmethod
    def _after(reads, writes, writer, used, depth):
        """Writer and used flags after an instruction; None if it leaves an earlier
        instruction's results all overwritten unread (that instruction was not needed)."""
        new_used = list(used)
        for r in reads:
            if writer[r] >= 0:
                new_used[writer[r]] = True
        new_writer = list(writer)
        for dest, _ in writes:
            new_writer[dest] = depth
        new_used.append(False)
        lost = {writer[d] for d, _ in writes if writer[d] >= 0 and not new_used[writer[d]]}
        for w in lost:
            if w not in new_writer:
                return None
        return new_writer, new_used

    def _key(self, regs, writer, used) -> tuple:
        """The transposition key: equal for states equal up to renaming the registers other
        than the input's and, when the target has grid symmetries, up to those symmetries
        (the least key over the state's images: the stabilizer is a group, so every state
        of an orbit gets the same key; see `codegen.dihedral`)."""
        key = self._plain_key(regs, writer, used)
        for g, images in zip(self.symmetries, self.images, strict=True):
            moved = [v if v < 0 else self._image(v, g, images) for v in regs]
            key = min(key, self._plain_key(moved, writer, used))
        return key

    def _image(self, v: int, g: tuple[int, int, int, int], images: dict[int, int]) -> int:
        """The id of value v moved by the grid symmetry g (cached per g)."""
        found = images.get(v)
        if found is None:
            e, taps = self.pool.values[v]
            found = images[v] = self.pool.intern(e, image(taps, g))
        return found

    def _plain_key(self, regs, writer, used) -> tuple:
        inp = self.index[self.inp]
        groups: dict[int, list[int]] = {}
        for k, w in enumerate(writer):
            if w >= 0 and not used[w]:
                groups.setdefault(w, []).append(k)
        sig = {}
        for members in groups.values():
            s = (tuple(sorted(regs[m] for m in members)), inp in members)
            for m in members:
                sig[m] = s
        items = [(regs[k], sig.get(k, ((), False))) for k in range(len(regs))]
        rest = sorted(items[k] for k in range(len(regs)) if k != inp)
        return (items[inp], tuple(rest))

    def _solvers(self) -> list[tuple[int, tuple[int, ...], tuple, list]]:
        """Per shape: the print of the last source as (constant, multipliers of the head
        sources), from target = sum of head terms + p/2^q shift(v, dx, dy)."""
        tp = self.pool.prints[self.target]
        solvers = []
        for shape, uses in self.shapes.items():
            *head, (p, q, dx, dy) = shape
            inverse = pow(_monomial(p, q, dx, dy), -1, PRIME)
            constant = tp * inverse % PRIME
            factors = tuple(-_monomial(hp, hq, hdx, hdy) * inverse % PRIME
                            for hp, hq, hdx, hdy in head)
            solvers.append((constant, factors, shape, uses))
        return solvers

    def _needed(self, regs: list[int]) -> set[int] | None:
        """Prints of every value w such that some form makes the target from w and values
        in `regs`, w in any nonempty set of the form's positions (subx(y, W, d, W) reads the
        new register twice); None (no filter) when some set of positions has coefficients
        that cancel and the other positions alone can give the target."""
        prints = self.pool.prints
        defined = [prints[v] for v in regs if v >= 0]
        need = set()
        for multipliers in self.forms:
            for size in range(1, len(multipliers) + 1):
                for positions in combinations(range(len(multipliers)), size):
                    others = [m for i, m in enumerate(multipliers) if i not in positions]
                    d = sum(multipliers[i] for i in positions) % PRIME
                    inverse = pow(d, -1, PRIME) if d else 0
                    for sources in product(defined, repeat=len(others)):
                        rest = sum(m * ps for m, ps in zip(others, sources, strict=True))
                        if d == 0:
                            if (self.target_print - rest) % PRIME == 0:
                                return None
                            continue
                        need.add((self.target_print - rest) * inverse % PRIME)
        return need

    def _last(self, regs: list[int]) -> tuple | None:
        """A template that writes the target into a goal register from `regs`, or None.
        For each shape of form, all but the last source are tried and the last is solved for
        (by prints, then confirmed exactly)."""
        prints = self.pool.prints
        holders: dict[int, list[int]] = {}
        defined = []
        for k, v in enumerate(regs):
            if v >= 0:
                holders.setdefault(prints[v], []).append(k)
                defined.append((k, prints[v]))
        for constant, factors, _, uses in self.solvers:
            for sources in product(defined, repeat=len(factors)):
                need = (constant + sum(f * ps for f, (_, ps) in zip(factors, sources,
                                                                    strict=True))) % PRIME
                if need in holders:
                    found = self._confirm(regs, tuple(s for s, _ in sources), holders[need],
                                          uses)
                    if found is not None:
                        return found
        return None

    def _confirm(self, regs, head, lasts, uses) -> tuple | None:
        """The template among `uses` whose sources are `head` + one of `lasts` and which
        writes exactly the target (computed exactly), or None."""
        lin = self.pool.lin
        for last in lasts:
            chosen = (*head, last)
            for k, w in uses:
                form = self.templates[k][2][w][1]
                if tuple(s for _, _, s, _, _ in form) != chosen:
                    continue
                value = lin(tuple((p, q, regs[s], dx, dy) for p, q, s, dx, dy in form))
                if value == self.target:
                    return self.templates[k]
        return None

    # ---------------------------------------------------------------- result
    def _finish(self, path: list) -> tuple[list[Instr], str]:
        program = [instr for instr, _, _ in path]
        got = _final_register(program, self.kernel, self.inp, self.registers, self.goal,
                              self.index)
        if self.out is not None and got != self.out:
            program = [_rename(i, {got: self.out, self.out: got}) for i in program]
            got = self.out
        verify(program, self.kernel, got, self.inp, self.op_set, self.registers)
        return program, got


@functools.lru_cache(maxsize=65536)
def tap_steps(counts: tuple[int, ...], taps: int) -> int:
    """A lower bound on the instructions that make a value of `taps` taps from registers
    holding values of `counts` taps (sorted, largest first; 0 for an undefined register).

    A value's taps number at most the sum of its terms' operands' taps (taps may cancel, never
    multiply), so on tap counts every macro is dominated by one of two moves: write
    max(sum of the three largest counts, twice the largest) into the smallest register (an
    add of three registers, or a two-term form reading one register twice, bounds every
    one-result macro), or copy one register's count into up to three others (the division
    macros, whose results are +-x/2 and copies of x; a register keeps the larger count, an
    upper bound either way). The bound is the fewest such moves
    after which some register reaches `taps` (breadth first over sorted count tuples, counts
    capped at `taps`)."""
    level, steps = {counts}, 0
    while not any(state[0] >= taps for state in level):
        following = set()
        for state in level:
            made = min(taps, max(sum(state[:3]), 2 * state[0]))
            following.add(_sorted_desc((*state[:-1], made)))
            for i, c in enumerate(state):
                others = sorted((j for j in range(len(state)) if j != i),
                                key=lambda j: state[j])[:3]
                following.add(_sorted_desc(tuple(max(c, state[j]) if j in others
                                                 else state[j] for j in range(len(state)))))
        if following <= level:
            return 1 << 30  # no move makes more taps (nothing defined)
        level, steps = following, steps + 1
    return steps


def _sorted_desc(counts: tuple[int, ...]) -> tuple[int, ...]:
    return tuple(sorted(counts, reverse=True))


class _Machine:
    """The search's instruction tables for one op set and register list (independent of the
    kernel, built once per process: `_machine`)."""

    def __init__(self, op_set: str, registers: tuple[str, ...]) -> None:
        self.index = {r: k for k, r in enumerate(registers)}
        self.templates = [self._compile(t) for t in _instructions(op_set, registers)]
        self._compile_values()
        self.firsts = {tuple((p, q, dx, dy) for p, q, _, dx, dy in form)
                       for _, _, writes in self.templates for _, form in writes
                       if form is not None}
        self._shapes: dict[tuple[int, ...], dict] = {}
        self._compile_prints(len(registers))

    def _compile_prints(self, n: int) -> None:
        """Per template with one result: whether it has one (`single`), and its form as term
        monomials (`codegen.twostep` prints, 0 for an absent term) and source registers (n:
        the absent term's slot), for computing all results' prints at once."""
        self.single = [len(w) == 1 and w[0][1] is not None for _, _, w in self.templates]
        self.coef = np.zeros((len(self.templates), 3), dtype=np.int64)
        self.src = np.full((len(self.templates), 3), n, dtype=np.int64)
        # the same terms at the torus points of `codegen.norms` (complex)
        self.wave_coef = np.zeros((len(self.templates), 3, len(POINTS)), dtype=complex)
        for k, (_, _, writes) in enumerate(self.templates):
            if self.single[k]:
                for i, (p, q, source, dx, dy) in enumerate(writes[0][1]):
                    self.coef[k, i], self.src[k, i] = small_monomial(p, q, dx, dy), source
                    self.wave_coef[k, i] = wave_monomials(p, q, dx, dy)

    def _compile(self, t: _Template) -> tuple:
        reads = tuple(self.index[r] for r in t.reads)
        writes = tuple((self.index[d], None if form is None else
                        tuple((p, q, self.index[s], dx, dy) for p, q, s, dx, dy in form))
                       for d, form in t.writes)
        return (t.instr, reads, writes)

    def shapes(self, goal: tuple[int, ...]) -> dict[tuple, list[tuple[int, int]]]:
        """Every form a goal register can be written with, by shape (the form with its source
        registers left out) -> [(template index, write index)] (cached per goal)."""
        found = self._shapes.get(goal)
        if found is None:
            found = self._shapes[goal] = {}
            for k, (_, _, writes) in enumerate(self.templates):
                for w, (dest, form) in enumerate(writes):
                    if form is not None and dest in goal:
                        shape = tuple((p, q, dx, dy) for p, q, _, dx, dy in form)
                        found.setdefault(shape, []).append((k, w))
        return found

    def _compile_values(self) -> None:
        """Per template: its reads as a bit mask, its destinations, and each write as (dest,
        form id, getter of the source registers' values); form id -1 leaves it undefined."""
        ids: dict[tuple, int] = {}
        self.form_list: list[tuple] = []
        self.masks, self.dests, self.values = [], [], []
        for _, reads, writes in self.templates:
            self.masks.append(sum(1 << r for r in reads))
            self.dests.append(tuple(d for d, _ in writes))
            compiled = []
            for dest, form in writes:
                if form is None:
                    compiled.append((dest, -1, None))
                    continue
                shape = tuple((p, q, 0, dx, dy) for p, q, _, dx, dy in form)
                sources = tuple(s for _, _, s, _, _ in form)
                fid = ids.get((shape, sources))
                if fid is None:
                    fid = ids[(shape, sources)] = len(self.form_list)
                    self.form_list.append(form)
                compiled.append((dest, fid, itemgetter(*sources)))
            self.values.append(tuple(compiled))
        self.by_defined: dict[int, list[int]] = {}
        self.plans: dict[tuple, dict] = {}



@cache
def _machine(op_set: str, registers: tuple[str, ...]) -> _Machine:
    return _Machine(op_set, registers)


def _exact(kernel: Kernel) -> tuple[int, Taps]:
    taps = kernel.trimmed().taps
    e = 0
    while any((Fraction(c) * (1 << e)).denominator != 1 for c in taps.values()):
        e += 1
    return e, tuple(sorted((x, y, int(Fraction(c) * (1 << e))) for (x, y), c in taps.items()))


def _final_register(program, kernel, inp, registers, goal, index) -> str:
    from kalg.targets.scamp5.machine.symbolic import execute
    state = execute(program, inp)
    for r in registers:
        if index[r] in goal and state.get(r) is not None and state[r].same_values(kernel):
            return r
    raise AssertionError("exhaustive search: the found program does not compute the kernel")


def _rename(instr: Instr, swap: dict[str, str]) -> Instr:
    args = [getattr(instr, f.name) for f in fields(instr)]
    return type(instr)(*[a if isinstance(a, Dir) else swap.get(a, a) for a in args])


VERIFY_SHAPE = (32, 32)


def verify(program: list[Instr], kernel: Kernel, out: str, inp: str, op_set: str,
            registers: Sequence[str]) -> None:
    """Exact (symbolic) and numeric (simulated) checks, as for every program kalg prints."""
    from kalg.targets.scamp5.machine.simulator import verify_numeric
    verify_program(program, {out: kernel}, inp, op_set, registers)
    image = np.random.default_rng(0).uniform(-1, 1, VERIFY_SHAPE)
    verify_numeric(program, {out: kernel}, image, inp)
