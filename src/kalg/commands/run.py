"""`kalg run FILE --image IN -o OUT`: apply a kernel or filter to an image on the cpu (or, with
`--target cuda`, on CUDA device 0: the same plan under a GPU schedule).

The definition's cheapest cpu decomposition (`kalg.targets.cpu`) runs as a Halide pipeline, checked
against the reference correlation before its first result. Images: `.npy` (any real 2-D array in;
float32 out, bool for Boolean kernels) or, through Pillow, PNG/TIFF/other formats (read as
greyscale; written as 8-bit greyscale, or 32-bit float TIFF when OUT ends in .tif/.tiff). An 8-bit
image holds 0..255 only: `--png-scale clip` (the default) clips and warns when any value lies
outside, `auto` maps the result's range onto 0..255 (and says how), `abs` writes |value| (an edge
map's strength), clipped at 255 with a warning. A filter over several inputs (`input: A B C` in the
file's target block) reads a colour image instead: a PNG/TIFF's channels (R G B, or R G B A) or an
HxWxC .npy give the inputs in the order of `input:`, and their number must match. A filter bank
writes one file per output: OUT with the output's name before the suffix (edges.npy → edges_A.npy,
edges_B.npy), and names them on stderr.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kalg.diagnostics import KalgError

DESCRIPTION = __doc__.split("\n\n", 1)[1] + """
Exit status: 0 ok, 1 error in the input (file, image or border), 2 usage error, 3 a pipeline
failed its check (a kalg bug)."""


def add_parser(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    p = sub.add_parser("run", help="apply a kernel or filter to an image (cpu, Halide)",
                       description=DESCRIPTION,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("file", metavar="FILE", help="the .kalg file")
    p.add_argument("--name", metavar="NAME", help="the kernel or filter to apply "
                   "(default: the last definition in FILE)")
    p.add_argument("--image", metavar="IN", required=True,
                   help="the input image: .npy, or PNG/TIFF/... (read as greyscale; for a "
                        "filter over several inputs, its channels in the order of 'input:')")
    p.add_argument("-o", "--output", metavar="OUT", required=True,
                   help="where to write the result (.npy, .tif/.tiff float, or .png 8-bit)")
    p.add_argument("--border", metavar="MODE", default=None,
                   help="constant, replicate, reflect, reflect101, wrap; a value other "
                        "than 0 outside the image as constant:V (e.g. constant:7, or quoted, "
                        "'constant 7') (default: the definition's border setting, else "
                        "replicate)")
    p.add_argument("--schedule", metavar="NAME", default=None,
                   help="a pipeline's Halide schedule (cpu): fused, fused-16, lean, lean-16, "
                        "root, ... (default: the fastest, measured once on this machine and "
                        "cached)")
    p.add_argument("--png-scale", choices=PNG_SCALES, default="clip",
                   help="how an 8-bit OUT (PNG, ...) holds values outside 0..255: clip (warn "
                        "when any are), auto (map the result's range onto 0..255), abs (|value|,"
                        " clipped) (default: clip; .npy and .tif keep the values)")
    p.add_argument("--target", choices=["cpu", "cuda"], default="cpu",
                   help="where to run: cpu (default), or cuda (CUDA device 0, Halide's GPU "
                        "schedule of the same plan; an error that says so where there is none)")
    p.add_argument("--stats", action="store_true", help="print times to stderr")
    return p


def run(args: argparse.Namespace) -> int:
    from kalg.targets.cpu import borders, runner  # Halide is loaded only by this command
    build = runner.build
    if args.target == "cuda":  # the device is asked for first, before any search
        from kalg.targets.cuda import build, device
        device.require()
    border = borders.parse_border(args.border) if args.border else None
    definition = runner.load_definition(args.file, args.name)
    inputs = definition.inputs if definition.channels else ()
    if definition.pipeline is not None and len(definition.pipeline.inputs) > 1:
        inputs = definition.pipeline.inputs
    image = read_image(Path(args.image), colour=bool(inputs))
    if inputs:  # the channel count is checked before the search
        runner.channel_planes(image, inputs, definition.name)
    definition = runner.exact_values(  # cpu and cuda compute the exact coefficients
        definition, lambda message: print(f"kalg: warning: {message}", file=sys.stderr))
    f = _callable(definition, border, args, build)
    result = f(image)
    outs = result if isinstance(result, dict) else {None: result}
    written = [_named(Path(args.output), name) for name in outs]
    for path, array in zip(written, outs.values(), strict=True):
        if (note := write_image(path, array, args.png_scale)) is not None:
            print(f"kalg: {'note' if args.png_scale == 'auto' else 'warning'}: {path}: {note}",
                  file=sys.stderr)
    if written != [Path(args.output)]:  # a bank: OUT itself is not written, so say what is
        print(f"kalg: wrote {', '.join(map(str, written))}", file=sys.stderr)
    if args.stats:
        for b, seconds in f.compile_seconds.items():
            print(f"kalg: pipeline ({b}): {f.sources[b]}, {seconds:.2f} s", file=sys.stderr)
        print(f"kalg: search: {f.search_seconds:.2f} s, {f.plan.ops()} ops/pixel",
              file=sys.stderr)
    return 0


def _callable(definition: Any, border: Any, args: argparse.Namespace, build: Any) -> Any:
    """The definition built for the target (`build`: its `build`); a cpu pipeline with the
    --schedule asked for (a KalgError for anything else, which has one schedule)."""
    if args.schedule and (definition.pipeline is None or args.target != "cpu"):
        raise KalgError("--schedule is for pipelines on the cpu; a kernel or filter has one "
                        "schedule, and a pipeline on cuda its one GPU schedule")
    if definition.pipeline is not None and args.target == "cpu":
        from kalg.targets.cpu.pipelines import build_pipeline
        return build_pipeline(definition, border, args.schedule)
    return build(definition, border)  # cuda's build takes pipelines too


def _named(path: Path, output: str | None) -> Path:
    return path if output is None else path.with_name(f"{path.stem}_{output}{path.suffix}")


if TYPE_CHECKING:
    import numpy as np


def read_image(path: Path, colour: bool = False) -> np.ndarray:
    """A 2-D array from .npy or any format Pillow reads (converted to greyscale float32); with
    `colour`, an image's own channels as an HxWxC array (palette images as RGB or RGBA; a
    one-channel image stays 2-D) and a 2-D or 3-D .npy."""
    import numpy as np  # loaded when used: `kalg --version` must not pay for numpy

    try:
        if path.suffix.lower() == ".npy":
            a = np.load(path, allow_pickle=False)
        else:
            from PIL import Image
            with Image.open(path) as im:
                mode = im.mode if im.mode in ("F", "I", "I;16", "L", "1") else "L"
                if colour and im.mode not in ("F", "I", "I;16", "L", "1"):
                    mode = im.mode if im.mode in ("RGB", "RGBA", "LA", "CMYK") else (
                        "RGBA" if "transparency" in im.info or "A" in im.mode else "RGB")
                a = np.asarray(im.convert(mode) if mode != im.mode else im, dtype=np.float32)
    except (OSError, ValueError) as err:
        raise KalgError(f"cannot read image {str(path)!r}: {err}") from None
    if colour and a.ndim == 3 and (np.issubdtype(a.dtype, np.number) or a.dtype == bool):
        return a
    if a.ndim != 2 or (not np.issubdtype(a.dtype, np.number) and a.dtype != bool):
        raise KalgError(f"image {str(path)!r} is not a 2-D array of numbers (shape {a.shape}, "
                        f"dtype {a.dtype}): kalg filters one channel")
    return a


PNG_SCALES = ("clip", "auto", "abs")
"""How an 8-bit image holds a result: clipped to 0..255, its range mapped onto 0..255, or its
absolute value clipped."""


def write_image(path: Path, a: np.ndarray, scale: str = "clip") -> str | None:
    """.npy as is; .tif/.tiff as 32-bit float; other formats 8-bit, by `scale` (`PNG_SCALES`).
    Returns a sentence for the user when an 8-bit image does not hold the values as they are
    (how many were clipped, or the range mapped), else None."""
    import numpy as np  # loaded when used: `kalg --version` must not pay for numpy

    try:
        if path.suffix.lower() == ".npy":
            np.save(path, a)
            return None
        from PIL import Image
        if path.suffix.lower() in (".tif", ".tiff"):
            Image.fromarray(a.astype(np.float32), mode="F").save(path)
            return None
        data, note = _eight_bit(a, scale)
        Image.fromarray(data, mode="L").save(path)
        return note
    except (OSError, ValueError, KeyError) as err:
        raise KalgError(f"cannot write image {str(path)!r}: {err}") from None


def _eight_bit(a: np.ndarray, scale: str) -> tuple[np.ndarray, str | None]:
    """`a` as uint8 by `scale`, and what the user should know about it."""
    import numpy as np

    if a.dtype == bool:
        return a.astype(np.uint8) * 255, None
    values = np.abs(a) if scale == "abs" else np.asarray(a, dtype=np.float64)
    finite = values[np.isfinite(values)]
    lo, hi = (float(finite.min()), float(finite.max())) if finite.size else (0.0, 0.0)
    if scale == "auto" and hi > lo:
        mapped = (np.nan_to_num(values, nan=lo, posinf=hi, neginf=lo) - lo) * (255 / (hi - lo))
        return np.clip(np.rint(mapped), 0, 255).astype(np.uint8), (
            f"values {lo:g}..{hi:g} mapped linearly onto 0..255 (--png-scale auto)")
    outside = int(np.count_nonzero(~((values >= 0) & (values <= 255))))
    data = np.clip(np.rint(np.nan_to_num(values, nan=0.0)), 0, 255).astype(np.uint8)
    if not outside:
        return data, None
    what = "|values|" if scale == "abs" else "values"
    return data, (f"{outside} of {values.size} pixels ({100 * outside / values.size:.1f}%) hold "
                  f"{what} outside 0..255 (range {lo:g}..{hi:g}) and were clipped: "
                  "--png-scale auto maps the range onto 0..255, --png-scale abs writes |value|, "
                  "and a .tif or .npy OUT keeps the values")
