"""kalg against the Cain compiler on seeded random kernels that no file of the project holds.

Cain (github.com/ed741/cain, Java) is not a dependency of kalg: build it yourself and pass its
class path with --cain-classpath. Each kernel is written as a .kalg file and as a Cain JSON
configuration (Cain's own AnalogNet2 example configuration: array goals, CGDS traversal,
plan-length cost, threshold-15 pattern pair generation, registers A..F, input in A), Cain runs
for --cain-seconds with --cain-workers threads, and its final program is checked by
`kalg simulate` (exactly and numerically) before it is counted. kalg runs as
`python -m kalg optimize FILE --ops OPS`, one process per kernel.

The kernels (deterministic in --seed, drawn here, never stored):
  u8   3x3, integers 0..8, /8 (the Cain paper's protocol for random kernels)
  s4   3x3, integers -4..4, /4
  f2   a filter of two 3x3 kernels of the u8 kind, outputs in A and B

Prints a Markdown table (kernel, kalg count and seconds, Cain count and seconds) and writes
every file and a JSON summary to --out.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
FAMILIES = ("u8", "s4", "f2")


def draw(family: str, rng: np.random.Generator) -> tuple[list[np.ndarray], int]:
    """Integer arrays (one per output) and log2 of their common divisor."""
    while True:
        if family == "s4":
            arrays, shift = [rng.integers(-4, 5, size=(3, 3))], 2
        else:
            arrays, shift = [rng.integers(0, 9, size=(3, 3))
                             for _ in range(2 if family == "f2" else 1)], 3
        if all(a.any() for a in arrays):
            return arrays, shift


def kalg_text(name: str, arrays: list[np.ndarray], shift: int, ops: str) -> str:
    rows = [f"target scamp5 {{ registers: A..F, input: A, ops: {ops} }}"]
    mats = [" ; ".join(" ".join(str(int(v)) for v in row) for row in a) for a in arrays]
    if len(arrays) == 1:
        rows.append(f"kernel {name} = [{mats[0]}] / {2 ** shift}")
    else:
        outs = ", ".join(f"{reg}: [{m}] / {2 ** shift}"
                         for reg, m in zip("ABCDEF", mats, strict=False))
        rows.append(f"filter {name} = [{outs}]")
    return "\n".join(rows) + "\n"


def cain_config(name: str, arrays: list[np.ndarray], shift: int, ops: str, seconds: float,
                workers: int) -> dict:
    return {
        "name": name, "target": "scamp5", "mode": "analogue", "goalSystem": "array",
        "maxApproximationDepth": 3, "maxApproximationError": 0,
        "filter": {reg: {"depth": -shift, "array": a.tolist()}
                   for reg, a in zip("ABCDEF", arrays, strict=False)},
        "registerAllocator": {"name": "linearScan",
                              "availableRegisters": list("ABCDEF"), "initialRegisters": ["A"]},
        "runConfig": {"searchTime": int(seconds * 1000), "timeOut": True, "workers": workers,
                      "traversalAlgorithm": "CGDS", "costFunction": "PlanLength",
                      "liveCounter": False, "livePrintPlans": 0, "quiet": True,
                      "initialMaxDepth": 200, "forcedDepthReduction": 1,
                      "initialMaxCost": 2147483647, "forcedCostReduction": 0,
                      "allowableAtomsCoefficient": 2, "goalReductionsPerStep": 1,
                      "goalReductionsTolerance": 1},
        "pairGen": {"strategy": {"name": "Threshold", "threshold": 15,
                                 "heuristic": {"name": "Pattern"}, "ops": ops},
                    "outputFormat": {"name": "defaultFormat"}},
        "verifier": "Scamp5Emulator",
    }


def timed(cmd: list[str], timeout: float, env: dict | None = None) -> tuple[str, float, float]:
    """stdout+stderr, wall seconds and CPU seconds (user + system) of `cmd`."""
    start = time.monotonic()
    proc = subprocess.run(["/usr/bin/time", "-f", "cpu-seconds: %U %S", *cmd],
                          capture_output=True, text=True, timeout=timeout, env=env)
    wall = time.monotonic() - start
    cpu = [line.split()[1:] for line in proc.stderr.splitlines()
           if line.startswith("cpu-seconds:")]
    return proc.stdout + proc.stderr, wall, sum(map(float, cpu[-1])) if cpu else float("nan")


def count(program: str) -> int:
    return sum(1 for line in program.splitlines()
               if re.match(r"\s*[a-z0-9_]+\(.*\);\s*$", line)
               and not line.strip().startswith("scamp5_kernel"))


def cain_program(output: str) -> str | None:
    """The last program Cain printed, as kalg's parser reads it (comments dropped)."""
    blocks = re.findall(r"scamp5_kernel_begin\(\);(.*?)scamp5_kernel_end\(\);", output, re.S)
    if not blocks:
        return None
    body = re.sub(r"/\*.*?\*/", "", blocks[-1], flags=re.S)
    lines = [line.strip() for line in body.splitlines() if line.strip()]
    return "scamp5_kernel_begin();\n" + "\n".join(lines) + "\nscamp5_kernel_end();\n"


