"""The cpu target's entry points for `kalg optimize` (`optimize`: the decomposition with its
operations per pixel, or a standalone Python module) and `kalg.compile` (`compile`: a verified
callable). No Halide here: it is imported only when a pipeline is built."""

from __future__ import annotations

import dataclasses
from typing import Any

from kalg.diagnostics import KalgSemanticError, UsageError
from kalg.stages import Stage


def optimize(text: str, path: str, settings: Any, output: str | None = None) -> Any:
    """Every output's cheapest verified decomposition under the cpu cost model, as a
    `kalg.results.Result` whose text is the passes (or, for an `output` ending in .py, a module that
    runs without kalg). UsageError for SCAMP-5 settings, which would be silently ignored."""
    from kalg import frontend
    from kalg.frontend.stages import FRONT_END, front_end
    from kalg.results import Result
    from kalg.targets.cpu import optimize as cpu
    from kalg.targets.cpu.plan import format_channels

    refuse_scamp5_settings(settings)
    if settings.emit in FRONT_END:
        return front_end(text, path, dataclasses.replace(settings, target="cpu"))
    if settings.emit is Stage.PROGRAM:
        raise UsageError("the cpu target has no program: it prints the decomposition and its "
                         "operations per pixel (use --emit decomposition, or leave --emit out)")
    from kalg.targets.cpu.runner import exact_values

    warnings: list[str] = []
    definition = exact_values(frontend.load_text(text, path, "cpu").definition(settings.name),
                              _both(warnings.append, settings.warn))
    if definition.pipeline is not None:
        return _pipeline(definition, settings, output)
    plan = plan_for(definition, settings)
    results = plan.results
    stats: dict[str, object] = {}
    for reg, r in results.items():
        prefix = f"{reg} " if len(results) > 1 else ""
        stats[f"{prefix}e-graph"] = (f"{r.saturation.nodes} e-nodes, {r.saturation.stop_reason} "
                                     f"after {r.saturation.iterations} iterations")
        stats[f"{prefix}ops/pixel"] = f"{r.ops} (direct {r.direct_ops})"
    emit = settings.emit
    if emit is Stage.EGRAPH:
        return Result(emit, "".join(f"{k}: {v}\n" for k, v in stats.items()), stats,
                      definition=definition, warnings=warnings)
    if output and output.endswith(".py"):  # a module that runs without kalg
        from kalg.targets.cpu.borders import DEFAULT, parse_border
        from kalg.targets.cpu.export import standalone_source
        border = parse_border(definition.border) if definition.border else DEFAULT
        return Result(emit, standalone_source(plan, definition.name, border), stats,
                      definition=definition, verified=True, warnings=warnings)
    text = (format_channels(definition.name, plan) if plan.inputs
            else cpu.format_result(definition.name, results))
    return Result(emit, text, stats, definition=definition, verified=True, warnings=warnings)


def _both(*calls: Any) -> Any:
    """One callable calling each of `calls` that is not None."""
    return lambda message: [call(message) for call in calls if call is not None]


def _pipeline(definition: Any, settings: Any, output: str | None) -> Any:
    """A pipeline's graph and the verified plan of its linear blocks, as text."""
    from kalg.results import Result
    if output and output.endswith(".py"):
        raise UsageError("a pipeline has no standalone module yet: run it with 'kalg run' or "
                         "kalg.compile(..., target='cpu')")
    plan = pipeline_plan_for(definition, settings)
    text = (f"# {definition.name}: cpu pipeline, {plan.ops()} ops/pixel (linear passes "
            f"{plan.linear.ops()}, shared; pointwise stages the rest)\n"
            f"# linear blocks verified: {plan.linear.verified}\n# {plan.linear.note}\n"
            + plan.describe() + "\n")
    return Result(Stage.DECOMPOSITION, text, {"ops/pixel": plan.ops()}, definition=definition,
                  verified=True)


