"""The SCAMP-5 analogue instruction model: registers, directions, one immutable type per macro.

Single source of truth for code generation, program text and both simulators
(../shared/docs/scamp5-isa.md). Each instruction states its effect as data (`effects`): a list of
register assignments whose right-hand sides are linear forms over the *old* register values at
neighbouring offsets. The exact and numeric simulators only evaluate those forms, so they cannot
disagree about what an instruction means.

Where the spec is silent, kalg chooses (and both simulators follow, since they read `effects`):

* NEWS after a macro the spec does not list holds the negated value that crossed the bus last:
  `mov2x` −x0(p+d1+d2); `subx`/`sub2x` −x0 at the moved offset (only x0 travels, as in `movx`);
  `add2x` −(x0+x1)(p+d1+d2); `divq` −x0/2; `diva` −y0_old/2; 4-argument `div` −x0/2.
  No instruction reads NEWS, so for a program its value is observable only at the end.
* `add2x`/`sub2x` take any two directions: the spec constrains only `mov2x` (d1 = d2 or
  d1 ⟂ d2); opposite directions are legal there and cancel (net offset zero).
* The source of a 3-argument `div` is left undefined (`POISON`): the spec says it is destroyed.
* `abs(y, x0)` (the vendor's macro, docs/pipelines.md "The abs macro") is the one instruction
  that is not linear: its `effects` give the linear form whose absolute value it writes, and
  `pointwise` names the function (`"abs"`). The numeric simulator applies it; the exact
  simulator of kernels (`symbolic.py`) refuses it, `piecewise.py` executes it. It is in no op
  set: the kernel searches never use it, only pipelines' lowering does.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, fields, replace
from enum import StrEnum
from fractions import Fraction
from typing import ClassVar

from kalg.targets.scamp5.registers import REGISTERS as REGISTERS  # the machine's, re-exported
from kalg.targets.scamp5.registers import SIMULATED_REGISTERS

NEWS = "NEWS"
"""The neighbour-exchange register: written by most macros, never named by a program."""


class Dir(StrEnum):
    """A direction names the neighbour that is *read*.

    movx(A, B, north) sets A(p) = B(p + (0, +1)).
    """

    NORTH = "north"
    EAST = "east"
    SOUTH = "south"
    WEST = "west"

    @property
    def vector(self) -> tuple[int, int]:
        return _VECTORS[self]

    def opposite(self) -> Dir:
        return _OPPOSITE[self]

    @staticmethod
    def of_vector(dx: int, dy: int) -> Dir:
        return _BY_VECTOR[(dx, dy)]


_VECTORS = {Dir.NORTH: (0, 1), Dir.EAST: (1, 0), Dir.SOUTH: (0, -1), Dir.WEST: (-1, 0)}
_BY_VECTOR = {v: d for d, v in _VECTORS.items()}
_OPPOSITE = {Dir.NORTH: Dir.SOUTH, Dir.SOUTH: Dir.NORTH, Dir.EAST: Dir.WEST, Dir.WEST: Dir.EAST}

Offset = tuple[int, int]
Term = tuple[Fraction, str, Offset]
"""coefficient · register read at p + offset"""
POISON: tuple[Term, ...] | None = None
"""Right-hand side of a register left undefined (the source of a 3-argument div)."""
Effect = tuple[str, tuple[Term, ...] | None]

_REGISTER_NAMES = frozenset(SIMULATED_REGISTERS)

HALF = Fraction(1, 2)
ONE = Fraction(1)
ORIGIN = (0, 0)


def _add(a: Offset, b: Offset) -> Offset:
    return (a[0] + b[0], a[1] + b[1])


def _neg_form(form: tuple[Term, ...]) -> tuple[Term, ...]:
    return tuple((-c, r, o) for c, r, o in form)


class Instr:
    """Base of every macro. Dataclass fields are the arguments in SCAMP-5d text order."""

    __slots__ = ()
    mnemonic: ClassVar[str]
    bus: ClassVar[int] = 2
    """Negating analogue bus steps (noise and energy proxy)."""

    def args(self) -> tuple[str, ...]:
        return tuple(str(getattr(self, f.name)) for f in fields(self))  # type: ignore[arg-type]

    def __str__(self) -> str:
        return f"{self.mnemonic}({', '.join(self.args())});"

    def registers(self) -> tuple[str, ...]:
        return tuple(a for a in self.args() if a in _REGISTER_NAMES)

    def writes(self) -> tuple[str, ...]:
        return tuple(r for r, _ in self.effects() if r != NEWS)

    def reads(self) -> tuple[str, ...]:
        seen: dict[str, None] = {}
        for _, form in self.effects():
            for _, reg, _ in form or ():
                seen[reg] = None
        return tuple(seen)

    def effects(self) -> list[Effect]:
        raise NotImplementedError

    def renamed(self, mapping: dict[str, str]) -> Instr:
        """The same instruction with its registers renamed by `mapping` (others kept)."""
        changes = {f.name: mapping[v] for f in fields(self)  # type: ignore[arg-type]
                   if isinstance(v := getattr(self, f.name), str) and v in mapping}
        return replace(self, **changes) if changes else self  # type: ignore[type-var]

    def violation(self) -> str | None:
        """The constraint this instruction breaks, in words, or None."""
        return None

    def pointwise(self, dest: str) -> str | None:
        """The function applied to the linear form `effects` gives for `dest` ("abs"), or None
        where the register gets the form itself (every linear macro)."""
        return None


def _distinct(*regs: str) -> bool:
    return len(set(regs)) == len(regs)


@dataclass(frozen=True, slots=True)
class Mov(Instr):
    y: str
    x0: str
    mnemonic: ClassVar[str] = "mov"

    def effects(self) -> list[Effect]:
        return [(self.y, ((ONE, self.x0, ORIGIN),)), (NEWS, ((-ONE, self.x0, ORIGIN),))]


@dataclass(frozen=True, slots=True)
class Res(Instr):
    y: str
    mnemonic: ClassVar[str] = "res"

    def effects(self) -> list[Effect]:
        return [(self.y, ()), (NEWS, ())]


@dataclass(frozen=True, slots=True)
class Neg(Instr):
    y: str
    x0: str
    mnemonic: ClassVar[str] = "neg"

    def effects(self) -> list[Effect]:
        return [(self.y, ((-ONE, self.x0, ORIGIN),)), (NEWS, ())]

    def violation(self) -> str | None:
        return None if self.y != self.x0 else "neg needs y != x0"


@dataclass(frozen=True, slots=True)
class Add(Instr):
    """2-operand add: y := x0 + x1."""

    y: str
    x0: str
    x1: str
    mnemonic: ClassVar[str] = "add"

    def effects(self) -> list[Effect]:
        form = ((ONE, self.x0, ORIGIN), (ONE, self.x1, ORIGIN))
        return [(self.y, form), (NEWS, _neg_form(form))]

    def violation(self) -> str | None:
        return None if self.x0 != self.x1 else "add needs two different operands (x0 != x1)"


@dataclass(frozen=True, slots=True)
class Add3(Instr):
    """3-operand add: y := x0 + x1 + x2."""

    y: str
    x0: str
    x1: str
    x2: str
    mnemonic: ClassVar[str] = "add"

    def effects(self) -> list[Effect]:
        form = tuple((ONE, r, ORIGIN) for r in (self.x0, self.x1, self.x2))
        return [(self.y, form), (NEWS, _neg_form(form))]

    def violation(self) -> str | None:
        if _distinct(self.x0, self.x1, self.x2):
            return None
        return "3-operand add needs pairwise different operands"


@dataclass(frozen=True, slots=True)
class Sub(Instr):
    y: str
    x0: str
    x1: str
    mnemonic: ClassVar[str] = "sub"

    def effects(self) -> list[Effect]:
        form = ((ONE, self.x0, ORIGIN), (-ONE, self.x1, ORIGIN))
        return [(self.y, form), (NEWS, ((-ONE, self.x0, ORIGIN),))]

    def violation(self) -> str | None:
        return None if self.y != self.x1 else "sub needs y != x1"


@dataclass(frozen=True, slots=True)
class Movx(Instr):
    y: str
    x0: str
    d: Dir
    mnemonic: ClassVar[str] = "movx"

    def effects(self) -> list[Effect]:
        v = self.d.vector
        return [(self.y, ((ONE, self.x0, v),)), (NEWS, ((-ONE, self.x0, v),))]


@dataclass(frozen=True, slots=True)
class Mov2x(Instr):
    y: str
    x0: str
    d1: Dir
    d2: Dir
    mnemonic: ClassVar[str] = "mov2x"

    def effects(self) -> list[Effect]:
        v = _add(self.d1.vector, self.d2.vector)
        return [(self.y, ((ONE, self.x0, v),)), (NEWS, ((-ONE, self.x0, v),))]

    def violation(self) -> str | None:
        if self.d2 == self.d1.opposite():
            return "mov2x needs d1 = d2 or d1 perpendicular to d2"
        return None


@dataclass(frozen=True, slots=True)
class Addx(Instr):
    """y(p) := x0(p+d) + x1(p+d): both operands move."""

    y: str
    x0: str
    x1: str
    d: Dir
    mnemonic: ClassVar[str] = "addx"

    def effects(self) -> list[Effect]:
        v = self.d.vector
        form = ((ONE, self.x0, v), (ONE, self.x1, v))
        return [(self.y, form), (NEWS, _neg_form(form))]

    def violation(self) -> str | None:
        return None if self.x0 != self.x1 else "addx needs x0 != x1"


@dataclass(frozen=True, slots=True)
class Add2x(Instr):
    y: str
    x0: str
    x1: str
    d1: Dir
    d2: Dir
    mnemonic: ClassVar[str] = "add2x"

    def effects(self) -> list[Effect]:
        v = _add(self.d1.vector, self.d2.vector)
        form = ((ONE, self.x0, v), (ONE, self.x1, v))
        return [(self.y, form), (NEWS, _neg_form(form))]

    def violation(self) -> str | None:
        return None if self.x0 != self.x1 else "add2x needs x0 != x1"


@dataclass(frozen=True, slots=True)
class Subx(Instr):
    """y(p) := x0(p+d) − x1(p): only x0 moves."""

    y: str
    x0: str
    d: Dir
    x1: str
    mnemonic: ClassVar[str] = "subx"

    def effects(self) -> list[Effect]:
        v = self.d.vector
        return [(self.y, ((ONE, self.x0, v), (-ONE, self.x1, ORIGIN))),
                (NEWS, ((-ONE, self.x0, v),))]

    def violation(self) -> str | None:
        return None if self.y != self.x1 else "subx needs y != x1"


@dataclass(frozen=True, slots=True)
class Sub2x(Instr):
    y: str
    x0: str
    d1: Dir
    d2: Dir
    x1: str
    mnemonic: ClassVar[str] = "sub2x"

    def effects(self) -> list[Effect]:
        v = _add(self.d1.vector, self.d2.vector)
        return [(self.y, ((ONE, self.x0, v), (-ONE, self.x1, ORIGIN))),
                (NEWS, ((-ONE, self.x0, v),))]

    def violation(self) -> str | None:
        return None if self.y != self.x1 else "sub2x needs y != x1"


@dataclass(frozen=True, slots=True)
class Divq(Instr):
    """y := x0 / 2 (basic op set only)."""

    y: str
    x0: str
    mnemonic: ClassVar[str] = "divq"

    def effects(self) -> list[Effect]:
        return [(self.y, ((HALF, self.x0, ORIGIN),)), (NEWS, ((-HALF, self.x0, ORIGIN),))]

    def violation(self) -> str | None:
        return None if self.y != self.x0 else "divq needs y != x0"


@dataclass(frozen=True, slots=True)
class Div(Instr):
    """3-argument div: y0 := y2/2, y1 := −y2/2 (scratch); y2 is left undefined."""

    y0: str
    y1: str
    y2: str
    mnemonic: ClassVar[str] = "div"
    bus: ClassVar[int] = 5

    def effects(self) -> list[Effect]:
        src = self.y2
        return [(self.y0, ((HALF, src, ORIGIN),)), (self.y1, ((-HALF, src, ORIGIN),)),
                (self.y2, POISON), (NEWS, ((-HALF, src, ORIGIN),))]

    def violation(self) -> str | None:
        if _distinct(self.y0, self.y1, self.y2):
            return None
        return "div needs y0, y1, y2 all different"


@dataclass(frozen=True, slots=True)
class Div4(Instr):
    """4-argument div: y0 := x0/2, y1 := −x0/2, y2 := x0 (scratch copies); x0 kept."""

    y0: str
    y1: str
    y2: str
    x0: str
    mnemonic: ClassVar[str] = "div"
    bus: ClassVar[int] = 5

    def effects(self) -> list[Effect]:
        src = self.x0
        return [(self.y0, ((HALF, src, ORIGIN),)), (self.y1, ((-HALF, src, ORIGIN),)),
                (self.y2, ((ONE, src, ORIGIN),)), (NEWS, ((-HALF, src, ORIGIN),))]

    def violation(self) -> str | None:
        if _distinct(self.y0, self.y1, self.y2, self.x0):
            return None
        return "div with a source needs y0, y1, y2, x0 all different"


@dataclass(frozen=True, slots=True)
class Diva(Instr):
    """y0 := y0/2 in place; y1, y2 := −y0_old/2 (scratch)."""

    y0: str
    y1: str
    y2: str
    mnemonic: ClassVar[str] = "diva"
    bus: ClassVar[int] = 5

    def effects(self) -> list[Effect]:
        src = self.y0
        return [(self.y0, ((HALF, src, ORIGIN),)), (self.y1, ((-HALF, src, ORIGIN),)),
                (self.y2, ((-HALF, src, ORIGIN),)), (NEWS, ((-HALF, src, ORIGIN),))]

    def violation(self) -> str | None:
        if _distinct(self.y0, self.y1, self.y2):
            return None
        return "diva needs y0, y1, y2 all different"


@dataclass(frozen=True, slots=True)
class Abs(Instr):
    """The vendor's absolute value: y := |x0|; NEWS := −x0 (x0 kept, FLAG left all-on).

    Not linear (`pointwise`). Its expansion, in the vendor's simulator and kernel API:
    bus(NEWS); bus(y, NEWS, x0) (y := −x0); bus(NEWS, x0) (NEWS := −x0); where(x0)
    (FLAG := x0 > 0); bus(y, NEWS) (y := x0 where FLAG); all(): four bus steps and two flag
    writes. y must differ from x0: where(x0) reads x0 after y is written."""

    y: str
    x0: str
    mnemonic: ClassVar[str] = "abs"
    bus: ClassVar[int] = 4

    def effects(self) -> list[Effect]:
        return [(self.y, ((ONE, self.x0, ORIGIN),)), (NEWS, ((-ONE, self.x0, ORIGIN),))]

    def pointwise(self, dest: str) -> str | None:
        return "abs" if dest == self.y else None

    def violation(self) -> str | None:
        return None if self.y != self.x0 else "abs needs y != x0 (where(x0) reads x0 after y " \
                                              "is written)"


ALL_MACROS: tuple[type[Instr], ...] = (
    Mov, Res, Neg, Add, Add3, Sub, Movx, Mov2x, Addx, Add2x, Subx, Sub2x, Divq, Div, Div4, Diva,
    Abs)

POINTWISE_MACROS: frozenset[type[Instr]] = frozenset({Abs})
"""Macros that are not linear: only the lowering of pipelines uses them (docs/pipelines.md)."""

OP_SETS: dict[str, frozenset[type[Instr]]] = {
    "basic": frozenset({Mov, Movx, Add, Sub, Neg, Divq, Res}),
    "all": frozenset(m for m in ALL_MACROS if m is not Divq and m not in POINTWISE_MACROS),
}
"""Op sets as Cain and AUKE define them: `basic` is AUKE's, `all` is Cain's full macro set."""


def op_set_violation(instr: Instr, op_set: str) -> str | None:
    """Why `instr` is outside `op_set`, or None (never for a pointwise macro: see
    `outside_op_set`)."""
    if type(instr) in OP_SETS[op_set] or type(instr) in POINTWISE_MACROS:
        return None
    arity = f" with {len(instr.args())} arguments" if instr.mnemonic in ("add", "div") else ""
    return f"{instr.mnemonic}{arity} is not in op set '{op_set}'"


def outside_op_set(program: Sequence[Instr], op_set: str) -> Instr | None:
    """The first instruction of `program` that `op_set` does not have, or None. (`basic`'s
    `divq` is not in `all`: a program found with op set basic is an `all` program only
    without it.) The pointwise macros (`abs`) belong to no op set and are outside none: an op
    set chooses among the linear macros."""
    return next((i for i in program if op_set_violation(i, op_set)), None)


def first_undefined_read(program: list[Instr], inputs: Sequence[str],
                         ) -> tuple[int, Instr, list[str]] | None:
    """(position from 1, instruction, registers) of the first instruction of `program` that
    reads a register holding no value: neither an input nor written since (a write that
    leaves its register undefined counts as none); None if every read is defined."""
    defined = set(inputs)
    for n, instr in enumerate(program, start=1):
        if undefined := [r for r in instr.reads() if r not in defined]:
            return n, instr, undefined
        for dest, form in instr.effects():
            if form is None:
                defined.discard(dest)
            else:
                defined.add(dest)
    return None


def bus_steps(program: list[Instr]) -> int:
    """Total negating bus steps of a program."""
    return sum(i.bus for i in program)
