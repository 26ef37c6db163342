"""The driver: .kalg text → the front end → the asked target's compile (e-graph, lowering,
verification), for every target alike.

`optimize` (what `kalg optimize` prints) and `compile` (what `kalg.compile` returns) find the
target in `kalg.targets` by the name the user gave, or the registry's default for the file's
target block; the driver names no target itself. Every target starts from the front end's
stages (`kalg.frontend.stages.front_end`) and returns a `kalg.results.Result`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kalg.diagnostics import UsageError

if TYPE_CHECKING:
    from kalg.results import CompileResult, Result
    from kalg.settings import Settings
    from kalg.targets import Target

__all__ = ["compile", "optimize", "target"]


def target(name: str | None, text: str = "", path: str = "<string>") -> Target:
    """The target plug-in called `name`; None means the one the target block of .kalg `text`
    describes (`kalg.targets.for_block`: a `target cpu` block, or SCAMP-5's register file).
    UsageError for a name no plug-in has."""
    from kalg import frontend, targets

    if name is None and text:
        name = targets.for_block(frontend.target_name(text, path))
    try:
        return targets.get(name or targets.DEFAULT)
    except KeyError:
        raise UsageError(f"unknown target {name!r}: expected "
                         f"{', '.join(targets.TARGETS)}") from None


def optimize(text: str, path: str, settings: Settings, output: str | None = None) -> Result:
    """`kalg optimize`: the stage `settings.emit` of .kalg `text` (errors located in `path`)
    for the target `settings.target`, verified when it is the target's artefact."""
    return target(settings.target, text, path).optimize(text, path, settings, output=output)


def compile(text: str, path: str, settings: Settings, **runtime: Any) -> CompileResult:
    """`kalg.compile`: the same compile as a `CompileResult`; `runtime` holds the target's own
    options (UsageError for one it does not take)."""
    return target(settings.target, text, path).compile(text, path, settings, **runtime)
