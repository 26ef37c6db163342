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
    """The cpu plan's passes (as `--target cpu` prints them, headed by a line for cuda), or,
    for an `output` ending in .a or .o, that CUDA artefact and its header written (the Result
    names them in `files`; the text says what they hold). UsageError for another suffix."""
    from kalg.results import Result
    from kalg.targets.cpu import driver as cpu
    from kalg.targets.cpu.borders import DEFAULT, parse_border
    from kalg.targets.cpu.runner import refuse_pipeline

    cpu.refuse_scamp5_settings(settings, "cuda")
    suffix = Path(output).suffix if output else None
    if suffix is not None and suffix not in ARTEFACTS:
        raise UsageError(f"--target cuda writes a CUDA static library (-o F.a) or object "
                         f"(-o F.o), each with its C header F.h; not {output!r}")
    if suffix is None or settings.emit is not Stage.DECOMPOSITION:
        r = cpu.optimize(text, path, settings)
        if r.stage is not Stage.DECOMPOSITION:
            return r
        refuse_pipeline(r.definition)  # its text is the cpu's pipeline, never lowered to CUDA
        return dataclasses.replace(r, text=NOTE + r.text)
    definition = _definition(text, path, settings)
    plan = cpu.plan_for(definition, settings)
    border = parse_border(definition.border) if definition.border else DEFAULT
    from kalg.targets.cpu import halide  # the only module that imports Halide

    target = Path(output)
    header = target.with_suffix(".h")
    try:
        note = halide.compile_cuda(plan, border, {ARTEFACTS[suffix]: target, "c_header": header},
                                   definition.name)
    except (OSError, RuntimeError) as err:
        raise KalgError(f"cannot write {output!r}: {err}") from None
    inputs = " ".join(plan.inputs) or "the image"
    kind = "static library" if suffix == ".a" else "object"
    element = "uint8 0/1" if plan.semiring.name == "boolean" else "float32"
    described = (f"# {definition.name}: cuda target, CUDA {kind} {target} with header {header}\n"
                 f"# int {definition.name}(halide_buffer_t *...): {inputs}, then the outputs "
                 f"{' '.join(plan.outputs)}; 2-D {element} buffers, x = column (Halide copies "
                 "host buffers to the device)\n"
                 f"# border {border}; schedule: {note}\n"
                 f"# plan: {plan.ops()} ops/pixel, verified {plan.verified}\n")
    return Result(Stage.DECOMPOSITION, described, {"ops/pixel": plan.ops(), "schedule": note},
                  definition=definition, verified=True, files=(str(target), str(header)))


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
    device.require()
    definition = _definition(text, path, settings)
    function = build(definition, **options)
    return CompileResult(f"# {definition.name}: cuda pipeline (kalg.targets.cuda)\n", "program",
                         function, verified=True, definition=definition, target="cuda")


def _definition(text: str, path: str, settings: Any) -> Any:
    """The definition as the cpu reads it (free output names, the exact coefficients where an
    approximation was asked for, with the cpu's warning), refused where it is a pipeline: the
    cuda target lowers kernels and filters only."""
    from kalg import frontend
    from kalg.targets.cpu.runner import exact_values, refuse_pipeline

    definition = exact_values(frontend.load_text(text, path, "cpu").definition(settings.name),
                              settings.warn)
    refuse_pipeline(definition)
    return definition
