"""Targets: the machines kalg compiles for, each a plug-in of one shape (`Target`).

A target has a cost model (what the e-graph extraction minimises), a lowering (kernels → its
artefact), a verifier (every artefact is checked before it leaves kalg) and, where kalg can run
the artefact itself, a runner. `TARGETS` names them; `kalg optimize --target NAME` and
`kalg.targets.get(NAME)` look them up.

Today `cpu` (`kalg.targets.cpu`: operations per pixel, Halide pipelines) is a plug-in; SCAMP-5's
stages still live in `kalg.pipeline` (compile_file), which is the seam where a `scamp5` plug-in of
the same shape goes.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any, Protocol, runtime_checkable

from kalg.eqsat.extract import ENode
from kalg.kernel import Kernel


@runtime_checkable
class Target(Protocol):
    """What every target provides."""

    name: str

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


TARGETS = {"cpu": "kalg.targets.cpu"}
"""Target name → module holding `TARGET` (imported only when asked for: Halide is heavy)."""


def get(name: str) -> Target:
    """The target called `name` (KeyError for an unknown one)."""
    return importlib.import_module(TARGETS[name]).TARGET


__all__ = ["TARGETS", "Target", "get"]
