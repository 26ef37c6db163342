"""What a compile returns, for every target: `Result` (what `kalg optimize` prints, with its
parts) and `CompileResult` (what `kalg.compile` returns)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from kalg.stages import Stage

if TYPE_CHECKING:
    from kalg.algebra.decomp import Decomposition
    from kalg.algebra.kernel import Kernel
    from kalg.frontend import Definition

__all__ = ["CompileResult", "Result"]


@dataclass
class Result:
    """What `optimize` made: the stage `stage` as text; for a SCAMP-5 program its instructions
    (`program`), for the cpu target's passes none."""

    stage: Stage
    text: str
    stats: dict[str, object] = field(default_factory=dict)
    program: list = field(default_factory=list)
    """A SCAMP-5 target's instructions (`Instr`); empty before that stage."""
    definition: Definition | None = None
    decomposition: Decomposition | None = None
    """The decomposition the program was generated from (None before that stage, and for the
    programs built for a filter as a whole: shared matrix, outputs one at a time)."""
    verified: bool = False
    """True exactly when `program` was checked exactly and in the simulator."""
    warnings: list[str] = field(default_factory=list)
    input_register: str = "A"
    files: tuple[str, ...] = ()
    """Files the target wrote itself (a binary artefact: `kalg optimize -o` then writes no
    text, and names them on stderr)."""
    readouts: list = field(default_factory=list)
    """For a layer (`kalg.targets.scamp5.layers`): one `Readout` per program of the sequence
    (what is read out after it); empty for one program."""
    kept: str | None = None
    """For a layer: where the input is kept between programs (None: never overwritten)."""


@dataclass
class CompileResult:
    """What `compile` made. For a SCAMP-5 target: `text` is the program as `kalg optimize`
    prints it, `program` its instructions, `instructions` their count; `verified` is True
    exactly when the program was checked exactly and in the simulator. With `emit` before
    "program", `text` is that stage's artefact and `program` is empty."""

    text: str
    stage: str
    program: Any = field(default_factory=list)
    """list[Instr] for SCAMP-5; for a runtime target (cpu) the callable it built."""
    stats: dict[str, object] = field(default_factory=dict)
    verified: bool = False
    decomposition: Any = None
    definition: Any = None
    warnings: list[str] = field(default_factory=list)
    input_register: str = "A"
    target: str = "scamp5"
    readouts: list = field(default_factory=list)
    """For a layer (`split=`): one `kalg.targets.scamp5.layers.Readout` per program of the
    sequence, saying after which instruction which register holds which output; empty for one
    program."""
    kept: str | None = None
    """For a layer: where the input is kept between programs (None: never overwritten)."""

    @property
    def instructions(self) -> int:
        return len(self.program) if isinstance(self.program, list) else 0

    @property
    def bus_steps(self) -> int:
        return sum(i.bus for i in self.program) if isinstance(self.program, list) else 0

    @property
    def registers(self) -> list[str]:
        """The registers the program uses, sorted."""
        if not isinstance(self.program, list):
            return []
        return sorted({r for i in self.program for r in i.registers()})

    @property
    def kernels(self) -> dict[str, Kernel] | dict[str, dict[str, Kernel]]:
        """Output register → the exact kernel the program computes there; for a filter over
        several inputs, output register → input register → kernel (`inputs` names them)."""
        if self.definition is None:
            return {}
        if self.definition.channels:
            return {o: dict(parts) for o, parts in self.definition.channels.items()}
        return dict(self.definition.outputs)

    @property
    def inputs(self) -> tuple[str, ...]:
        """The input registers the program reads: several for a filter over several inputs
        (in the order of the target block's `input:`), else the one input register."""
        if self.definition is not None and self.definition.channels:
            return tuple(self.definition.inputs)
        return (self.input_register,)

    def __str__(self) -> str:
        return self.text
