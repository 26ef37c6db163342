"""kalg from Python: `compile` a kernel (a .kalg file, .kalg text, an array of exact numbers or a
mapping of output registers to arrays) and `simulate` a SCAMP-5 program against a kernel.

The command line (`kalg optimize`, `kalg simulate`) is a thin layer over these two functions.
Every program `compile` returns was verified exactly and in the simulator; a failed check of
kalg's own program raises `VerificationError` (a kalg bug). `simulate` checks a program it did
not make: a program that does not compute the kernel is the caller's mistake, a
`ProgramMismatchError` (a `KalgError`, exit 1 on the command line) saying where it differs.

>>> import kalg
>>> result = kalg.compile([[1, 2, 1]], divisor=4)
>>> result.instructions, result.verified
(2, True)
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from kalg.algebra.kernel import REAL, Kernel
from kalg.diagnostics import KalgError, ProgramMismatchError, UsageError, VerificationError
from kalg.frontend.arrays import kalg_text
from kalg.results import CompileResult
from kalg.targets.scamp5.machine.isa import (
    REGISTERS,
    SIMULATED_REGISTERS,
    Instr,
    first_undefined_read,
)

__all__ = ["CompileResult", "SimulationResult", "compile", "kalg_text", "simulate"]

@dataclass
class SimulationResult:
    """`simulate`'s answer: every output register's value on the image, the largest absolute
    difference from the reference correlation over the interior, and the interior itself."""

    outputs: dict[str, np.ndarray]
    reference: dict[str, np.ndarray]
    max_abs_error: dict[str, float]
    interior: tuple[slice, slice]
    input_register: str
    noisy: dict[str, np.ndarray] | None = None
    inputs: tuple[str, ...] = ()
    """For a filter over several inputs, its input registers (then `input_register` is the
    first of them)."""


def compile(source: Any, *, name: str | None = None, target: str | None = None,
            ops: str | None = None, registers: str | Sequence[str] | None = None,
            input: str | None = None, emit: str = "program",
            time_limit: float | None = None, node_limit: int = 30_000, timeout: float | None = None,
            divisor: Any = None, approx: Any = None, origin: tuple[int, int] | None = None,
            progress: Callable[[str], None] | None = None,
            warn: Callable[[str], None] | None = None, exhaustive: bool = False,
            exhaustive_nodes: int | None = None, split: str | int | None = None,
            noise_slack: int = 0, noise_model: str = "auke", **runtime: Any) -> CompileResult:
    """Compile `source` into a verified program.

    `source` is a .kalg file (a `Path`, or a string ending in ".kalg"), .kalg text, a 2-D array
    or nested list of exact numbers (ints, `Fraction`s, decimal strings such as "0.25" or
    "-3/4"; floats only with `approx`), or a mapping of output registers to such arrays (a
    multi-output filter). For arrays: `divisor` divides every entry exactly; `approx` (a depth,
    or {"depth": D, "max_error": E}) rounds to multiples of 2^-depth; `origin` (row, col) is the
    cell of offset (0, 0) for even sizes. The other options are `kalg optimize`'s
    (`exhaustive`, `exhaustive_nodes`, `split`, `noise_slack`, `noise_model`: its
    --exhaustive, --exhaustive-nodes, --split - "auto" or a number of outputs per program -,
    --noise-slack and --noise-model). `target`
    names a plug-in of `kalg.targets` (scamp5, scamp5_wide, cpu), which does the compile;
    `runtime` options (e.g. cpu's `border=`) are passed to it. For "cpu" the program stage's
    `program` is a verified callable `f(image, border=...)`.
    """
    from kalg import driver
    from kalg.settings import Settings
    from kalg.stages import Stage

    text, path = _source_text(source, divisor=divisor, approx=approx, origin=origin,
                              free_names=target == "cpu")
    driver.target(target)  # an unknown target is refused before anything else is checked
    if isinstance(registers, str):
        registers = parse_registers(registers)
    if ops not in (None, "all", "basic"):
        raise UsageError(f"unknown op set {ops!r}: expected 'all' or 'basic'")
    if emit not in {stage.value for stage in Stage} | set(Stage):
        raise UsageError(f"unknown stage {emit!r} to emit: expected one of "
                         f"{', '.join(stage.value for stage in Stage)}")
    if split is not None and split != "auto" and (
            isinstance(split, bool) or not str(split).isdigit() or int(split) < 1):
        raise UsageError(f"split must be 'auto' or a positive number of outputs per program, "
                         f"not {split!r}")
    if isinstance(noise_slack, bool) or not isinstance(noise_slack, int) or noise_slack < 0:
        raise UsageError(f"noise_slack must be a whole number >= 0, not {noise_slack!r}")
    if noise_model not in ("auke", "cain"):
        raise UsageError(f"unknown noise model {noise_model!r}: expected 'auke' or 'cain'")
    settings = Settings(name=name, target=target, ops=ops,
                        registers=tuple(registers) if registers else None, input=input,
                        emit=Stage(emit), time_limit=time_limit, node_limit=node_limit,
                        timeout=timeout, progress=progress, warn=warn, exhaustive=exhaustive,
                        split=None if split is None else str(split),
                        noise_slack=noise_slack, noise_model=noise_model,
                        **({"exhaustive_nodes": exhaustive_nodes} if exhaustive_nodes else {}))
    return driver.compile(text, path, settings, **runtime)


def parse_registers(text: str) -> tuple[str, ...]:
    """'A..F' or 'A,B,C' → ('A', ...); letters beyond F are refused later unless the target is
    the simulated wide one. Raises UsageError when `text` is neither form."""
    why = ""
    if ".." in text:
        lo, hi = (s.strip().upper() for s in text.split("..", 1))
        if lo in SIMULATED_REGISTERS and hi in SIMULATED_REGISTERS and lo <= hi:
            return SIMULATED_REGISTERS[SIMULATED_REGISTERS.index(lo):
                                       SIMULATED_REGISTERS.index(hi) + 1]
        if lo in SIMULATED_REGISTERS and hi in SIMULATED_REGISTERS:
            why = f" (a range runs up: {hi}..{lo})"
    else:
        regs = tuple(s.strip().upper() for s in text.split(",") if s.strip())
        if regs and all(r in SIMULATED_REGISTERS for r in regs) and len(set(regs)) == len(regs):
            return regs
        if twice := sorted({r for r in regs if regs.count(r) > 1}):
            why = f" ({', '.join(twice)} listed twice)"
    raise UsageError(f"invalid register budget {text!r}{why}: use a range like A..F or a list "
                     f"like A,B,C of registers from {' '.join(SIMULATED_REGISTERS)}")


# ----------------------------------------------------------------------------- sources
def _source_text(source: Any, **array_options: Any) -> tuple[str, str]:
    """(.kalg text, the name errors are located in) for any accepted `source`."""
    if isinstance(source, Path) or (isinstance(source, str) and _looks_like_path(source)):
        from kalg.frontend import read_source

        return read_source(source), str(source)
    if isinstance(source, str):
        return source.removeprefix("\ufeff"), "<string>"
    return kalg_text(source, **array_options), "<array>"


def _looks_like_path(text: str) -> bool:
    return "\n" not in text and (text.endswith(".kalg") or Path(text).is_file())


# ----------------------------------------------------------------------------- simulate
def simulate(program: Any, kernel: Any, image: Any = None, *, name: str | None = None,
             input: str | None = None, noise: Any = None, ops: str | None = None,
             simulated_registers: bool = False, seed: int = 0) -> SimulationResult:
    """Run a SCAMP-5 `program` on `image` and check that it computes `kernel`.

    `program`: a `CompileResult`, a list of instructions, program text or a .scamp5 path.
    `kernel`: what `compile` accepts as a source (a .kalg path or text, an array, a mapping),
    or a `CompileResult` (its definition). `image`: a 2-D array (default: random 256x256 grey
    levels from `seed`); for a filter over several inputs an HxWxC array (C inputs, in the
    order of `input:`), C 2-D arrays or a mapping input → 2-D array (default: random grey
    levels per input from `seed`, `seed + 1`, ...). `noise`: a `NoiseModel`, or a preset's name
    ('cain', 'auke', seeded with `seed`), for an extra, noisy run (`noisy` in the result; one
    input only). Raises `ProgramMismatchError` when the program
    does not compute the kernel (exactly, or on the image's interior), saying which register
    differs and where.
    """
    from kalg.targets.scamp5.machine.simulator import footprint
    from kalg.targets.scamp5.machine.simulator import simulate as run

    if noise is not None:
        from kalg.targets.scamp5.machine.noise import NoiseModel

        noise = noise if isinstance(noise, NoiseModel) else NoiseModel.named(noise, seed)
    instructions = load_program(program, ops=ops, simulated_registers=simulated_registers)
    if (channels := load_channel_targets(kernel, name=name)) is not None:
        if noise is not None or input is not None:
            raise UsageError("a filter over several inputs is simulated without noise= and "
                             "input= (its inputs are the target block's)")
        return _simulate_channels(instructions, *channels, image, seed)
    targets, input_register = load_targets(kernel, name=name, input=input)
    img = (np.random.default_rng(seed).integers(0, 256, size=(256, 256)).astype(np.float64)
           if image is None else _image(image))
    check_program(instructions, targets, img, input_register)
    outputs = run(instructions, img, input_register)
    reference = {r: k.apply(img) for r, k in targets.items()}
    rows, cols = footprint(instructions).interior(img.shape)
    worst = {r: float(np.max(np.abs(outputs[r][rows, cols] - reference[r][rows, cols])))
             for r in sorted(targets)}
    noisy = None
    if noise is not None:
        result = run(instructions, img, input_register, noise)
        noisy = {r: result[r] for r in targets}
    return SimulationResult({r: outputs[r] for r in sorted(targets)}, reference, worst,
                            (rows, cols), input_register, noisy)


def _simulate_channels(program: list[Instr], targets: dict[str, dict[str, Kernel]],
                       inputs: tuple[str, ...], image: Any, seed: int) -> SimulationResult:
    """`simulate` for a filter over several inputs: `check_channel_program`, then the outputs
    as the sum of one run per input with the others cleared (every instruction is linear)."""
    from kalg.targets.cpu.runner import channel_planes
    from kalg.targets.scamp5.machine.isa import Res
    from kalg.targets.scamp5.machine.simulator import footprint
    from kalg.targets.scamp5.machine.simulator import simulate as run

    if image is None:
        images = {c: np.random.default_rng(seed + i).integers(0, 256, size=(256, 256))
                  .astype(np.float64) for i, c in enumerate(inputs)}
    else:
        images = {c: p.astype(np.float64)
                  for c, p in zip(inputs, channel_planes(image, inputs), strict=True)}
    check_channel_program(program, targets, inputs, images)
    outputs: dict[str, np.ndarray] = {}
    for c in inputs:
        result = run([*(Res(o) for o in inputs if o != c), *program], images[c], c)
        for r in targets:
            outputs[r] = outputs.get(r, 0) + result[r]
    reference = {r: sum((k.apply(images[c]) for c, k in parts.items()),
                        np.zeros_like(images[inputs[0]])) for r, parts in targets.items()}
    rows, cols = footprint(program).interior(images[inputs[0]].shape)
    worst = {r: float(np.max(np.abs(outputs[r][rows, cols] - reference[r][rows, cols])))
             for r in sorted(targets)}
    return SimulationResult({r: outputs[r] for r in sorted(targets)}, reference, worst,
                            (rows, cols), inputs[0], inputs=inputs)


def _image(image: Any) -> np.ndarray:
    """`image` as a 2-D float64 array; KalgError for anything else."""
    try:
        img = np.asarray(image, dtype=np.float64)
    except (TypeError, ValueError):
        raise KalgError("an image is a 2-D array of numbers (one channel)") from None
    if img.ndim != 2 or 0 in img.shape:
        raise KalgError(f"an image is a 2-D array of numbers (one channel), not one of shape "
                        f"{img.shape}")
    return img


def undefined_read(program: list[Instr], inputs: Sequence[str]) -> str | None:
    """'instruction N (text) reads R before anything writes it' for the first instruction of
    `program` that reads a register holding no value (`isa.first_undefined_read`); None if
    none."""
    if (found := first_undefined_read(program, inputs)) is None:
        return None
    n, instr, unset = found
    return f"instruction {n} ({instr}) reads {', '.join(unset)} before anything writes it"


def load_program(program: Any, *, ops: str | None = None,
                 simulated_registers: bool = False) -> list[Instr]:
    """Instructions from a CompileResult, a list of them, program text or a .scamp5 path."""
    from kalg.targets.scamp5.machine.text import parse_program

    if isinstance(program, CompileResult):
        return list(program.program)
    if isinstance(program, list) and all(isinstance(i, Instr) for i in program):
        return program
    registers = SIMULATED_REGISTERS if simulated_registers else REGISTERS
    if isinstance(program, Path) or (isinstance(program, str) and "\n" not in program
                                     and "(" not in program):
        path = Path(program)
        try:
            text = path.read_text(encoding="utf-8-sig")
        except (OSError, UnicodeDecodeError) as err:
            raise KalgError(f"cannot read {path}: "
                            f"{getattr(err, 'strerror', None) or err}") from None
        return parse_program(text, str(path), op_set=ops, registers=registers)
    if isinstance(program, str):
        return parse_program(program.removeprefix("\ufeff"), "<string>", op_set=ops,
                             registers=registers)
    raise KalgError(f"a program is a CompileResult, a list of instructions, program text or a "
                    f".scamp5 path, not {type(program).__name__}")


def load_channel_targets(kernel: Any, *, name: str | None = None,
                         ) -> tuple[dict[str, dict[str, Kernel]], tuple[str, ...]] | None:
    """(output → input → kernel, the inputs) when `kernel` is a filter over several inputs,
    else None."""
    if isinstance(kernel, CompileResult):
        definition = kernel.definition
    else:
        from kalg import frontend

        definition = frontend.load_text(*_source_text(kernel)).definition(name)
    if definition is None or not definition.channels:
        return None
    return ({o: dict(parts) for o, parts in definition.channels.items()},
            tuple(definition.inputs))


def check_channel_program(program: list[Instr], targets: Mapping[str, Mapping[str, Kernel]],
                          inputs: tuple[str, ...], images: Mapping[str, np.ndarray],
                          ) -> dict[str, float]:
    """`check_program` for a filter over several inputs: exactly on every input, then on the
    interior of `images` (input → image). Returns each output's largest absolute error; raises
    `ProgramMismatchError` (details: which check failed) saying where the program differs."""
    from kalg.targets.scamp5.machine.simulator import verify_numeric_channels
    from kalg.targets.scamp5.machine.symbolic import verify_exact_channels

    return _checked(lambda: verify_exact_channels(program, targets, inputs),
                    lambda: verify_numeric_channels(program, targets, images),
                    program, inputs, "filter")


def load_targets(kernel: Any, *, name: str | None = None,
                 input: str | None = None) -> tuple[dict[str, Kernel], str]:
    """Output register → kernel, and the input register, of any kernel source."""
    from kalg import frontend

    if isinstance(kernel, CompileResult):
        if kernel.definition is None:
            raise KalgError("this CompileResult has no definition (it stopped before 'kernels')")
        _one_input(kernel.definition)
        return dict(kernel.definition.outputs), input or kernel.input_register
    text, path = _source_text(kernel)
    module = frontend.load_text(text, path)
    definition = module.definition(name)
    _one_input(definition)
    if definition.semiring is not REAL:
        raise KalgError(f"{definition.name} is a {definition.semiring.name} kernel; SCAMP-5's "
                        "analogue registers compute real (+, ×) kernels only")
    outputs = dict(definition.outputs)
    if input and definition.kind == "kernel":
        outputs = {input: outputs[module.target.input]}
    return outputs, input or module.target.input


def _one_input(definition: Any) -> None:
    """Refuse a filter over several inputs where one input is expected (its `outputs` are
    empty: checking them would check nothing)."""
    if definition.channels:
        raise KalgError(f"'{definition.name}' reads several inputs "
                        f"({' '.join(definition.inputs)}): check it with simulate(), which "
                        "takes an image per input")


def check_program(program: list[Instr], targets: Mapping[str, Kernel], image: np.ndarray,
                  input_register: str) -> dict[str, float]:
    """Check a program kalg did not make: exactly, then on `image`'s interior. Returns each
    output's largest absolute error; raises `ProgramMismatchError` (exit 1) saying where the
    program differs from the kernel."""
    from kalg.targets.scamp5.machine.simulator import verify_numeric
    from kalg.targets.scamp5.machine.symbolic import verify_exact

    return _checked(lambda: verify_exact(program, targets, input_register),
                    lambda: verify_numeric(program, targets, image, input_register),
                    program, (input_register,), "kernel", also=" (and the input register)")


def _checked(exact: Callable[[], object], numeric: Callable[[], dict[str, float]],
             program: list[Instr], inputs: tuple[str, ...], what: str,
             also: str = "") -> dict[str, float]:
    """Run the exact and the numeric check of a program kalg did not make; both are run, so
    that the error names every check that failed (details: which, and a register read before
    it is written). `what` names the definition ("kernel", "filter") and `also` adds to the
    hint's "made for". Returns the numeric check's largest absolute error per output."""
    problems: dict[str, str] = {}
    worst: dict[str, float] = {}
    try:
        exact()
    except VerificationError as err:
        problems["exact"] = err.message
    try:
        worst = numeric()
    except VerificationError as err:
        problems["numeric"] = err.message
    if problems:
        if (unset := undefined_read(program, inputs)) is not None:
            problems["undefined"] = unset
        raise ProgramMismatchError(
            f"the program does not compute the {what}: " + "; ".join(problems.values()),
            hint=f"check that --kernel names the definition the program was made for{also}; a "
                 "program kalg prints is verified as it is made, so an unedited one fails "
                 f"here only with another {what}",
            details=problems)
    return worst

