"""Compile time of every kernel of kalg's suites, process start-up included (issue 11, item 7).

    PYTHONPATH=src python scripts/compile_times.py [--suite suite --suite generality]
                                                   [--ops all] [--out times.json]

Each kernel is compiled by `python -m kalg optimize FILE --ops OPS` in its own process, one at
a time; the wall time of that process (start-up, imports, compile, verification, printing) is
what a user waits for; its CPU time (user + system) is recorded too, since on a shared machine
wall time grows with other work. Prints one line per kernel and the median and maximum per
suite and over all of them; --out also writes every number as JSON.
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def kernels(suite: str) -> list[tuple[str, Path]]:
    path = ROOT / "bench" / f"{suite}.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    return [(k["name"], (path.parent / k["file"]).resolve()) for k in data["kernels"]]


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def compile_once(path: Path, ops: str, timeout: float) -> tuple[float, float, int | None]:
    """Wall seconds, CPU seconds (user + system, all of the compile's processes: it does not
    grow with other work on the machine as wall time does) and instructions (None: failed)."""
    start, cpu = time.perf_counter(), _children_cpu()
    try:
        done = subprocess.run([sys.executable, "-m", "kalg", "optimize", str(path), "--ops", ops],
                              capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return time.perf_counter() - start, _children_cpu() - cpu, None
    seconds, cpu = time.perf_counter() - start, _children_cpu() - cpu
    if done.returncode != 0:
        return seconds, cpu, None
    count = sum(1 for line in done.stdout.splitlines()
                if line.strip().endswith(";") and "kernel_" not in line)
    return seconds, cpu, count


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--suite", action="append", default=None,
                   help="bench/NAME.json to time (repeatable; default: suite and generality)")
    p.add_argument("--ops", default="all", choices=["all", "basic"])
    p.add_argument("--timeout", type=float, default=300)
    p.add_argument("--out", type=Path, default=None)
    args = p.parse_args()
    suites = args.suite or ["suite", "generality"]
    rows = []
    for suite in suites:
        for name, path in kernels(suite):
            seconds, cpu, count = compile_once(path, args.ops, args.timeout)
            rows.append({"suite": suite, "kernel": name, "seconds": round(seconds, 2),
                         "cpu_seconds": round(cpu, 2), "instructions": count})
            print(f"{suite} {name}: {count} instructions, {seconds:.2f} s wall, "
                  f"{cpu:.2f} s cpu", flush=True)
    summary = {}
    for suite in [*suites, "all"]:
        mine = [r for r in rows if suite == "all" or r["suite"] == suite]
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
        args.out.write_text(json.dumps({"ops": args.ops, "rows": rows, "summary": summary},
                                       indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
