"""kalg against the Cain compiler, kernel by kernel, on seeded families no file holds.

    .venv/bin/python scripts/cain_compare.py --families dense3u bank3 --per-family 6 --seed 123
    .venv/bin/python scripts/cain_compare.py --kernels ../shared/bench/kernels.json

Cain (github.com/ed741/cain, GPLv3) is not part of kalg: it runs beside the project in the folder
`--cain` (default `../shared/cain` relative to the repository root), through that folder's driver
`run_cain.py`, which this script only calls. Without `java` or that folder, Cain's columns are
skipped (said on stderr) and kalg is measured alone.

The kernels: `kalg.families` (seeded generators, see its docstring; `--seed` defaults to a fresh
random one, printed, so every run's draw is new unless the seed is given again), or the kernels
of a Cain `kernels.json` (`--kernels`). Each is compiled

* by kalg, `python -m kalg optimize FILE --json` in its own process (compile seconds include
  Python's start), at every `--effort` level asked for; kalg verifies its program itself
  (exactly and in the simulator) before printing it, and a failure is reported in the row;
* by Cain, `run_cain.py` with `--seconds`, `--workers`, `--ops`, registers A..F, input in A (the
  uniform settings of every Cain figure); Cain's program is then checked by the independent
  checker `verify_scamp5.py` of the same folder and by `kalg simulate`; an unchecked program is
  not counted. Cain's result is cached per kernel in `--cache` (default ~/.cache/kalg/cain),
  keyed by the kernel's exact content and Cain's settings, so a second run costs nothing.

Prints a Markdown table per kernel (kalg per level, kalg's lower bound, Cain, kalg/Cain), then
one row per family (totals, kalg's total without its goal-bag search (the other searches' best,
from `stats`), ratios, how many kernels each compiler made longer, median and
largest compile seconds (wall) and largest CPU seconds of kalg's process and its workers), and
writes every file and `summary.json` to `--out`.

Cain is bounded by wall time and multi-threaded: on a loaded machine it gets less CPU and its
programs can only get longer, which flatters kalg. Say so with any figure taken that way.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import resource
import secrets
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from kalg.families import FAMILIES, Draw, draw  # noqa: E402

DEFAULT_CAIN = ROOT.parent / "shared" / "cain"
DEFAULT_CACHE = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "kalg" / "cain"


# ---------------------------------------------------------------- kernels

def kernels_from_json(path: Path) -> list[Draw]:
    """The kernels of a Cain kernels.json as draws (family: the file's stem)."""
    data = json.loads(path.read_text(encoding="utf-8"))
    entries = data["kernels"] if isinstance(data, dict) else data
    return [Draw(k["name"], path.stem,
                 {reg: (np.array(o["rows"], dtype=np.int64), int(o["log2_divisor"]))
                  for reg, o in sorted(k["outputs"].items())})
            for k in entries]


def count(program: str) -> int:
    """Macro instructions of a SCAMP-5 program text (begin/end and comments not counted)."""
    return sum(1 for line in program.splitlines()
               if re.match(r"\s*[a-z0-9_]+\(.*\);\s*(//.*)?$", line)
               and not line.strip().startswith("scamp5_kernel"))


# ---------------------------------------------------------------- kalg

def run_kalg(d: Draw, effort: str, out: Path, ops: str) -> dict:
    """kalg's verified program for `d` at `effort`: instructions, lower bound, seconds."""
    source = out / f"{d.name}.kalg"
    source.write_text(d.kalg_text(ops), encoding="utf-8")
    cmd = [sys.executable, "-m", "kalg", "optimize", str(source), "--json"]
    if effort != "default":
        cmd += ["--effort", effort]
    start, before = time.monotonic(), _children_cpu()
    proc = subprocess.run(cmd, capture_output=True, text=True, env=_env())
    seconds, cpu = time.monotonic() - start, _children_cpu() - before
    try:
        obj = json.loads(proc.stdout)
    except json.JSONDecodeError:
        obj = {"ok": False, "errors": [{"message": proc.stderr[-300:]}]}
    row = {"instructions": None, "lower": None, "seconds": round(seconds, 2),
           "cpu": round(cpu, 2)}
    if obj.get("ok") and obj.get("verified"):
        (out / f"{d.name}.{effort}.scamp5").write_text(obj["program"], encoding="utf-8")
        row.update(instructions=obj["instructions"], lower=obj.get("lower_bound"))
        bags = re.search(r"other searches' best: (\d+)",
                         obj.get("stats", {}).get("goal-bag search", ""))
        row["before"] = int(bags.group(1)) if bags else obj["instructions"]
    else:
        row["error"] = (obj.get("errors") or [{}])[0].get("message", "not verified")
    return row


def _children_cpu() -> float:
    """User + system seconds of this process's finished children (kalg and its workers)."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _env() -> dict:
    return {"PYTHONPATH": str(ROOT / "src"), "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": os.environ.get("HOME", "/tmp")}


# ---------------------------------------------------------------- Cain

def cain_available(folder: Path) -> str | None:
    """None when Cain can run from `folder`, else why not."""
    if shutil.which("java") is None:
        return "java is not installed"
    for name in ("run_cain.py", "cain.jar", "verify_scamp5.py"):
        if not (folder / name).is_file():
            return f"{folder / name} is missing"
    return None


def cache_key(d: Draw, args: argparse.Namespace) -> str:
    """The kernel's exact content and every Cain setting that can change its program."""
    jar = (args.cain / "cain.jar").stat()
    text = json.dumps({"kernel": d.key(), "seconds": args.cain_seconds,
                       "workers": args.cain_workers, "ops": args.ops, "registers": "A..F",
                       "input": "A", "jar_size": jar.st_size}, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def run_cain(d: Draw, args: argparse.Namespace) -> dict:
    """Cain's checked program for `d` (from the cache when it has one)."""
    entry = args.cache / f"{cache_key(d, args)}.json"
    if entry.is_file():
        return json.loads(entry.read_text(encoding="utf-8")) | {"cached": True}
    with tempfile.TemporaryDirectory(prefix="kalg-cain-") as tmp:
        work = Path(tmp)
        kernels = work / "kernels.json"
        kernels.write_text(json.dumps({"kernels": [d.cain_json()]}), encoding="utf-8")
        cmd = [sys.executable, str(args.cain / "run_cain.py"), str(kernels), "--seconds",
               str(args.cain_seconds), "--workers", str(args.cain_workers), "--ops", args.ops,
               "--out", str(work / "out")]
        load = os.getloadavg()[0]
        proc = subprocess.run(cmd, capture_output=True, text=True)
        summary = work / "out" / "summary.json"
        rows = json.loads(summary.read_text())["results"] if summary.is_file() else []
        row = rows[0] if rows else {}
        program_path = work / "out" / f"{d.name}.txt"
        program = program_path.read_text() if program_path.is_file() else None
        result = {"name": d.name, "count": None, "best_at_ms": row.get("best_at_ms"),
                  "wall_s": row.get("wall_s"), "load": round(load, 1), "program": program,
                  "settings": {"seconds": args.cain_seconds, "workers": args.cain_workers,
                               "ops": args.ops}}
        if program is not None:
            result |= check_cain(d, program, kernels, work, args)
        elif proc.returncode != 0:
            result["error"] = proc.stderr[-300:]
    args.cache.mkdir(parents=True, exist_ok=True)
    entry.write_text(json.dumps(result, indent=1), encoding="utf-8")
    return result | {"cached": False}


def check_cain(d: Draw, program: str, kernels: Path, work: Path,
               args: argparse.Namespace) -> dict:
    """Cain's program checked by the independent checker and by `kalg simulate`."""
    path = work / f"{d.name}.scamp5"
    path.write_text(re.sub(r"/\*.*?\*/", "", program, flags=re.S), encoding="utf-8")
    indep = subprocess.run([sys.executable, str(args.cain / "verify_scamp5.py"), str(path),
                            str(kernels), d.name], capture_output=True, text=True)
    source = work / f"{d.name}.kalg"
    source.write_text(d.kalg_text(args.ops), encoding="utf-8")
    ours = subprocess.run([sys.executable, "-m", "kalg", "simulate", str(path), "--kernel",
                           str(source), "--size", "48"], capture_output=True, text=True,
                          env=_env())
    ok = indep.returncode == 0 and ours.returncode == 0
    return {"count": count(program) if ok else None,
            "check": "ok" if ok else (indep.stdout + ours.stdout + ours.stderr)[-300:]}


# ---------------------------------------------------------------- tables

def kernel_table(rows: list[dict], efforts: list[str], cain: bool) -> list[str]:
    head = ["kernel", *(f"kalg {e}" for e in efforts), "bound", "kalg s"]
    head += ["Cain", "Cain best at s", f"kalg {efforts[-1]}/Cain"] if cain else []
    lines = ["| " + " | ".join(head) + " |", "|---|" + "---:|" * (len(head) - 1)]
    for r in rows:
        k = [r["kalg"][e] for e in efforts]
        cells = [r["name"], *(_n(x["instructions"]) for x in k),
                 _n(max((x["lower"] or 0) for x in k) or None),
                 " / ".join(str(x["seconds"]) for x in k)]
        if cain:
            c = r["cain"]
            at = c.get("best_at_ms")
            last = k[-1]["instructions"]
            cells += [_n(c.get("count")), "-" if at is None else f"{at / 1000:.1f}",
                      f"{last / c['count']:.2f}" if last and c.get("count") else "-"]
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def family_table(rows: list[dict], efforts: list[str], cain: bool) -> list[str]:
    head = ["family", "kernels"]
    for e in efforts:
        head += [f"kalg {e}", f"{e} without goal bags"]
        head += [f"{e}/Cain", f"{e} longer", f"{e} shorter"] if cain else []
        head += [f"{e} median s", f"{e} max s", f"{e} max CPU s"]
    head += ["Cain", "proven shortest"] if cain else ["proven shortest"]
    lines = ["| " + " | ".join(head) + " |", "|---|" + "---:|" * (len(head) - 1)]
    for fam in dict.fromkeys(r["family"] for r in rows):
        mine = [r for r in rows if r["family"] == fam]
        both = [r for r in mine if all(r["kalg"][e]["instructions"] for e in efforts)
                and (not cain or r["cain"].get("count"))]
        cells = [fam, str(len(both)) + ("" if len(both) == len(mine) else f" of {len(mine)}")]
        c_total = sum(r["cain"]["count"] for r in both) if cain else 0
        for e in efforts:
            total = sum(r["kalg"][e]["instructions"] for r in both)
            secs = [r["kalg"][e]["seconds"] for r in mine]
            cpus = [r["kalg"][e].get("cpu") for r in mine if r["kalg"][e].get("cpu") is not None]
            cells += [str(total), str(sum(r["kalg"][e].get("before", r["kalg"][e]["instructions"])
                                          for r in both))]
            if cain:
                cells += [f"{total / c_total:.2f}" if c_total else "-",
                          str(sum(r["kalg"][e]["instructions"] > r["cain"]["count"]
                                  for r in both)),
                          str(sum(r["kalg"][e]["instructions"] < r["cain"]["count"]
                                  for r in both))]
            cells += [f"{statistics.median(secs):.1f}", f"{max(secs):.1f}",
                      f"{max(cpus):.1f}" if cpus else "-"]
        proven = sum(r["kalg"][efforts[-1]]["instructions"] == r["kalg"][efforts[-1]]["lower"]
                     for r in both)
        cells += [str(c_total), str(proven)] if cain else [str(proven)]
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def _n(x) -> str:
    return "-" if x is None else str(x)


# ---------------------------------------------------------------- main

def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--families", nargs="+", choices=list(FAMILIES), default=list(FAMILIES))
    p.add_argument("--per-family", type=int, default=20, help="kernels of each family")
    p.add_argument("--seed", type=int, default=None,
                   help="seed of the draw (default: a fresh random one, printed)")
    p.add_argument("--kernels", type=Path, help="a Cain kernels.json to run instead of families")
    p.add_argument("--names", help="only these kernels (comma-separated), in this order")
    p.add_argument("--effort", nargs="+", default=["default"],
                   help="kalg levels to run (default, or a level of kalg optimize --effort)")
    p.add_argument("--no-kalg", action="store_true", help="only fill Cain's cache")
    p.add_argument("--cain", type=Path, default=DEFAULT_CAIN,
                   help="the folder with run_cain.py, cain.jar and verify_scamp5.py "
                        "(default: ../shared/cain relative to the repository root)")
    p.add_argument("--no-cain", action="store_true", help="measure kalg alone")
    p.add_argument("--cached-only", action="store_true",
                   help="only the kernels whose Cain result is in the cache already")
    p.add_argument("--cain-seconds", type=float, default=60, help="Cain's search time")
    p.add_argument("--cain-workers", type=int, default=2, help="Cain's worker threads")
    p.add_argument("--cache", type=Path, default=DEFAULT_CACHE,
                   help="Cain's results per kernel and settings (default ~/.cache/kalg/cain)")
    p.add_argument("--ops", choices=("all", "basic"), default="all")
    p.add_argument("--out", type=Path, default=Path("cain-compare-out"),
                   help="folder for files and summary.json")
    args = p.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    if args.kernels:
        draws = kernels_from_json(args.kernels)
    else:
        seed = secrets.randbelow(2**31) if args.seed is None else args.seed
        print(f"seed {seed}", flush=True)
        # round robin over the families, so that a run cut short still covers each of them
        drawn = [draw(fam, args.per_family, seed) for fam in args.families]
        draws = [d for i in range(args.per_family) for ds in drawn for d in ds[i:i + 1]]
    if args.names:
        wanted = args.names.split(",")  # in the order given
        by_name = {d.name: d for d in draws}
        draws = [by_name[n] for n in wanted if n in by_name]
    why = "--no-cain" if args.no_cain else cain_available(args.cain)
    if why:
        print(f"Cain skipped: {why}", file=sys.stderr)
    if args.cached_only and not why:
        draws = [d for d in draws if (args.cache / f"{cache_key(d, args)}.json").is_file()]
    efforts = [] if args.no_kalg else args.effort
    rows = []
    for d in draws:
        row = {"name": d.name, "family": d.family, "kernel": d.cain_json()["outputs"],
               "kalg": {e: run_kalg(d, e, args.out, args.ops) for e in efforts}}
        if not why:
            row["cain"] = run_cain(d, args)
        rows.append(row)
        print(json.dumps({k: v for k, v in row.items() if k != "kernel"}
                         | ({"cain": {k: v for k, v in row["cain"].items() if k != "program"}}
                            if not why else {})), file=sys.stderr, flush=True)
    (args.out / "summary.json").write_text(json.dumps(rows, indent=1), encoding="utf-8")
    if efforts:
        print("\n".join(kernel_table(rows, efforts, not why)))
        print()
        print("\n".join(family_table(rows, efforts, not why)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
