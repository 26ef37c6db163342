"""The cuda target's entry points for `kalg optimize` (`optimize`: the cpu plan's passes, or with
`-o F.a` / `-o F.o` the compiled CUDA library or object and its C header) and `kalg.compile`
(`compile`: a verified callable on the device). Compiling needs no GPU; running does."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from kalg.diagnostics import KalgError, UsageError
from kalg.stages import Stage

ARTEFACTS = {".a": "static_library", ".o": "object"}
"""`kalg optimize --target cuda -o F`: what F's suffix asks for (both with Halide's runtime and
a C header F.h beside them)."""

NOTE = ("# cuda target: the cpu plan's passes below, lowered to CUDA by Halide with GPU tiles "
        "(kalg.targets.cuda); -o F.a writes the library\n")


def optimize(text: str, path: str, settings: Any, output: str | None = None) -> Any:
    """The cpu plan's passes (as `--target cpu` prints them, headed by a line for cuda); for a
    pipeline, its graph and plan with the GPU schedule it is lowered with; or, for an `output`
    ending in .a or .o, that CUDA artefact and its header written (the Result names them in
    `files`; the text says what they hold). UsageError for another suffix."""
    from kalg.frontend.stages import FRONT_END
    from kalg.targets.cpu import driver as cpu

    cpu.refuse_scamp5_settings(settings, "cuda")
    suffix = Path(output).suffix if output else None
    if suffix is not None and suffix not in ARTEFACTS:
        raise UsageError(f"--target cuda writes a CUDA static library (-o F.a) or object "
                         f"(-o F.o), each with its C header F.h; not {output!r}")
    if settings.emit in FRONT_END or settings.emit is Stage.PROGRAM:
        return cpu.optimize(text, path, settings)  # the front end, or the cpu's usage error
    if _loaded(text, path, settings).pipeline is not None:
        definition = _definition(text, path, settings)
        if definition.pipeline.fixpoints():
            return _fixpoint_parts(definition, output)
        return _artefact(definition, cpu.pipeline_plan_for(definition, settings), output)
    if suffix is None or settings.emit is not Stage.DECOMPOSITION:
        r = cpu.optimize(text, path, settings)
        return r if r.stage is not Stage.DECOMPOSITION else dataclasses.replace(
            r, text=NOTE + r.text)
    definition = _definition(text, path, settings)
    return _artefact(definition, cpu.plan_for(definition, settings), output)


def _artefact(definition: Any, plan: Any, output: str | None) -> Any:
    """The Result of `optimize` for a plan (`CpuPlan`) or a pipeline's (`GraphPlan`): with an
    `output`, the CUDA library or object and its header written and described; without, a
    pipeline's graph and plan under the GPU schedule's line (placed, not compiled)."""
    from kalg.results import Result
    from kalg.targets.cpu import halide  # the only module that imports Halide
    from kalg.targets.cpu.borders import DEFAULT, parse_border

    graph = getattr(plan, "graph", None)
    given = graph.border if graph is not None else definition.border
    border = parse_border(given) if given else DEFAULT
    if output is None:
        _, _, note = halide.gpu_graph_pipeline(plan, border)
        text = (f"# {definition.name}: cuda pipeline, {plan.ops()} ops/pixel (linear passes "
                f"{plan.linear.ops()}, shared; pointwise stages the rest), border {border}\n"
                f"# lowered to CUDA by Halide (kalg.targets.cuda) with the cpu's algorithm; "
                f"GPU schedule: {note}; -o F.a writes the library\n"
                f"# linear blocks verified: {plan.linear.verified}\n# {plan.linear.note}\n"
                + plan.describe() + "\n")
        return Result(Stage.DECOMPOSITION, text, {"ops/pixel": plan.ops(), "schedule": note},
                      definition=definition, verified=True)
    target = Path(output)
    header = target.with_suffix(".h")
    try:
        note = halide.compile_cuda(plan, border, {ARTEFACTS[target.suffix]: target,
                                                  "c_header": header}, definition.name)
    except (OSError, RuntimeError) as err:
        raise KalgError(f"cannot write {output!r}: {err}") from None
    if graph is not None:
        inputs, outputs, element = " ".join(graph.inputs), " ".join(graph.outputs), "float32"
        verified = plan.linear.verified
    else:
        inputs, outputs = " ".join(plan.inputs) or "the image", " ".join(plan.outputs)
        element = "uint8 0/1" if plan.semiring.name == "boolean" else "float32"
        verified = plan.verified
    kind = "static library" if target.suffix == ".a" else "object"
    described = (f"# {definition.name}: cuda target, CUDA {kind} {target} with header {header}\n"
                 f"# int {definition.name}(halide_buffer_t *...): {inputs}, then the outputs "
                 f"{outputs}; 2-D {element} buffers, x = column (Halide copies host buffers "
                 "to the device)\n"
                 f"# border {border}; schedule: {note}\n"
                 f"# plan: {plan.ops()} ops/pixel, verified {verified}\n")
    return Result(Stage.DECOMPOSITION, described, {"ops/pixel": plan.ops(), "schedule": note},
                  definition=definition, verified=True, files=(str(target), str(header)))


def _fixpoint_parts(definition: Any, output: str | None) -> Any:
    """A pipeline with a fixpoint: its parts' plans under the GPU schedule (each part one fused
    cuda pipeline, the body's run until its output stops changing). No artefact: one library
    holds one pipeline, and the loop runs on the host (UsageError for -o)."""
    from kalg.dataflow.fixpoint import parts
    from kalg.results import Result
    from kalg.targets.cpu import halide  # the only module that imports Halide
    from kalg.targets.cpu.borders import DEFAULT, parse_border
    from kalg.targets.cpu.graph_plan import plan_graph

    graph = definition.pipeline
    if output is not None:
        raise UsageError(f"pipeline '{definition.name}' has a fixpoint: it runs as several cuda "
                         "pipelines, the iteration's called until nothing changes, which one "
                         "library cannot hold; run it with `kalg run --target cuda` or "
                         "kalg.compile(..., target=\"cuda\")")
    border = parse_border(graph.border) if graph.border else DEFAULT
    plans = [plan_graph(g) for g in parts(graph)]
    notes = [halide.gpu_graph_pipeline(p, border)[2] for p in plans]
    text = (f"# {definition.name}: cuda pipeline with a fixpoint, {len(plans)} fused parts "
            f"(before, the iteration run until its output stops changing, after), border "
            f"{border}; lowered to CUDA by Halide (kalg.targets.cuda)\n"
            + "".join(f"# part {k}: {p.ops()} ops/pixel; GPU schedule: {note}\n"
                      for k, (p, note) in enumerate(zip(plans, notes, strict=True)))
            + "".join(p.describe() + "\n" for p in plans))
    return Result(Stage.DECOMPOSITION, text, {"parts": len(plans), "schedule": notes},
                  definition=definition, verified=all(p.linear.verified for p in plans))


def compile(text: str, path: str, settings: Any, **options: Any) -> Any:
    """`kalg.compile(..., target="cuda")`: for the program stage a `CompileResult` whose
    `program` is a verified `CudaFilter` (NoCudaDevice, before any search, where there is no
    CUDA device); for an earlier stage, that stage as `optimize` makes it."""
    from kalg.results import CompileResult
    from kalg.targets.cpu import driver as cpu
    from kalg.targets.cuda import device
    from kalg.targets.cuda.runner import build

    if settings.emit is not Stage.PROGRAM:
        return cpu.earlier_stage(optimize, text, path, settings, options, "cuda")
    found = device.require()
    definition = _definition(text, path, settings)
    if definition.pipeline is not None:  # one fused pipeline under the GPU schedule
        from kalg.targets.cuda.pipelines import build_pipeline
        function = build_pipeline(definition, device=found, **options)
    else:
        function = build(definition, **options)
    return CompileResult(f"# {definition.name}: cuda pipeline (kalg.targets.cuda)\n", "program",
                         function, verified=True, definition=definition, target="cuda")


def _loaded(text: str, path: str, settings: Any) -> Any:
    """The definition as parsed and checked (no coefficients made exact, no warning)."""
    from kalg import frontend
    return frontend.load_text(text, path, "cpu").definition(settings.name)


def _definition(text: str, path: str, settings: Any) -> Any:
    """The definition as the cpu reads it (free output names, the exact coefficients where an
    approximation was asked for, with the cpu's warning): a kernel, a filter or a pipeline."""
    from kalg.targets.cpu.runner import exact_values

    return exact_values(_loaded(text, path, settings), settings.warn)
