"""`kalg simulate PROGRAM.scamp5 --kernel FILE.kalg[:NAME]`: run and verify a SCAMP-5 program.

Parses the program (optionally restricted to an op set), verifies it exactly (symbolic kernels)
and numerically (simulation against the reference correlation on the interior of an image), and
reports size, bus steps, registers and, if asked, the error under a noise model. The targets
are the outputs of a definition in a .kalg file. Exit 0 when both checks pass, 3 when one fails.
"""

from __future__ import annotations

import argparse
import dataclasses
from pathlib import Path

import numpy as np

from kalg.diagnostics import KalgError, VerificationError
from kalg.kernel import REAL, Kernel
from kalg.scamp5.isa import REGISTERS, SIMULATED_REGISTERS, Instr, bus_steps
from kalg.scamp5.noise import NoiseModel
from kalg.scamp5.simulator import footprint, noise_statistics, simulate, verify_numeric
from kalg.scamp5.symbolic import verify_exact
from kalg.scamp5.text import parse_program

_PRESETS = {"cain": NoiseModel.cain, "auke": NoiseModel.auke}
_OVERRIDES = {
    "gain": "multiplicative gain per write (AUKE: 0.93)",
    "relative": "write noise σ relative to |value| (Cain: 0.005)",
    "fixed_pattern": "σ of the fixed per-PE, per-register offset (AUKE: 0.05)",
    "additive": "σ of additive noise per 2-bus-step write (AUKE: 0.09)",
}
"""NoiseModel fields settable from the command line, with their help."""


