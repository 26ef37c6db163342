"""Default compile time of kalg on fresh family draws, one checkout against another.

    .venv/bin/python scripts/family_times.py --per-family 3
    .venv/bin/python scripts/family_times.py --families dense3u dense3s --per-family 5 \
        --seed 123 --src before=../wt-base/src --src after=src --effort default

Each draw of `kalg.families` (`--seed`: default a fresh random one, printed) is compiled by
`python -m kalg optimize FILE --json` in its own process, once per `--src` (a label and the
`src` folder of a kalg checkout, put first on PYTHONPATH; default: this checkout's), in turn,
so that machine load falls on every checkout alike. Seconds include Python's start; CPU
seconds are the process's and its workers' (user + system). Prints one row per kernel (length,
CPU and wall seconds per checkout; whether the programs are byte-identical) and one per family
(totals, median and largest CPU and wall seconds). Speed is measured here, never in tests.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import secrets
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from kalg.families import FAMILIES, Draw, draw  # noqa: E402


def compile_once(d: Draw, src: Path, folder: Path, effort: str) -> dict:
    """One compile of `d` by the kalg in `src`: instructions, program, CPU and wall seconds."""
    source = folder / f"{d.name}.kalg"
    source.write_text(d.kalg_text(), encoding="utf-8")
    cmd = [sys.executable, "-m", "kalg", "optimize", str(source), "--json", "--effort", effort]
    env = {"PYTHONPATH": str(src), "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
           "HOME": os.environ.get("HOME", "/tmp")}
    start, before = time.monotonic(), _children_cpu()
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
    wall, cpu = time.monotonic() - start, _children_cpu() - before
    try:
        obj = json.loads(proc.stdout)
    except json.JSONDecodeError:
        obj = {}
    ok = bool(obj.get("ok") and obj.get("verified"))
    return {"instructions": obj.get("instructions") if ok else None,
            "program": obj.get("program") if ok else None, "cpu": round(cpu, 2),
            "wall": round(wall, 2), "stages": obj.get("stats", {}).get("seconds", {}),
            "error": None if ok else proc.stderr[-300:]}


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def kernel_rows(rows: list[dict], labels: list[str]) -> list[str]:
    head = ["kernel", *(f"{x} length" for x in labels), *(f"{x} CPU s" for x in labels),
            *(f"{x} wall s" for x in labels), "same program"]
    lines = ["| " + " | ".join(head) + " |", "|---|" + "---:|" * (len(head) - 1)]
    for r in rows:
        runs = [r["runs"][x] for x in labels]
        same = len({x["program"] for x in runs}) == 1 and runs[0]["program"] is not None
        cells = [r["name"], *(str(x["instructions"]) for x in runs),
                 *(str(x["cpu"]) for x in runs), *(str(x["wall"]) for x in runs),
                 "yes" if same else "NO"]
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def family_rows(rows: list[dict], labels: list[str]) -> list[str]:
    head = ["family", "kernels"]
    for x in labels:
        head += [f"{x} total", f"{x} median CPU s", f"{x} max CPU s", f"{x} median wall s",
                 f"{x} max wall s"]
    head.append("same programs")
    lines = ["| " + " | ".join(head) + " |", "|---|" + "---:|" * (len(head) - 1)]
    for fam in dict.fromkeys(r["family"] for r in rows):
        mine = [r for r in rows if r["family"] == fam]
        cells = [fam, str(len(mine))]
        for x in labels:
            runs = [r["runs"][x] for r in mine]
            cpu, wall = [u["cpu"] for u in runs], [u["wall"] for u in runs]
            total = sum(u["instructions"] or 0 for u in runs)
            cells += [str(total), f"{statistics.median(cpu):.1f}", f"{max(cpu):.1f}",
                      f"{statistics.median(wall):.1f}", f"{max(wall):.1f}"]
        same = sum(len({r["runs"][x]["program"] for x in labels}) == 1 for r in mine)
        cells.append(f"{same} of {len(mine)}")
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--families", nargs="+", choices=list(FAMILIES), default=list(FAMILIES))
    p.add_argument("--per-family", type=int, default=3)
    p.add_argument("--seed", type=int, default=None, help="default: a fresh one, printed")
    p.add_argument("--src", action="append", default=[],
                   help="LABEL=FOLDER, a kalg checkout's src folder (repeatable)")
    p.add_argument("--effort", default="default")
    p.add_argument("--out", type=Path, help="write every row as JSON here")
    args = p.parse_args(argv)
    srcs = dict(s.split("=", 1) for s in args.src) or {"this": str(ROOT / "src")}
    srcs = {k: Path(v).resolve() for k, v in srcs.items()}
    seed = secrets.randbelow(2**31) if args.seed is None else args.seed
    print(f"seed {seed}; load average {os.getloadavg()[0]:.1f}", flush=True)
    drawn = [draw(fam, args.per_family, seed) for fam in args.families]
    draws = [d for i in range(args.per_family) for ds in drawn for d in ds[i:i + 1]]
    rows = []
    with tempfile.TemporaryDirectory(prefix="kalg-times-") as tmp:
        for d in draws:
            runs = {x: compile_once(d, src, Path(tmp), args.effort) for x, src in srcs.items()}
            rows.append({"name": d.name, "family": d.family, "runs": runs})
            print(json.dumps({"name": d.name, **{x: {k: v for k, v in u.items()
                                                      if k != "program"}
                                                  for x, u in runs.items()}}),
                  file=sys.stderr, flush=True)
    if args.out:
        args.out.write_text(json.dumps({"seed": seed, "rows": rows}, indent=1),
                            encoding="utf-8")
    labels = list(srcs)
    print(f"load average at the end {os.getloadavg()[0]:.1f}")
    print("\n".join(kernel_rows(rows, labels)))
    print()
    print("\n".join(family_rows(rows, labels)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
