"""Where a default compile's CPU goes, search by search, on fresh family draws.

    .venv/bin/python scripts/search_times.py --per-family 2            # every family, fresh seed
    .venv/bin/python scripts/search_times.py --families dense3u --per-family 3 --seed 123

Each draw of `kalg.families` is compiled in its own process (`python scripts/search_times.py
--one FILE`) with `KALG_WORKERS=1`, so every search runs in that process and its time is its own.
Each search is wrapped and its CPU recorded (the process's and its waited children's, so the
e-graph's saturation child counts), exclusive of the searches it calls:

* ``gen <op set> <rung> <limits>``: every `codegen.generate` call (the ladder's screens and
  refines by op set and rung size; calls from elsewhere by their caller's name);
* ``goal bags``, ``exact`` (`pipeline._proved`: factors, kept value, exhaustive or the
  shorter-by-search), ``prove`` (`portfolio._unbeatable`), ``lower bound``, ``e-graph``
  (`candidates.search`: saturation, extraction, the candidates);
* ``rest``: the compile's CPU outside all of them (a filter's own constructions, verification,
  the front end); ``import``: importing the compiler, before any of it.

Besides the times it prints, per kernel, the final length, the best program of each op set's
rungs (screens alone, and with the refines), the goal-bag search's, and what the final length
would have been without basic's rungs, or without the refines (the searches are independent,
so these are read off the recorded results, not run). Speed is measured here, never in tests.
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
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))


def _cpu() -> float:
    me = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


class _Timer:
    """Exclusive CPU per label: a call's time less that of the wrapped calls inside it."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = defaultdict(float)
        self.stack: list[float] = []  # CPU of wrapped calls inside the current one
        self.results: list[dict] = []

    def wrap(self, owner, name: str, label) -> None:
        inner = getattr(owner, name)

        def wrapped(*args, **kwargs):
            tag = label(*args, **kwargs) if callable(label) else label
            start = _cpu()
            self.stack.append(0.0)
            try:
                out = inner(*args, **kwargs)
            finally:
                nested = self.stack.pop()
                spent = _cpu() - start
                self.seconds[tag] += spent - nested
                if self.stack:
                    self.stack[-1] += spent
            if tag.startswith("gen") or tag == "goal bags":
                self.results.append({"search": tag, "length": None if out is None else len(out)})
            return out
        setattr(owner, name, wrapped)


def _gen_label(decomposition, registers, input_register, op_set, limits, **_):
    from kalg.targets.scamp5 import portfolio
    kinds = {id(portfolio.SCREEN): "screen", id(portfolio.SCREEN_ONLY): "screen",
             id(portfolio.REFINE): "refine", id(portfolio.REFINE_NARROW): "refine"}
    kind = kinds.get(id(limits))
    caller = sys._getframe(3).f_code.co_name  # wrapped <- generate_within <- its caller
    if kind is None and caller == "attempt":
        kind = "refine"  # a limit replaced for --timeout, or an effort level's wider one
    if caller != "attempt":
        kind = f"from {sys._getframe(2).f_code.co_name}/{caller}"
    return f"gen {op_set} {len(registers)} {kind}"


def one(path: str) -> dict:
    """Compile `path` at default effort in this process, every search timed."""
    start = _cpu()
    from kalg.settings import Settings
    from kalg.targets.scamp5 import candidates, codegen, pipeline, portfolio
    imported = _cpu() - start
    timer = _Timer()
    timer.wrap(codegen, "generate", _gen_label)
    timer.wrap(codegen, "goalbag_filter", "goal bags")
    timer.wrap(candidates, "search", "e-graph")
    timer.wrap(pipeline, "_proved", "exact")
    timer.wrap(pipeline, "lower_bound", "lower bound")
    timer.wrap(portfolio, "_unbeatable", "prove")
    begin = _cpu()
    result = pipeline.compile_file(path, Settings())
    total = _cpu() - begin
    seconds = dict(timer.seconds)
    seconds["rest"] = total - sum(seconds.values())
    seconds["import"] = imported
    return {"length": len(result.program or []), "candidate": result.stats.get("candidate"),
            "seconds": {k: round(v, 3) for k, v in seconds.items()}, "total": round(total, 3),
            "results": timer.results}


def _best(results: list[dict], keep) -> int | None:
    lengths = [r["length"] for r in results if r["length"] is not None and keep(r["search"])]
    return min(lengths, default=None)


def _group(label: str) -> str:
    """A search's row in the summary."""
    if not label.startswith("gen "):
        return label
    _, op_set, size, kind = label.split(" ", 3)
    if kind.startswith("from"):
        return f"gen {kind}"
    return f"{op_set} rungs: {kind}s" + ("" if int(size) >= 6 else " (fewer than 6 registers)")


