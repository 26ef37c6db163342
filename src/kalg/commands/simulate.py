"""`kalg simulate PROGRAM.scamp5 --kernel FILE.kalg[:NAME]`: run and check a SCAMP-5 program.

Parses the program (optionally restricted to an op set), checks it exactly (symbolic kernels)
and numerically (simulation against the reference correlation on the interior of an image), and
reports size, bus steps, registers and, if asked, the error under a noise model, relative to the
signal. The targets are the outputs of a definition in a .kalg file. A program that does not
compute them is the user's (or the --kernel is the wrong one): exit 1, saying where it differs.
A thin layer over `kalg.api.simulate`'s parts (`load_program`, `load_targets`, `check_program`).
A layer's text (several programs read out in turn) is checked readout by readout
(`simulate_layer`).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
from pathlib import Path
from typing import Any

from kalg.diagnostics import KalgError, ProgramMismatchError, UsageError

_PRESETS = ("auke", "cain")
_OVERRIDES = {
    "gain": "multiplicative gain per write (AUKE: 0.93)",
    "relative": "write noise σ relative to |value| (Cain: 0.005)",
    "fixed_pattern": "σ of the fixed per-PE, per-register offset (AUKE: 0.05)",
    "additive": "σ of additive noise per 2-bus-step write (AUKE: 0.09)",
}
"""NoiseModel fields settable from the command line, with their help."""


def add_parser(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    p = sub.add_parser("simulate", help="run a SCAMP-5 program on an image and check it",
                       description="Run a SCAMP-5 program, check it exactly and numerically "
                                   "against a .kalg definition, and report its cost and error. "
                                   "Make a program with e.g. 'kalg optimize "
                                   "examples/sobel.kalg -o sobel.scamp5'. Exit 1 when the "
                                   "program does not compute the kernel.")
    p.add_argument("program", type=Path, help="SCAMP-5 program text (.scamp5)")
    p.add_argument("--kernel", required=True, metavar="FILE.kalg[:NAME]",
                   help="definition whose outputs the program must compute (default NAME: the "
                        "file's last definition)")
    p.add_argument("--image", type=Path, metavar="PATH",
                   help="input image: PNG or another Pillow format (read as grey levels) or .npy "
                        "(default: a random image); for a filter over several inputs an HxWxC "
                        ".npy or a colour image, its channels in the order of 'input:'")
    p.add_argument("--seed", type=int, default=0, metavar="N",
                   help="seed of the random image (default: 0)")
    p.add_argument("--size", default="256", metavar="N|HxW",
                   help="size of the random image (default: 256, the SCAMP-5 array)")
    p.add_argument("--ops", choices=("all", "basic"),
                   help="reject macros outside this op set (default: accept every macro)")
    p.add_argument("--noise", choices=_PRESETS,
                   help="also report the error under this noise model preset (default: none)")
    for name, meaning in _OVERRIDES.items():
        p.add_argument(f"--noise-{name.replace('_', '-')}", type=float, metavar="X",
                       help=f"{meaning}; overrides the preset (default: the preset's, or none)")
    p.add_argument("--noise-seed", type=int, default=0, metavar="N",
                   help="seed of the noise (default: 0)")
    p.add_argument("--write-result", type=Path, metavar="PNG",
                   help="write each output register as a grey PNG (NAME_R.png for several)")
    p.add_argument("--simulated-registers", action="store_true",
                   help="accept registers G..Z, for programs made for the simulated wide "
                        "register file (kalg optimize --target scamp5_wide)")
    p.add_argument("--write-error", type=Path, metavar="PNG",
                   help="write |result - reference correlation| per output as a grey PNG, "
                        "scaled over the interior (the border, where the program reads outside "
                        "the image, is black)")
    p.add_argument("--input", metavar="REG", default=None,
                   help="the register the image starts in (default: the .kalg file's target "
                        "block, else A); a kernel's result is expected there too")
    p.add_argument("--report", type=Path, metavar="DIR",
                   help="write DIR/report.png: input, ideal output, simulated output (noisy if "
                        "asked), error on the interior with a colour bar, and the kernel(s) as "
                        "heat maps with their values (needs matplotlib: pip install 'kalg[plots]')")
    p.add_argument("--json", action="store_true",
                   help="print one JSON object (docs/json.md) instead of the report lines")
    return p


def run(args: argparse.Namespace) -> int:
    from kalg import api
    from kalg.targets.scamp5.machine.isa import bus_steps
    from kalg.targets.scamp5.machine.simulator import footprint

    _size(args.size)  # before any work: a size that cannot be simulated is a usage error
    _noise_model(args)
    if (layer := _layer(args)) is not None:
        from kalg.commands.simulate_layer import run_layer
        return run_layer(args, *layer, lambda: _layer_checker(args), _Out(args.json))
    program = api.load_program(args.program, ops=args.ops,
                               simulated_registers=args.simulated_registers)
    kernel_path, name = kernel_spec(args.kernel)
    if (channels := channel_targets(kernel_path, name)) is not None:
        return _run_channels(args, program, *channels)
    targets, input_register = api.load_targets(Path(kernel_path), name=name, input=args.input)
    image, image_label = input_image(args)
    regs = sorted({r for i in program for r in i.registers()} | {input_register})
    fp = footprint(program)
    rows, cols = fp.interior(image.shape)
    out = _Out(args.json)
    out.line(f"program  {args.program}: {len(program)} instructions, {bus_steps(program)} bus "
             f"steps, registers {' '.join(regs)}")
    out.line(f"kernel   {args.kernel}: outputs {' '.join(sorted(targets))}, input in "
             f"{input_register}")
    out.line(f"image    {image_label}; interior {rows.stop - rows.start}x"
             f"{cols.stop - cols.start} (reads up to west {fp.west}, east {fp.east}, south "
             f"{fp.south}, north {fp.north})")
    out.data |= {"file": str(args.program), "kernel": args.kernel, "input": input_register,
                 "instructions": len(program), "bus_steps": bus_steps(program),
                 "registers": regs, "program": "\n".join(map(str, program)) + "\n",
                 "image": image_label}
    try:
        worst = api.check_program(program, targets, image, input_register)
    except ProgramMismatchError as err:
        for check in ("exact", "numeric"):
            out.line(f"{check:8} {'FAILED' if check in err.details else 'ok'}")
        raise
    out.line(f"exact    ok: every output holds its kernel ({' '.join(sorted(targets))})")
    out.line("numeric  ok: " + ", ".join(f"{r} max abs error {e:.3g}" for r, e in worst.items()))
    out.data |= {"verified": True, "max_abs_error": worst}
    model = _noise_model(args)
    if model is not None:
        _report_noise(out, program, targets, image, input_register, model)
    _write_images(args, program, targets, image, input_register, model)
    if args.report is not None:
        from kalg.targets.scamp5.machine.report import write_report

        path = write_report(args.report, program, targets, image, input_register, model)
        out.line(f"report   {path}")
        out.data["report"] = str(path)
    out.finish()
    return 0


def _layer(args: argparse.Namespace):
    """(instructions, readouts) when the program file is a layer's text (programs read out in
    turn, `layers.parse_layer_text`), else None."""
    from kalg.targets.scamp5.layers import parse_layer_text
    from kalg.targets.scamp5.machine.text import REGISTERS, SIMULATED_REGISTERS

    try:
        text = Path(args.program).read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError):
        return None  # load_program says what is wrong with the file
    registers = SIMULATED_REGISTERS if args.simulated_registers else REGISTERS
    return parse_layer_text(text, str(args.program), op_set=args.ops, registers=registers)


def _layer_checker(args: argparse.Namespace):
    """(check(prefix, register → target) → errors, output → target, image label) for the
    definition: one input (`check_program`) or several (`check_channel_program`)."""
    from kalg import api

    kernel_path, name = kernel_spec(args.kernel)
    if (channels := channel_targets(kernel_path, name)) is not None:
        targets, inputs = channels
        images, label = channel_images(args, inputs)
        return (lambda prefix, t: api.check_channel_program(prefix, t, inputs, images),
                targets, label)
    targets, input_register = api.load_targets(Path(kernel_path), name=name, input=args.input)
    image, label = input_image(args)
    return (lambda prefix, t: api.check_program(prefix, t, image, input_register),
            targets, label)


def channel_targets(kernel_path: str, name: str | None):
    """(output → input → kernel, input registers) when the definition reads several inputs,
    else None."""
    from kalg.frontend import load_file

    module = load_file(Path(kernel_path))
    definition = module.definition(name)
    if definition.pipeline is not None:  # no outputs to check: say so, never pass vacuously
        raise KalgError(f"'{definition.name}' in {kernel_path} is a pipeline: kalg simulate "
                        "checks a SCAMP-5 program against a kernel or filter, and pipelines "
                        "run on the cpu and cuda targets (kalg run)")
    return (definition.channels, module.target.inputs) if definition.channels else None


def _run_channels(args: argparse.Namespace, program, targets: dict,
                  inputs: tuple[str, ...]) -> int:
    """Both checks for a filter over several inputs: exact on every input, numeric by
    superposition on --image (an HxWxC .npy or a colour image, its channels the inputs in the
    order of `input:`, as `kalg run` reads it) or on a random image per input (seeds --seed,
    --seed + 1, ...); --json as for one input."""

    from kalg import api
    from kalg.targets.scamp5.machine.isa import bus_steps

    if args.noise or args.write_result or args.report:
        raise UsageError("for a filter over several inputs, kalg simulate checks the program "
                         "exactly and on images (--image, or random ones: --seed, --size); "
                         "--noise, --write-result and --report take one input")
    images, label = channel_images(args, inputs)
    regs = sorted({r for i in program for r in i.registers()} | set(inputs))
    out = _Out(args.json)
    out.line(f"program  {args.program}: {len(program)} instructions, {bus_steps(program)} bus "
             f"steps, registers {' '.join(regs)}")
    out.line(f"kernel   {args.kernel}: outputs {' '.join(sorted(targets))}, inputs "
             f"{' '.join(inputs)}")
    out.line(f"image    {label}")
    out.data |= {"file": str(args.program), "kernel": args.kernel, "inputs": list(inputs),
                 "instructions": len(program), "bus_steps": bus_steps(program),
                 "registers": regs,
                 "program": "\n".join(map(str, program)) + "\n", "image": label}
    try:
        worst = api.check_channel_program(program, targets, inputs, images)
    except ProgramMismatchError as err:
        for check in ("exact", "numeric"):
            out.line(f"{check:8} {'FAILED' if check in err.details else 'ok'}")
        raise
    out.line(f"exact    ok: every output holds its kernel on every input "
             f"({' '.join(sorted(targets))})")
    out.line("numeric  ok: " + ", ".join(f"{r} max abs error {e:.3g}" for r, e in worst.items()))
    out.data |= {"verified": True, "max_abs_error": worst}
    out.finish()
    return 0


def channel_images(args: argparse.Namespace, inputs: tuple[str, ...]):
    """(input → image, label) for a program over several inputs: --image's channels in the
    order of `input:`, or a random image per input (seeds --seed, --seed + 1, ...)."""
    import numpy as np

    if args.image is not None:
        from kalg.commands.run import read_image
        from kalg.targets.cpu.runner import channel_planes

        planes = channel_planes(read_image(args.image, colour=True), inputs, args.kernel)
        images = {c: p.astype(np.float64) for c, p in zip(inputs, planes, strict=True)}
        return images, f"{args.image}, channels {' '.join(inputs)}"
    shape = _size(args.size)
    images = {c: np.random.default_rng(args.seed + i).uniform(-1, 1, shape)
              for i, c in enumerate(inputs)}
    return images, (f"random {shape[0]}x{shape[1]} per input, uniform in [-1, 1), seeds "
                    f"{args.seed}..{args.seed + len(inputs) - 1}")


class _Out:
    """The report: lines on stdout, or (with --json) one object printed at the end."""

    def __init__(self, as_json: bool):
        from kalg.jsonout import base

        self.as_json = as_json
        self.data: dict[str, Any] = base("simulate")

    def line(self, text: str) -> None:
        if not self.as_json:
            print(text, flush=True)

    def warn(self, text: str) -> None:
        import sys

        print(f"kalg: warning: {text}", file=sys.stderr)
        self.data["warnings"].append(text)

    def finish(self) -> None:
        if self.as_json:
            print(json.dumps(self.data, indent=1))


def _report_noise(out: _Out, program, targets, image, input_register, model) -> None:
    """Error under noise, absolute and relative to the signal (the ideal output's rms over the
    interior), SNR in dB, and a warning where the noise is as large as the signal."""
    from kalg.targets.scamp5.machine.simulator import footprint, noise_statistics, simulate

    stats = noise_statistics(program, image, model, sorted(targets), input_register)
    ideal = simulate(program, image, input_register)
    rows, cols = footprint(program).interior(image.shape)
    parts, data = [], {}
    for reg, st in stats.items():
        signal = float(math.sqrt(float((ideal[reg][rows, cols] ** 2).mean())))
        ratio = st.rms / signal if signal > 0 else math.inf
        snr = 20 * math.log10(signal / st.rms) if st.rms > 0 and signal > 0 else (
            math.inf if st.rms == 0 else -math.inf)
        parts.append(f"{reg} {st}; signal rms {signal:.4g}, error/signal {ratio:.3g}, "
                     f"SNR {snr:.1f} dB")
        data[reg] = {"rms": st.rms, "max_abs": st.max_abs, "bias": st.bias,
                     "signal_rms": signal, "relative": _finite(ratio), "snr_db": _finite(snr)}
        if ratio >= 0.5:
            out.warn(f"noise swamps the signal in {reg}: error rms {st.rms:.4g} is "
                     f"{ratio:.2g} x the signal's rms {signal:.4g} (SNR {snr:.1f} dB); the "
                     "output says little about the image")
    out.line(f"noise    {_describe(model)}: " + "; ".join(parts))
    out.data["noise"] = {"model": dataclasses.asdict(model), "outputs": data}


def _finite(x: float) -> float | None:
    return x if math.isfinite(x) else None


def kernel_spec(spec: str) -> tuple[str, str | None]:
    """`FILE.kalg[:NAME]` → (file, name or None)."""
    path, sep, name = spec.rpartition(":")
    if not sep or not path or "/" in name:
        return spec, None
    return path, name or None


def input_image(args: argparse.Namespace):
    """The image to simulate on, and a phrase saying where it came from."""
    import numpy as np

    if args.image is None:
        h, w = _size(args.size)
        rng = np.random.default_rng(args.seed)
        return rng.integers(0, 256, size=(h, w)).astype(np.float64), \
            f"random {h}x{w} grey levels, seed {args.seed}"
    return _load_image(args.image), f"{args.image}"


MAX_SIDE = 4096
"""Largest side of a random image: the simulator holds every register as an H x W array of
float64 (a 20000x20000 image is 3.2 GB a register, and ran out of memory); SCAMP-5's array is
256x256."""


def _size(text: str) -> tuple[int, int]:
    parts = text.lower().split("x")
    if len(parts) not in (1, 2) or not all(p.isdigit() and int(p) > 0 for p in parts):
        raise UsageError(f"--size expects N or HxW with positive integers, got {text!r}")
    h, w = int(parts[0]), int(parts[-1])
    if max(h, w) > MAX_SIDE:
        raise UsageError(f"--size {text} is too large: the simulator holds every register as "
                         f"an H x W array of float64 ({h * w * 8 / 2**30:.1f} GiB each), so "
                         f"kalg simulates at most {MAX_SIDE}x{MAX_SIDE} (SCAMP-5's array is "
                         "256x256)")
    return (h, w)


def _pillow():
    """PIL.Image, or a KalgError saying how to get it (it is a dependency of kalg)."""
    try:
        from PIL import Image
    except ImportError:
        raise KalgError("reading and writing PNG images needs Pillow, which is missing from "
                        "this environment: pip install pillow (or use a .npy image)") from None
    return Image


def _load_image(path: Path):
    """A 2-D float64 array: .npy as stored, anything else through Pillow as grey levels 0-255."""
    import numpy as np

    try:
        if path.suffix == ".npy":
            arr = np.load(path, allow_pickle=False)
        else:
            with _pillow().open(path) as img:
                arr = np.asarray(img.convert("L"))
    except (OSError, ValueError) as err:
        raise KalgError(f"cannot read image {path}: {err}") from None
    if arr.ndim != 2 or 0 in arr.shape:
        raise KalgError(f"image {path} must be 2-D, got shape {arr.shape}")
    return arr.astype(np.float64)


def _noise_model(args: argparse.Namespace):
    """The preset, with any --noise-* override applied; None when no noise was asked for."""
    from kalg.targets.scamp5.machine.noise import NoiseModel

    presets = {"cain": NoiseModel.cain, "auke": NoiseModel.auke}
    overrides = {n: v for n in _OVERRIDES if (v := getattr(args, f"noise_{n}")) is not None}
    for n, v in overrides.items():
        if not math.isfinite(v) or v < 0:
            raise UsageError(f"--noise-{n.replace('_', '-')} must be a finite number >= 0, not "
                             f"{v!r}")
    if args.noise is None and not overrides:
        return None
    base = presets[args.noise](args.noise_seed) if args.noise else NoiseModel(seed=args.noise_seed)
    return dataclasses.replace(base, **overrides)


def _describe(model) -> str:
    return ", ".join(f"{f.name} {getattr(model, f.name):g}" for f in dataclasses.fields(model))


def _write_images(args: argparse.Namespace, program, targets, image, input_register,
                  model) -> None:
    """--write-result and --write-error: the (noisy, if asked) result and its error per output.
    The error image is scaled over the interior only: on the border the program reads pixels
    outside the image (zero-filled), so its error there says nothing about the program."""
    import numpy as np

    from kalg.targets.scamp5.machine.simulator import footprint, simulate

    if args.write_result is None and args.write_error is None:
        return
    result = simulate(program, image, input_register, model)
    inside = footprint(program).mask(image.shape)
    for reg, kernel in sorted(targets.items()):
        value = result[reg]
        if args.write_result is not None:
            _save_png(value, _output_path(args.write_result, reg, len(targets)))
        if args.write_error is not None:
            error = np.where(inside, np.abs(value - kernel.apply(image)), np.nan)
            _save_png(error, _output_path(args.write_error, reg, len(targets)), zero_black=True)


def _output_path(path: Path, register: str, outputs: int) -> Path:
    return path if outputs == 1 else path.with_name(f"{path.stem}_{register}{path.suffix}")


def _save_png(values, path: Path, zero_black: bool = False) -> None:
    """Scale the finite values to 0-255 (min-max, or 0-max with `zero_black`); NaN is black."""
    import numpy as np

    image_module = _pillow()
    finite = np.isfinite(values)
    shown = np.where(finite, values, 0.0)
    low = 0.0 if zero_black or not finite.any() else float(shown[finite].min())
    high = float(shown[finite].max()) if finite.any() else 0.0
    span = high - low
    grey = np.zeros(shown.shape) if span <= 0 else np.clip((shown - low) / span, 0, 1) * 255.0
    grey[~finite] = 0.0
    try:
        image_module.fromarray(np.round(grey).astype(np.uint8)).save(path)
    except (OSError, ValueError) as err:
        raise KalgError(f"cannot write {path}: {getattr(err, 'strerror', None) or err}") from None
