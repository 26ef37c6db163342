"""Compile time of every kernel of kalg's suites, process start-up included (issue 11, item 7).

    PYTHONPATH=src python scripts/compile_times.py [--suite suite --suite generality]
                                                   [--ops all|basic|both] [--out times.json]

The default is the goal's measure: bench/suite.json with op sets all and basic (as `kalg bench
--ops both`) and bench/generality.json with op set all; `--ops` gives every suite one op set
(`both`: all and basic). Each kernel is compiled by `python -m kalg optimize FILE --ops OPS` in
its own process, one at a time; the wall time of that process (start-up, imports, compile,
verification, printing) is what a user waits for; its CPU time (user + system) is recorded
too, since on a shared machine wall time grows with other work. Prints one line per kernel
and the median and maximum per suite and over all of them; --out also writes every number as
JSON, and `--compare OLD.json` (an earlier --out) prints a before/after table of CPU seconds
and instructions per compile. `--programs DIR` keeps each compile's output (the program text) as
DIR/SUITE-KERNEL-OPS.scamp5, so that two versions of kalg can be compared byte for byte
(`diff -r`); `--random N` also compiles N seeded random kernels (suite "random": 3x3 and 5x5,
signed and unsigned, /1, /8, /16; op set all, and basic for the 3x3 ones).
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent


def kernels(suite: str) -> list[tuple[str, Path]]:
    path = ROOT / "bench" / f"{suite}.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    return [(k["name"], (path.parent / k["file"]).resolve()) for k in data["kernels"]]


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


RANDOM_SEED = 2026
RANDOM_KINDS = ((3, 0, 8, 8), (3, -4, 4, 1), (3, -8, 8, 16), (5, 0, 4, 16), (5, -2, 2, 1))
"""Random kernels: (side, lowest entry, highest entry, divisor), taken in turn."""


def random_kernels(count: int, folder: Path) -> list[tuple[str, Path]]:
    """`count` seeded random kernels (`RANDOM_KINDS` in turn, numpy's default_rng with
    `RANDOM_SEED`), written as .kalg files into `folder`."""
    rng = np.random.default_rng(RANDOM_SEED)
    out = []
    while len(out) < count:
        side, lo, hi, div = RANDOM_KINDS[len(out) % len(RANDOM_KINDS)]
        k = rng.integers(lo, hi + 1, size=(side, side))
        if not k.any():
            continue
        name = f"r{len(out)}_{side}x{side}"
        rows = "\n    ".join(" ".join(f"{v:3d}" for v in row) for row in k)
        path = folder / f"{name}.kalg"
        path.write_text("target scamp5 { registers: A..F, input: A, ops: all }\n\n"
                        f"kernel {name} = [ {rows} ]{f' / {div}' if div != 1 else ''}\n",
                        encoding="utf-8")
        out.append((name, path))
    return out


def compile_once(path: Path, ops: str, timeout: float,
                 keep: Path | None = None) -> tuple[float, float, int | None]:
    """Wall seconds, CPU seconds (user + system, all of the compile's processes: it does not
    grow with other work on the machine as wall time does) and instructions (None: failed).
    `keep`: where to write the compile's output (stdout, and stderr if it failed)."""
    start, cpu = time.perf_counter(), _children_cpu()
    try:
        done = subprocess.run([sys.executable, "-m", "kalg", "optimize", str(path), "--ops", ops],
                              capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return time.perf_counter() - start, _children_cpu() - cpu, None
    seconds, cpu = time.perf_counter() - start, _children_cpu() - cpu
    if keep is not None:
        keep.write_text(done.stdout if done.returncode == 0
                        else f"exit {done.returncode}\n{done.stderr}", encoding="utf-8")
    if done.returncode != 0:
        return seconds, cpu, None
    count = sum(1 for line in done.stdout.splitlines()
                if line.strip().endswith(";") and "kernel_" not in line)
    return seconds, cpu, count


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--suite", action="append", default=None,
                   help="bench/NAME.json to time (repeatable; default: suite and generality)")
    p.add_argument("--ops", default=None, choices=["all", "basic", "both"],
                   help="op set(s) for every suite (default: suite both, generality all)")
    p.add_argument("--timeout", type=float, default=300)
    p.add_argument("--out", type=Path, default=None)
    p.add_argument("--compare", type=Path, default=None,
                   help="an earlier --out: print before/after CPU seconds and instructions")
    p.add_argument("--programs", type=Path, default=None,
                   help="keep every compile's output in this folder (to diff two versions)")
    p.add_argument("--random", type=int, default=0,
                   help="also compile this many seeded random kernels (suite 'random')")
    args = p.parse_args()
    suites = args.suite or ["suite", "generality"]
    scratch = tempfile.TemporaryDirectory()
    found = {suite: kernels(suite) for suite in suites}
    if args.random:
        suites.append("random")
        found["random"] = random_kernels(args.random, Path(scratch.name))
    if args.programs:
        args.programs.mkdir(parents=True, exist_ok=True)
    rows = []
    for suite in suites:
        for ops in _op_sets(suite, args.ops):
            for name, path in found[suite]:
                if suite == "random" and ops == "basic" and "3x3" not in name:
                    continue
                keep = args.programs / f"{suite}-{name}-{ops}.scamp5" if args.programs else None
                seconds, cpu, count = compile_once(path, ops, args.timeout, keep)
                rows.append({"suite": suite, "kernel": name, "ops": ops,
                             "seconds": round(seconds, 2), "cpu_seconds": round(cpu, 2),
                             "instructions": count})
                print(f"{suite} {name} --ops {ops}: {count} instructions, {seconds:.2f} s "
                      f"wall, {cpu:.2f} s cpu", flush=True)
    summary = {}
    for suite in [*suites, "all"]:
        # "all" is the goal's measure: the suites' kernels, not the random ones
        mine = [r for r in rows if r["suite"] == suite
                or (suite == "all" and r["suite"] != "random")]
        summary[suite] = {"kernels": len(mine)}
        for key in ("seconds", "cpu_seconds"):
            times = [r[key] for r in mine]
            summary[suite] |= {f"{key}_median": round(statistics.median(times), 2),
                               f"{key}_max": round(max(times), 2),
                               f"{key}_over_10": sum(t > 10 for t in times)}
        print(f"{suite}: {len(mine)} kernels; " + "; ".join(
            f"{key} median {summary[suite][key + '_median']}, max "
            f"{summary[suite][key + '_max']}, {summary[suite][key + '_over_10']} over 10"
            for key in ("seconds", "cpu_seconds")))
    if args.out:
        args.out.write_text(json.dumps({"ops": args.ops or "default", "rows": rows,
                                        "summary": summary},
                                       indent=1) + "\n", encoding="utf-8")
    if args.compare:
        print(_comparison(json.loads(args.compare.read_text(encoding="utf-8"))["rows"], rows))
    return 0


def _comparison(before: list[dict], after: list[dict]) -> str:
    """A Markdown table: per compile, CPU seconds and instructions before and after (rows of
    an older file without an op set are taken as op set all)."""
    old = {(r["suite"], r["kernel"], r.get("ops", "all")): r for r in before}
    lines = ["| suite | kernel | ops | cpu before | cpu after | instr before | instr after |",
             "|---|---|---|---:|---:|---:|---:|"]
    for r in after:
        b = old.get((r["suite"], r["kernel"], r["ops"]), {})
        lines.append(f"| {r['suite']} | {r['kernel']} | {r['ops']} | {b.get('cpu_seconds')} | "
                     f"{r['cpu_seconds']} | {b.get('instructions')} | {r['instructions']} |")
    return "\n".join(lines)


def _op_sets(suite: str, ops: str | None) -> list[str]:
    """The op sets a suite is timed with: `ops` (both: all and basic), else the goal's
    (the benchmark suite with both, any other with all; random kernels both)."""
    if ops is None:
        ops = "both" if suite in ("suite", "random") else "all"
    return ["all", "basic"] if ops == "both" else [ops]


if __name__ == "__main__":
    sys.exit(main())
