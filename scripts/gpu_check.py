"""The cuda target on a GPU, in two steps, so that the GPU machine needs neither Halide nor the
search (neither is installed there; see docs/cuda.md):

    .venv/bin/python scripts/gpu_check.py prepare gpu-bundle     # any machine, no GPU needed
    python3 scripts/gpu_check.py run gpu-bundle --doc docs/cuda-bench.md   # the GPU machine

`prepare` searches and links every example of examples/ (with its own border) and every row of
`kalg bench --target cuda` (`kalg.targets.cuda.bench.prepare`) into the bundle, with
manifest.json; a pipeline example (`pipeline` block) with its graph and its reference checks
(`kalg.targets.cuda.bench_pipelines.prepare`). `run` (numpy and scipy; CuPy and PyTorch where
installed) checks every example's library on CUDA device 0 against scipy.ndimage on random
images (a pipeline against the numpy reference's outputs saved by `prepare`), through numpy
(copies) and, with CuPy, on device arrays in place; then measures the bench rows
(`bench.measure`) and the pipelines against the CuPy and PyTorch chains
(`bench_pipelines.measure`), and writes the tables to --doc. Exit status: 0 all checks passed,
1 a check failed, 2 no CUDA device (nothing measured).
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from kalg.targets.cpu.borders import Border
from kalg.targets.cuda import bench, bench_pipelines

CHECK_SHAPES = ((257, 263), (31, 17), (5, 3))
"""Random images each example is checked on: several tiles and their tails, less than a tile,
smaller than most kernels."""


def prepare(directory: Path, capability: tuple[int, int]) -> int:
    from kalg.diagnostics import KalgError
    from kalg.targets.cpu.runner import load_definition
    directory.mkdir(parents=True, exist_ok=True)
    examples, pipelines, skipped = [], [], []
    for path in sorted(Path("examples").glob("*.kalg")):
        print(f"prepare: {path}", file=sys.stderr, flush=True)
        try:
            graph = load_definition(str(path)).pipeline
            if graph is not None and graph.fixpoints():  # one library per pipeline: no loop
                skipped.append(f"{path.name}: a fixpoint (parts looped on the host; "
                               "`kalg run --target cuda` runs it, this script does not)")
                continue
            if graph is not None:
                pipelines.append(bench_pipelines.prepare(path, directory, capability))
                continue
            examples.append(bench.prepare(path.stem, str(path), "example", directory,
                                          capability, border=None))
        except KalgError as err:  # the cpu target does not take it
            skipped.append(f"{path.name}: {err.message}")
    rows = []
    for row in bench.rows():
        print(f"prepare: {row.name}", file=sys.stderr, flush=True)
        rows.append(bench.prepare(row.name, row.source, row.kind, directory, capability,
                                  bench.BORDER, row.arrays))
    manifest = {"examples": [p.to_json() for p in examples], "bench": [p.to_json() for p in rows],
                "pipelines": [p.to_json() for p in pipelines],
                "skipped": skipped, "capability": list(capability),
                "prepared on": f"{platform.node()} {platform.processor() or platform.machine()}"}
    (directory / "manifest.json").write_text(json.dumps(manifest, indent=1), encoding="utf-8")
    print(f"prepared {len(examples)} examples, {len(pipelines)} pipelines ({len(skipped)} "
          f"skipped) and {len(rows)} bench rows in {directory}", file=sys.stderr)
    return 0


def reference(p: bench.Prepared, images: list[np.ndarray]) -> dict[str, np.ndarray]:
    """scipy.ndimage on the images extended by the example's border (numpy.pad), cropped:
    correlate (summed over the inputs), grey_erosion by -K (min-plus), grey_dilation by K
    mirrored (max-plus), binary_dilation by K mirrored (Boolean)."""
    import scipy.ndimage as nd
    border = Border(p.border[0], float(p.border[1]))
    keys = p.inputs or [""]
    out = {}
    for name in p.outputs:
        total = None
        for key, rows in p.kernels[name].items():
            k = np.asarray(rows, np.float64)
            r = k.shape[0] // 2
            image = images[keys.index(key)]
            if p.semiring == "boolean":
                b = Border(border.mode, 1.0 if border.value else 0.0)
                padded = b.pad(image != 0, r, r, r, r)
                value = nd.binary_dilation(padded, structure=(k != 0)[::-1, ::-1])
            else:
                padded = border.pad(image.astype(np.float64), r, r, r, r)
                finite = np.isfinite(k)
                value = (nd.correlate(padded, k, mode="nearest") if p.semiring == "real" else
                         nd.grey_erosion(padded, footprint=finite,
                                         structure=-np.where(finite, k, 0), mode="nearest")
                         if p.semiring == "minplus" else
                         nd.grey_dilation(padded, footprint=finite[::-1, ::-1],
                                          structure=np.where(finite, k, 0)[::-1, ::-1],
                                          mode="nearest"))
            value = value[r: r + image.shape[0], r: r + image.shape[1]]
            total = value if total is None else total + value
        out[name] = total
    return out


def tolerance(p: bench.Prepared) -> float:
    """float32 against float64 on inputs in [0, 1): a few units in the last place of the
    largest sum (0 for Boolean kernels)."""
    if p.semiring == "boolean":
        return 0.0
    arrays = [np.asarray(k, np.float64) for ins in p.kernels.values() for k in ins.values()]
    finite = [np.abs(a[np.isfinite(a)]) for a in arrays]
    if p.semiring == "real":
        return 1e-5 * max(1.0, sum(float(a.sum()) for a in finite)) + 1e-5
    return 1e-5 * (1.0 + max(float(a.max(initial=0)) for a in finite))


def check(p: bench.Prepared, directory: Path) -> list[str]:
    """Failures of one example (empty: it equals scipy on every image, by both paths)."""
    pipeline = bench.load(p, directory)
    failures = []
    for shape in CHECK_SHAPES:
        images = [a * 4 - 2 if a.dtype == np.float32 else a
                  for a in bench.images_for(p, shape, seed=shape[0])]
        outs = [np.empty_like(images[0]) for _ in p.outputs]
        pipeline.run(images, outs)
        want = reference(p, images)
        tol = tolerance(p) * 2  # inputs in [-2, 2)
        for name, got in zip(p.outputs, outs, strict=True):
            diff = float(np.max(np.abs(got.astype(np.float64) - want[name])))
            if not diff <= tol:
                failures.append(f"{p.name} {name} {shape}: max diff {diff:.2e} > {tol:.1e}")
        failures += bench_pipelines.check_in_place(p, pipeline, images, outs)
    return failures


def run(directory: Path, doc: Path, repeats: int) -> int:
    from kalg.targets.cuda.device import probe
    found = probe()
    if isinstance(found, str):
        print(f"gpu_check: no CUDA device ({found}): nothing checked or measured",
              file=sys.stderr)
        return 2
    manifest = json.loads((directory / "manifest.json").read_text(encoding="utf-8"))
    failures, checked, failed = [], 0, 0
    for data in manifest["examples"]:
        p = bench.Prepared.from_json(data)
        problems = check(p, directory)
        failures += problems
        checked += 1
        failed += bool(problems)
        print(f"check {p.name}: {'FAIL' if problems else 'ok'}", file=sys.stderr, flush=True)
    pipelines = [bench_pipelines.PreparedPipeline.from_json(d)
                 for d in manifest.get("pipelines", [])]
    for p in pipelines:
        problems = bench_pipelines.check(p, directory)
        failures += problems
        checked += 1
        failed += bool(problems)
        print(f"check pipeline {p.name}: {'FAIL' if problems else 'ok'}", file=sys.stderr,
              flush=True)
    results = []
    for data in manifest["bench"]:
        p = bench.Prepared.from_json(data)
        print(f"bench: {p.name}", file=sys.stderr, flush=True)
        results.append(bench.measure(p, directory, repeats))
    piped = []
    for p in pipelines:
        print(f"bench pipeline: {p.name}", file=sys.stderr, flush=True)
        piped.append(bench_pipelines.measure(p, directory, repeats))
    text = (f"# kalg on CUDA: measured\n\n{time.strftime('%Y-%m-%d', time.gmtime())}, "
            f"`bash scripts/gpu_check.sh run`; {bench.header(str(found))}"
            f"Examples checked against scipy.ndimage on the GPU: {checked - failed}"
            f" of {checked} passed{' (CuPy in place too)' if _has('cupy') else ''}.\n"
            f"search s and compile s: kalg's one-time costs on the machine that prepared the "
            f"libraries ({manifest['prepared on']}); first call s: the first call on the GPU "
            f"(module load and PTX JIT for kalg, autotuning for cuDNN, kernel compilation for "
            f"CuPy). Throughput: the median of {repeats} calls, data on the device.\n\n"
            + bench.format_table(results)
            + "\nSchedules:\n\n" + "".join(f"* {r['row']}: {r['schedule']}\n" for r in results)
            + _pipelines_section(piped))
    doc.write_text(text, encoding="utf-8")
    sys.stdout.write(text)
    for f in failures:
        print(f"FAIL {f}", file=sys.stderr)
    return 1 if failures else 0


def _pipelines_section(results: list[dict]) -> str:
    """The pipelines' table: kalg's one fused kernel against the chains of library calls."""
    if not results:
        return ""
    return ("\n## Pipelines\n\nEach pipeline (examples/) as one fused kalg pipeline against the "
            "calls a GPU user chains: CuPy (`cupyx.scipy.ndimage.correlate` per conv, CuPy "
            "elementwise operations per pointwise node) and PyTorch (`F.pad` and `conv2d` per "
            "conv, torch operations). `max diff`: kalg against the CuPy chain.\n\n"
            + bench_pipelines.format_table(results)
            + "\nSchedules:\n\n" + "".join(f"* {r['row']}: {r['schedule']}\n" for r in results))


def _has(name: str) -> bool:
    try:
        __import__(name)
    except ImportError:
        return False
    return True


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="step", required=True)
    p = sub.add_parser("prepare")
    p.add_argument("bundle", type=Path)
    p.add_argument("--capability", default="9.0",
                   help="the GPU's compute capability (default 9.0: the H200 lent here)")
    r = sub.add_parser("run")
    r.add_argument("bundle", type=Path)
    r.add_argument("--doc", type=Path, default=Path("docs/cuda-bench.md"))
    r.add_argument("--repeats", type=int, default=10)
    args = parser.parse_args()
    if args.step == "prepare":
        major, minor = (int(v) for v in args.capability.split("."))
        return prepare(args.bundle, (major, minor))
    return run(args.bundle, args.doc, args.repeats)


if __name__ == "__main__":
    sys.exit(main())
