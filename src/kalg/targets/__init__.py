"""Targets: the machines kalg compiles for, each a plug-in of one shape (`Target`).

A target has a cost model (what the e-graph extraction minimises), a lowering (kernels → its
artefact), a verifier (every artefact is checked before it leaves kalg) and, where kalg can run
the artefact itself, a runner. `TARGETS` names them; `kalg optimize --target NAME` and
`kalg.targets.get(NAME)` look them up; `DEFAULT` is the one a file's target block describes.
Each plug-in's `optimize` (what `kalg optimize` prints) and `compile` (what `kalg.compile`
returns) are what `kalg.driver` calls, so neither the command line nor the Python API names a
target.

* `scamp5`, `scamp5_wide` (`kalg.targets.scamp5`): SCAMP-5 instructions, the search and code
  generation of `kalg.targets.scamp5.pipeline`, exact symbolic and simulator checks.
* `cpu` (`kalg.targets.cpu`): operations per pixel, Halide pipelines.
* `cuda` (`kalg.targets.cuda`): the cpu's plans, Halide pipelines with a GPU schedule.

This module is light (no numpy, no Halide): `kalg --version` and the argument parser import it.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

if TYPE_CHECKING:
    from kalg.algebra.kernel import Kernel
    from kalg.eqsat.extract import ENode
    from kalg.results import CompileResult, Result
    from kalg.settings import Settings
    from kalg.stages import Stage


@runtime_checkable
class Target(Protocol):
    """What every target provides."""

    name: str
    emit: Stage
    """The stage `kalg optimize` prints when --emit is not given."""

    def cost(self) -> Callable[[ENode], float | None]:
        """The extraction cost model (an e-node's own cost; None: never extract it)."""
        ...

    def lower(self, outputs: Mapping[str, Kernel]) -> Any:
        """The target's artefact for these output kernels (a program, a plan of passes)."""
        ...

    def verify(self, artefact: Any, outputs: Mapping[str, Kernel]) -> str:
        """Check the artefact against the kernels; raise VerificationError if it is wrong,
        else say how it was checked."""
        ...

    def runner(self, artefact: Any, **options: Any) -> Callable[..., Any] | None:
        """Something that applies the artefact to an image, or None if kalg cannot run it."""
        ...

    def optimize(self, text: str, path: str, settings: Settings,
                 output: str | None = None) -> Result:
        """`kalg optimize`: the stage `settings.emit` of the definition `settings.name` of .kalg
        `text` (errors located in `path`), verified when it is the target's artefact; `output`
        is the file the user writes it to (a target may write another form for its suffix)."""
        ...

    def compile(self, text: str, path: str, settings: Settings,
                **runtime: Any) -> CompileResult:
        """`kalg.compile`: the same compile as a `CompileResult`; `runtime` holds the target's
        own options (UsageError for one it does not take)."""
        ...


TARGETS = {"scamp5": "kalg.targets.scamp5:TARGET",
           "scamp5_wide": "kalg.targets.scamp5:WIDE_TARGET",
           "cpu": "kalg.targets.cpu:TARGET",
           "cuda": "kalg.targets.cuda:TARGET"}
"""Target name → 'module:attribute' of its plug-in (imported only when asked for: the search
and Halide are heavy)."""

DEFAULT = "scamp5"
"""The target a file's target block describes (a SCAMP-5 register file): the one compiled for
when none is named."""


def for_block(name: str) -> str:
    """The plug-in for a file whose target block names `name` and no target option: the cpu's
    for `target cpu`, else `DEFAULT` (the SCAMP-5 plug-in reads a scamp5_wide block itself)."""
    return name if name == "cpu" else DEFAULT


def get(name: str) -> Target:
    """The target called `name` (KeyError for an unknown one)."""
    module, attribute = TARGETS[name].split(":")
    return getattr(importlib.import_module(module), attribute)


__all__ = ["DEFAULT", "TARGETS", "Target", "for_block", "get"]