def add_parser(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    p = sub.add_parser("simulate", help="run a SCAMP-5 program on an image and verify it",
                       description="Run a SCAMP-5 program, verify it exactly and numerically "
                                   "against a .kalg definition, and report its cost and error.")
    p.add_argument("program", type=Path, help="SCAMP-5 program text (.scamp5)")
    p.add_argument("--kernel", required=True, metavar="FILE.kalg[:NAME]",
                   help="definition whose outputs the program must compute (default NAME: the "
                        "file's last definition)")
    p.add_argument("--image", type=Path, metavar="PATH",
                   help="input image: PNG or another Pillow format (read as grey levels) or .npy "
                        "(default: a random image)")
    p.add_argument("--seed", type=int, default=0, metavar="N",
                   help="seed of the random image (default: 0)")
    p.add_argument("--size", default="256", metavar="N|HxW",
                   help="size of the random image (default: 256, the SCAMP-5 array)")
    p.add_argument("--ops", choices=("all", "basic"),
                   help="reject macros outside this op set (default: accept every macro)")
    p.add_argument("--noise", choices=sorted(_PRESETS),
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
                   help="write |result - reference correlation| per output as a grey PNG")
    return p


def run(args: argparse.Namespace) -> int:
    registers = SIMULATED_REGISTERS if args.simulated_registers else REGISTERS
    program = parse_program(_read_text(args.program), str(args.program), op_set=args.ops,
                            registers=registers)
    targets, input_register = _load_targets(args.kernel)
    image, image_label = _input_image(args)
    regs = sorted({r for i in program for r in i.registers()} | {input_register})
    fp = footprint(program)
    rows, cols = fp.interior(image.shape)
    print(f"program  {args.program}: {len(program)} instructions, {bus_steps(program)} bus "
          f"steps, registers {' '.join(regs)}")
    print(f"kernel   {args.kernel}: outputs {' '.join(sorted(targets))}, input in {input_register}")
    print(f"image    {image_label}; interior {rows.stop - rows.start}x{cols.stop - cols.start} "
          f"(reads up to west {fp.west}, east {fp.east}, south {fp.south}, north {fp.north})")
    failures = _verify(program, targets, image, input_register)
    model = _noise_model(args)
    if model is not None and not failures:
        stats = noise_statistics(program, image, model, sorted(targets), input_register)
        print(f"noise    {_describe(model)}: "
              + "; ".join(f"{r} {s}" for r, s in stats.items()))
    _write_images(args, program, targets, image, input_register, model)
    if failures:
        raise VerificationError("; ".join(e.message for e in failures),
                                program_text=failures[0].program_text)
    return 0


def _verify(program: list[Instr], targets: dict[str, Kernel], image: np.ndarray,
            input_register: str) -> list[VerificationError]:
    """Run both checks, print one status line each, and return their failures."""
    failures = []
    try:
        verify_exact(program, targets, input_register)
        print(f"exact    ok: every output holds its kernel ({' '.join(sorted(targets))})")
    except VerificationError as err:
        print("exact    FAILED")
        failures.append(err)
    try:
        worst = verify_numeric(program, targets, image, input_register)
        print("numeric  ok: " + ", ".join(f"{r} max abs error {e:.3g}" for r, e in worst.items()))
    except VerificationError as err:
        print("numeric  FAILED")
        failures.append(err)
    return failures


def _read_text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except OSError as err:
        raise KalgError(f"cannot read {path}: {err.strerror or err}") from None


def _load_targets(spec: str) -> tuple[dict[str, Kernel], str]:
    """Outputs (register → kernel) and input register of `FILE.kalg[:NAME]`."""
    from kalg.frontend import load_file  # the frontend imports lark: load it only when needed

    path, sep, name = spec.rpartition(":")
    if not sep or not path or "/" in name:
        path, name = spec, ""
    source = load_file(Path(path))
    definition = source.definition(name or None)
    if definition.semiring is not REAL:
        raise KalgError(f"{definition.name} is a {definition.semiring.name} kernel; SCAMP-5's "
                        "analogue registers compute real (+, ×) kernels only")
    return dict(definition.outputs), source.target.input


def _input_image(args: argparse.Namespace) -> tuple[np.ndarray, str]:
    """The image to simulate on, and a phrase saying where it came from."""
    if args.image is None:
        h, w = _size(args.size)
        rng = np.random.default_rng(args.seed)
        return rng.integers(0, 256, size=(h, w)).astype(np.float64), \
            f"random {h}x{w} grey levels, seed {args.seed}"
    return _load_image(args.image), f"{args.image}"


def _size(text: str) -> tuple[int, int]:
    parts = text.lower().split("x")
    if len(parts) not in (1, 2) or not all(p.isdigit() and int(p) > 0 for p in parts):
        raise KalgError(f"--size expects N or HxW with positive integers, got {text!r}")
    return (int(parts[0]), int(parts[-1]))


def _load_image(path: Path) -> np.ndarray:
    """A 2-D float64 array: .npy as stored, anything else through Pillow as grey levels 0-255."""
    try:
        if path.suffix == ".npy":
            arr = np.load(path, allow_pickle=False)
        else:
            from PIL import Image  # optional dependency (the `plots` extra)

            with Image.open(path) as img:
                arr = np.asarray(img.convert("L"))
    except (OSError, ValueError) as err:
        raise KalgError(f"cannot read image {path}: {err}") from None
    if arr.ndim != 2 or 0 in arr.shape:
        raise KalgError(f"image {path} must be 2-D, got shape {arr.shape}")
    return arr.astype(np.float64)


def _noise_model(args: argparse.Namespace) -> NoiseModel | None:
    """The preset, with any --noise-* override applied; None when no noise was asked for."""
    overrides = {n: v for n in _OVERRIDES if (v := getattr(args, f"noise_{n}")) is not None}
    if args.noise is None and not overrides:
        return None
    base = _PRESETS[args.noise](args.noise_seed) if args.noise else NoiseModel(seed=args.noise_seed)
    return dataclasses.replace(base, **overrides)


def _describe(model: NoiseModel) -> str:
    return ", ".join(f"{f.name} {getattr(model, f.name):g}" for f in dataclasses.fields(model))


def _write_images(args: argparse.Namespace, program: list[Instr], targets: dict[str, Kernel],
                  image: np.ndarray, input_register: str, model: NoiseModel | None) -> None:
    """--write-result and --write-error: the (noisy, if asked) result and its error per output."""
    if args.write_result is None and args.write_error is None:
        return
    result = simulate(program, image, input_register, model)
    for reg, kernel in sorted(targets.items()):
        value = result[reg]
        if args.write_result is not None:
            _save_png(value, _output_path(args.write_result, reg, len(targets)))
        if args.write_error is not None:
            error = np.abs(value - kernel.apply(image))
            _save_png(error, _output_path(args.write_error, reg, len(targets)), zero_black=True)


def _output_path(path: Path, register: str, outputs: int) -> Path:
    return path if outputs == 1 else path.with_name(f"{path.stem}_{register}{path.suffix}")


def _save_png(values: np.ndarray, path: Path, zero_black: bool = False) -> None:
    """Scale to 0-255 (min-max, or 0-max with `zero_black`); NaN shows as black."""
    from PIL import Image

    finite = np.nan_to_num(values, nan=0.0, posinf=0.0, neginf=0.0)
    low = 0.0 if zero_black else float(finite.min())
    span = float(finite.max()) - low
    grey = np.zeros(finite.shape) if span <= 0 else (finite - low) / span * 255.0
    try:
        Image.fromarray(np.round(grey).astype(np.uint8)).save(path)
    except OSError as err:
        raise KalgError(f"cannot write {path}: {err.strerror or err}") from None