def summary(rows: list[dict]) -> list[str]:
    totals: dict[str, float] = defaultdict(float)
    for r in rows:
        for label, s in r["seconds"].items():
            totals[_group(label)] += s
    every = sum(totals.values())
    lines = ["| search | CPU s (all compiles) | share |", "|---|---:|---:|"]
    for label, s in sorted(totals.items(), key=lambda t: -t[1]):
        lines.append(f"| {label} | {s:.1f} | {100 * s / every:.0f}% |")
    lines.append(f"| all | {every:.1f} | |")
    return lines


def kernel_lines(rows: list[dict]) -> list[str]:
    head = ["kernel", "length", "CPU s", "basic screens", "basic refined", "all screens",
            "all refined", "goal bags", "without basic", "without refines"]
    lines = ["| " + " | ".join(head) + " |", "|---|" + "---:|" * (len(head) - 1)]
    for r in rows:
        res = r["results"]

        def ladder(op, kinds, res=res):
            return _best(res, lambda s: s.startswith(f"gen {op} ") and s.split(" ", 3)[3] in kinds)
        cells = [ladder("basic", ("screen",)), ladder("basic", ("screen", "refine")),
                 ladder("all", ("screen",)), ladder("all", ("screen", "refine")),
                 _best(res, lambda s: s == "goal bags")]
        lines.append("| " + " | ".join(
            [r["name"], str(r["length"]), f"{r['cpu']:.1f}",
             *("-" if c is None else str(c) for c in cells), *r["would"]]) + " |")
    return lines


def _would(r: dict) -> list[str]:
    """The final length without basic's rungs, and without every refine: where the dropped
    searches' best was not the final length, it stays; else '?' (another search may hold it)."""
    res, final = r["results"], r["length"]
    out = []
    for dropped in (lambda s: s.startswith("gen basic "),
                    lambda s: s.startswith("gen ") and s.endswith(" refine")):
        gone = _best(res, dropped)
        kept = _best(res, lambda s, dropped=dropped: not dropped(s))
        out.append(str(final) if gone is None or gone > final or (kept or 10**9) <= final
                   else f"? ({gone} dropped, {kept} kept)")
    return out


def main(argv: list[str] | None = None) -> int:
    from kalg.families import FAMILIES, draw
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--families", nargs="+", choices=list(FAMILIES), default=list(FAMILIES))
    p.add_argument("--per-family", type=int, default=2)
    p.add_argument("--seed", type=int, default=None, help="default: a fresh one, printed")
    p.add_argument("--out", type=Path, help="write every row as JSON here")
    p.add_argument("--one", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.one:
        print(json.dumps(one(args.one)))
        return 0
    seed = secrets.randbelow(2**31) if args.seed is None else args.seed
    print(f"seed {seed}; load average {os.getloadavg()[0]:.1f}", flush=True)
    drawn = [draw(fam, args.per_family, seed) for fam in args.families]
    draws = [d for i in range(args.per_family) for ds in drawn for d in ds[i:i + 1]]
    rows = []
    env = os.environ | {"KALG_WORKERS": "1"}
    with tempfile.TemporaryDirectory(prefix="kalg-search-times-") as tmp:
        for d in draws:
            source = Path(tmp) / f"{d.name}.kalg"
            source.write_text(d.kalg_text(), encoding="utf-8")
            begin = time.monotonic()
            proc = subprocess.run([sys.executable, __file__, "--one", str(source)],
                                  capture_output=True, text=True, env=env)
            if proc.returncode:
                print(f"{d.name}: failed\n{proc.stderr[-600:]}", file=sys.stderr)
                continue
            row = json.loads(proc.stdout) | {"name": d.name, "family": d.family,
                                              "wall": round(time.monotonic() - begin, 2)}
            row["cpu"] = row["total"] + row["seconds"]["import"]
            row["would"] = _would(row)
            rows.append(row)
            print(json.dumps({k: row[k] for k in ("name", "length", "cpu", "wall")}),
                  file=sys.stderr, flush=True)
    if args.out:
        args.out.write_text(json.dumps({"seed": seed, "rows": rows}, indent=1), encoding="utf-8")
    print(f"load average at the end {os.getloadavg()[0]:.1f}")
    print("\n".join(kernel_lines(rows)))
    print()
    print("\n".join(summary(rows)))
    fams = dict.fromkeys(r["family"] for r in rows)
    print()
    print("| family | median CPU s |\n|---|---:|")
    for fam in fams:
        print(f"| {fam} | {statistics.median(r['cpu'] for r in rows if r['family'] == fam):.1f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
