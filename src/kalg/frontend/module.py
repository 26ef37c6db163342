"""What a checked .kalg file means: its target and its definitions with exact kernel values.

These are the frontend's output types; `kalg.frontend.check` builds them from an `ast.Program`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction

from kalg.algebra.kernel import Kernel, Semiring
from kalg.diagnostics import KalgError, Span
from kalg.targets.scamp5.registers import REGISTERS

DEFAULT_REGISTERS = REGISTERS
"""SCAMP-5's six analogue registers, the register file a target block starts from."""


@dataclass(frozen=True, slots=True)
class Target:
    """The machine to compile for: `target scamp5 { registers: A..F, input: A, ops: all }`."""

    registers: tuple[str, ...] = DEFAULT_REGISTERS
    input: str = "A"
    """The input register (the first, where several inputs are listed)."""
    ops: str = "all"
    """"all" (every SCAMP-5 macro) or "basic" (mov, movx, add, sub, neg, divq, res)."""
    name: str = "scamp5"
    span: Span | None = field(default=None, compare=False)
    inputs: tuple[str, ...] = ()
    """Every input register when the block lists several (`input: A B`): a filter's outputs
    then read input channels by name (`kalg.algebra.channels`); empty for one input."""
    split: str | None = None
    """`split: auto`: a filter with more outputs than registers compiles as a layer, a sequence
    of programs (`kalg.targets.scamp5.layers`); None: it is an error."""


@dataclass(frozen=True, slots=True)
class Definition:
    """One `kernel` or `filter` with its exact (possibly approximated) output kernels.

    `outputs` maps each output register to its kernel: for a filter the registers it names, for
    a kernel the target's input register. `exact` holds the values before approximation;
    `approx_error` and `approx_depth` are filled only for the outputs that were approximated.
    """

    name: str
    kind: str
    outputs: dict[str, Kernel]
    semiring: Semiring
    span: Span
    approx_error: dict[str, Fraction] = field(default_factory=dict)
    approx_depth: dict[str, int] = field(default_factory=dict)
    exact: dict[str, Kernel] = field(default_factory=dict)
    unapproximated: dict[str, KalgError] = field(default_factory=dict)
    """Outputs with non-dyadic coefficients and no approx setting, kept exact: the located
    error a target that can only halve (SCAMP-5) raises; the cpu target takes them as they are."""
    border: str | None = None
    """The `border` setting ('replicate', 'constant 0.5', ...) or None: the cpu target's default."""
    channels: dict[str, dict[str, Kernel]] = field(default_factory=dict)
    """For a filter over several inputs: output register → input register → kernel
    (`outputs` is then empty), approximated where `approx_depth` says so."""
    inputs: tuple[str, ...] = ()
    """For a filter over several inputs: the target's input registers, in the order of its
    `input:` field (the order of an image's channels on the cpu target)."""
    exact_channels: dict[str, dict[str, Kernel]] = field(default_factory=dict)
    """For a filter over several inputs: `channels` before approximation."""
    structure: dict[str, tuple] = field(default_factory=dict)
    """For outputs written as algebra (not approximated): the tree of what was written
    (`kalg.frontend.structure`), which the optimizer seeds beside the output's matrix (real)
    and the cpu target applies as written where that is cheaper (min/max-plus, Boolean)."""


@dataclass(frozen=True, slots=True)
class Module:
    """A checked .kalg file: definitions in file order (kernels and filters) and the target."""

    path: str
    definitions: dict[str, Definition]
    target: Target = Target()

    def definition(self, name: str | None = None) -> Definition:
        """The definition called `name`; by default the last one in the file.

        An unknown name is a KalgError that lists the names there are.
        """
        if name is None:
            return list(self.definitions.values())[-1]
        if (found := self.definitions.get(name)) is None:
            known = ", ".join(self.definitions)
            raise KalgError(f"{self.path} has no definition named {name!r}; "
                            f"its definitions are: {known}")
        return found