def run_one(name: str, family: str, arrays, shift: int, args, env) -> dict:
    out: Path = args.out
    source = out / f"{name}.kalg"
    source.write_text(kalg_text(name, arrays, shift, args.ops), encoding="utf-8")
    text, wall, cpu = timed([sys.executable, "-m", "kalg", "optimize", str(source),
                             "--ops", args.ops], 900, env)
    (out / f"{name}.kalg.scamp5").write_text(text, encoding="utf-8")
    row = {"name": name, "family": family, "kalg": count(text) if "verified" in text else None,
           "kalg_seconds": round(wall, 2), "kalg_cpu": round(cpu, 2)}
    config = out / f"{name}.json"
    config.write_text(json.dumps(cain_config(name, arrays, shift, args.ops, args.cain_seconds,
                                             args.cain_workers)), encoding="utf-8")
    text, wall, cpu = timed(["java", "-cp", args.cain_classpath, "uk.co.edstow.cain.Main",
                             str(config)], args.cain_seconds * 4 + 120)
    program = cain_program(text)
    row.update(cain=None, cain_seconds=round(wall, 2), cain_cpu=round(cpu, 2))
    if program is not None:
        path = out / f"{name}.cain.scamp5"
        path.write_text(program, encoding="utf-8")
        check = subprocess.run([sys.executable, "-m", "kalg", "simulate", str(path),
                                "--kernel", str(source), "--size", "32"],
                               capture_output=True, text=True, env=env)
        row["cain"] = count(program) if check.returncode == 0 else None
        row["cain_check"] = "ok" if check.returncode == 0 else check.stdout[-300:]
    return row


def table(rows: list[dict]) -> list[str]:
    lines = ["| kernel | kalg | kalg s (CPU) | Cain | Cain s (CPU) |", "|---|---:|---:|---:|---:|"]
    for r in rows:
        lines.append(f"| {r['name']} | {r['kalg']} | {r['kalg_seconds']} ({r['kalg_cpu']}) | "
                     f"{r['cain']} | {r['cain_seconds']} ({r['cain_cpu']}) |")
    both = [r for r in rows if r["kalg"] is not None and r["cain"] is not None]
    k, c = sum(r["kalg"] for r in both), sum(r["cain"] for r in both)
    shorter = sum(r["kalg"] < r["cain"] for r in both)
    longer = sum(r["kalg"] > r["cain"] for r in both)
    lines += ["", f"Total over {len(both)} kernels both compiled: kalg {k}, Cain {c} "
                  f"({k / c:.2f}); kalg shorter on {shorter}, equal on "
                  f"{len(both) - shorter - longer}, longer on {longer}."]
    return lines


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--cain-classpath", required=True, help="class path of a Cain build")
    p.add_argument("--cain-seconds", type=float, default=60, help="Cain's search time")
    p.add_argument("--cain-workers", type=int, default=2, help="Cain's worker threads")
    p.add_argument("--ops", choices=("all", "basic"), default="all")
    p.add_argument("--seed", type=int, default=1000)
    p.add_argument("--per-family", type=int, default=4, help="kernels of each family")
    p.add_argument("--families", nargs="+", choices=FAMILIES, default=list(FAMILIES))
    p.add_argument("--out", type=Path, required=True, help="folder for files and summary")
    args = p.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    env = {"PYTHONPATH": str(ROOT / "src"), "PATH": "/usr/bin:/bin"}
    rows = []
    for family in args.families:
        rng = np.random.default_rng(args.seed + 100 * FAMILIES.index(family))
        for i in range(args.per_family):
            arrays, shift = draw(family, rng)
            rows.append(run_one(f"{family}_{i}", family, arrays, shift, args, env))
            print(json.dumps(rows[-1]), file=sys.stderr, flush=True)
    (args.out / "summary.json").write_text(json.dumps(rows, indent=1), encoding="utf-8")
    print("\n".join(table(rows)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