def pipeline_plan_for(definition: Any, settings: Any) -> Any:
    """A pipeline definition's verified `GraphPlan` under the search limits of `settings` (a
    semantic error located at the definition). No Halide."""
    from kalg.eqsat import engine
    from kalg.targets.cpu import optimize as cpu
    from kalg.targets.cpu.pipelines import plan_pipeline
    return plan_pipeline(definition, engine.SaturationLimits(
        nodes=min(settings.node_limit, cpu.DEFAULT_LIMITS.nodes), seconds=settings.time_limit))


def plan_for(definition: Any, settings: Any) -> Any:
    """The definition's verified `CpuPlan` under the search limits of `settings` (a semantic
    error located at the definition). No Halide."""
    from kalg import targets
    from kalg.eqsat import engine
    from kalg.targets.cpu import optimize as cpu
    from kalg.targets.cpu.plan import plan_channels
    from kalg.targets.cpu.runner import refuse_pipeline
    refuse_pipeline(definition)  # reached from the cuda target: its plans are of kernels
    limits = engine.SaturationLimits(nodes=min(settings.node_limit, cpu.DEFAULT_LIMITS.nodes),
                           seconds=settings.time_limit)
    try:  # the cpu target plug-in: search, passes, verification (no Halide here)
        if definition.channels:  # a filter over several inputs
            return plan_channels(definition.channels, definition.inputs, limits)
        return targets.get("cpu").lower(definition.outputs, limits=limits,
                                        written=definition.structure)
    except KalgSemanticError as err:  # locate it at the definition
        raise KalgSemanticError(f"'{definition.name}': {err.message}", err.span or definition.span,
                                err.hint) from None


def refuse_scamp5_settings(settings: Any, target: str = "cpu") -> None:
    """SCAMP-5 settings with --target cpu (or cuda) would be silently ignored: refuse them."""
    given = [f"--{n}" for n in ("registers", "ops", "input", "timeout")
             if getattr(settings, n) is not None]
    if given:
        raise UsageError(f"{' and '.join(given)} {'is a' if len(given) == 1 else 'are'} SCAMP-5 "
                         f"setting{'s' * (len(given) > 1)}: --target {target} has no register "
                         "budget or op set (leave them out, or compile for scamp5)")


def compile(text: str, path: str, settings: Any, **options: Any) -> Any:
    """`kalg.compile(..., target="cpu")`: for the program stage a `CompileResult` whose
    `program` is the verified callable of `kalg.targets.cpu.build` (`options`, e.g. `border=`,
    go to it); for an earlier stage, that stage as `optimize` makes it."""
    from kalg import frontend
    from kalg.results import CompileResult
    from kalg.targets.cpu.runner import build

    if settings.emit is not Stage.PROGRAM:
        return earlier_stage(optimize, text, path, settings, options, "cpu")
    from kalg.targets.cpu.runner import exact_values

    warnings: list[str] = []
    definition = exact_values(frontend.load_text(text, path, "cpu").definition(settings.name),
                              _both(warnings.append, settings.warn))
    if definition.pipeline is not None:  # a pipeline block: one fused Halide pipeline
        from kalg.targets.cpu.pipelines import build_pipeline
        build = build_pipeline
    function = build(definition, **options)
    return CompileResult(f"# {definition.name}: cpu pipeline (kalg.targets.cpu)\n", "program",
                         function, verified=True, definition=definition, warnings=warnings,
                         target="cpu")


def earlier_stage(optimize: Any, text: str, path: str, settings: Any, options: dict,
                  target: str) -> Any:
    """`kalg.compile` for a stage before the program: the target's `optimize` Result as a
    `CompileResult` of `target`; runtime `options` (border=) are a UsageError there, raised
    before any search."""
    from kalg.results import CompileResult

    if options:
        raise UsageError(f"unknown option(s) {', '.join(sorted(options))} for --emit "
                         f"{settings.emit.value}")
    r = optimize(text, path, settings)
    return CompileResult(r.text, r.stage.value, r.program, r.stats, r.verified,
                         r.decomposition, r.definition, r.warnings, target=target)
