"""The generality suite: kernels kalg was not tuned on (`kalg bench --suite generality`).

    PYTHONPATH=src python scripts/generality.py            # (re)write the kernel files and suite
    PYTHONPATH=src python scripts/generality.py --update   # also compile every kernel under a
                                                           # few configurations and record
                                                           # "best" and "optimum" (minutes)
    PYTHONPATH=src python scripts/generality.py --exact --nodes 3000000   # exact search only:
                                      # every kernel whose best is at most --up-to instructions,
                                      # every length below its best; records "optimum"/"lower"
    PYTHONPATH=src python scripts/generality.py --exact --suite bench/suite.json  # the same for
                                      # the benchmark's one-output 3x3 kernels (nothing recorded)

Writes examples/generality/NAME.kalg and bench/generality.json (the format of bench/suite.json).
Kernels: classic named filters (edge, compass, Laplacian, LoG, DoG, unsharp, emboss), boxes
and binomial Gaussians up to 31x31, and seeded random integer kernels: numpy
`default_rng(SEED)`, in this order, 3x3 unsigned 0..8 over 8 (three), 3x3 signed -4..4 over 1
(three), 3x3 signed -8..8 over 16 (two), 5x5 unsigned 0..4 over 16 (two), 5x5 signed -2..2
over 1 (two); an all-zero draw is drawn again.

Figures recorded per kernel (never read by the compiler):
* "best": the fewest instructions any kalg configuration has found (op set all, A..F), over
  the configurations of `CONFIGS`, kept as the minimum over every --update run;
* "optimum": the length proven shortest by the exhaustive search, only where it finished;
* "lower": no program shorter than this exists (the exact search exhausted every shorter
  length), where the search stopped at its node budget before proving an optimum.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from math import comb
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
SUITE = ROOT / "bench" / "generality.json"
KERNELS = ROOT / "examples" / "generality"
SEED = 11
HEADER = "target scamp5 { registers: A..F, input: A, ops: all }\n"

CONFIGS = (("default",), ("--node-limit", "60000"),
           ("--exhaustive", "--exhaustive-nodes", "600000"))
"""kalg optimize options compiled by --update (each with --ops all, registers A..F)."""

EXHAUSTIVE_UP_TO = 6
"""The exhaustive configuration runs only for kernels whose best program is this short (with
600000 nodes the search finishes depth 4 of a 3x3 kernel and often depth 5, which takes 0.1 to
5 million nodes; `--exact` with a larger budget goes further)."""


def matrix(rows) -> str:
    width = max(len(str(v)) for r in rows for v in r)
    lines = ["  ".join(str(v).rjust(width) for v in r) for r in rows]
    return "[ " + "\n    ".join(lines) + " ]"


def binomial(n: int) -> list[int]:
    return [comb(n - 1, k) for k in range(n)]


def classic() -> dict[str, tuple[str, str]]:
    """name -> (comment, .kalg body defining the kernel `name` last)."""
    k = {
        "prewitt_x": ("Prewitt, horizontal gradient", [[1, 0, -1]] * 3),
        "prewitt_y": ("Prewitt, vertical gradient", [[1, 1, 1], [0, 0, 0], [-1, -1, -1]]),
        "scharr_x": ("Scharr, horizontal gradient", [[3, 0, -3], [10, 0, -10], [3, 0, -3]]),
        "scharr_y": ("Scharr, vertical gradient", [[3, 10, 3], [0, 0, 0], [-3, -10, -3]]),
        "roberts_a": ("Roberts cross in a 3x3 window",
                      [[0, 0, 0], [0, 1, 0], [0, 0, -1]]),
        "roberts_b": ("Roberts cross, the other diagonal",
                      [[0, 0, 0], [0, 0, 1], [0, -1, 0]]),
        "kirsch_n": ("Kirsch compass, north", [[5, 5, 5], [-3, 0, -3], [-3, -3, -3]]),
        "kirsch_ne": ("Kirsch compass, north-east", [[-3, 5, 5], [-3, 0, 5], [-3, -3, -3]]),
        "robinson_ne": ("Robinson compass, north-east", [[0, 1, 2], [-1, 0, 1], [-2, -1, 0]]),
        "robinson_nw": ("Robinson compass, north-west", [[2, 1, 0], [1, 0, -1], [0, -1, -2]]),
        "laplacian8": ("Laplacian with diagonals", [[1, 1, 1], [1, -8, 1], [1, 1, 1]]),
        "laplacian_diag": ("Laplacian on the diagonals", [[1, 0, 1], [0, -4, 0], [1, 0, 1]]),
        "laplacian_iso": ("isotropic Laplacian", [[1, 2, 1], [2, -12, 2], [1, 2, 1]]),
        "highpass": ("high-pass (negated 8-neighbour Laplacian)",
                     [[-1, -1, -1], [-1, 8, -1], [-1, -1, -1]]),
        "sharpen8": ("sharpen with diagonals", [[-1, -1, -1], [-1, 9, -1], [-1, -1, -1]]),
        "emboss": ("emboss", [[-2, -1, 0], [-1, 1, 1], [0, 1, 2]]),
        "motion_diag": ("motion blur along a diagonal", [[1, 0, 0], [0, 1, 0], [0, 0, 1]]),
        "mean_cross": ("weighted cross mean", [[0, 1, 0], [1, 4, 1], [0, 1, 0]], 8),
        "sobel5_x": ("5x5 Sobel, horizontal gradient",
                     [[1, 2, 0, -2, -1], [4, 8, 0, -8, -4], [6, 12, 0, -12, -6],
                      [4, 8, 0, -8, -4], [1, 2, 0, -2, -1]]),
        "log5": ("Laplacian of Gaussian, 5x5 (the classic integer mask)",
                 [[0, 0, -1, 0, 0], [0, -1, -2, -1, 0], [-1, -2, 16, -2, -1],
                  [0, -1, -2, -1, 0], [0, 0, -1, 0, 0]]),
    }
    out = {}
    for name, (comment, rows, *div) in k.items():
        tail = f" / {div[0]}" if div else ""
        out[name] = (comment, f"kernel {name} = {matrix(rows)}{tail}\n")
    g = {n: f"kernel g{n} = {matrix([[a * b for b in binomial(n)] for a in binomial(n)])}"
            f" / {4 ** (n - 1)}\n" for n in (3, 5, 7)}
    lap = "kernel lap = [ 0 1 0; 1 -4 1; 0 1 0 ]\n"
    out["unsharp3"] = ("unsharp mask: twice the pixel minus the 3x3 Gaussian",
                       g[3] + "kernel unsharp3 = 2 - g3\n")
    out["unsharp5"] = ("unsharp mask: twice the pixel minus the 5x5 Gaussian",
                       g[5] + "kernel unsharp5 = 2 - g5\n")
    out["dog5"] = ("difference of Gaussians, 3x3 minus 5x5", g[3] + g[5] +
                   "kernel dog5 = g3 - g5\n")
    out["dog7"] = ("difference of Gaussians, 5x5 minus 7x7", g[5] + g[7] +
                   "kernel dog7 = g5 - g7\n")
    out["log9"] = ("Laplacian of Gaussian, 9x9: the Laplacian of the 7x7 binomial Gaussian",
                   g[7] + lap + "kernel log9 = lap * g7\n")
    return out


def large() -> dict[str, tuple[str, str]]:
    out = {}
    for n in (9, 15, 31):
        out[f"box{n}"] = (f"{n}x{n} box (all ones, no division)",
                          f"kernel box{n} = {matrix([[1] * n] * n)}\n")
    for n in (7, 9, 15, 31):
        rows = [[a * b for b in binomial(n)] for a in binomial(n)]
        out[f"gauss{n}"] = (f"{n}x{n} binomial Gaussian",
                            f"kernel gauss{n} = {matrix(rows)} / {4 ** (n - 1)}\n")
    return out


RANDOM = (("rand3u8", 3, 0, 8, 8, 3), ("rand3s1", 3, -4, 4, 1, 3), ("rand3s16", 3, -8, 8, 16, 2),
          ("rand5u16", 5, 0, 4, 16, 2), ("rand5s1", 5, -2, 2, 1, 2))
"""(name prefix, size, low, high, divisor, how many)."""


def random_kernels() -> dict[str, tuple[str, str]]:
    rng = np.random.default_rng(SEED)
    out = {}
    for prefix, n, lo, hi, div, count in RANDOM:
        for i in range(1, count + 1):
            rows = rng.integers(lo, hi + 1, (n, n))
            while not rows.any():
                rows = rng.integers(lo, hi + 1, (n, n))
            name = f"{prefix}_{i}"
            tail = f" / {div}" if div != 1 else ""
            out[name] = (f"random {n}x{n}, integers {lo}..{hi}{tail or ' (no division)'} "
                         f"(seed {SEED})", f"kernel {name} = {matrix(rows.tolist())}{tail}\n")
    return out


def write() -> dict:
    """Write the kernel files; the suite with the figures kept from the existing file."""
    old = {}
    if SUITE.exists():
        old = {e["name"]: e.get("figures", {}) for e in json.loads(SUITE.read_text())["kernels"]}
    KERNELS.mkdir(parents=True, exist_ok=True)
    entries = []
    for name, (comment, body) in {**classic(), **large(), **random_kernels()}.items():
        path = KERNELS / f"{name}.kalg"
        path.write_text(f"# {name}.kalg: {comment} (generality suite, scripts/generality.py)\n"
                        + HEADER + "\n" + body, encoding="utf-8")
        entries.append({"name": name, "file": f"../examples/generality/{name}.kalg",
                        "outputs": 1, "figures": old.get(name, {})})
    suite = {"name": "kalg generality suite: kernels outside bench/suite.json",
             "source": "scripts/generality.py (classic filters, boxes and Gaussians to 31x31, "
                       f"seeded random integer kernels, seed {SEED})",
             "figures": {"best": "fewest instructions any kalg configuration has found (op set "
                                 "all, A..F); kept by scripts/generality.py --update, never "
                                 "read by the compiler",
                         "optimum": "length proven shortest by kalg's exhaustive search (op "
                                    "set all, A..F), where it finished",
                         "lower": "no shorter program exists (exact search, op set all, A..F), "
                                  "where it stopped at its budget before an optimum"},
             "columns": ["optimum", "best", "horner"],
             "kernels": entries}
    return suite


def update(suite: dict, names: list[str], times: Path | None, configs: tuple) -> None:
    """Compile every kernel (or those in `names`) under `configs`; keep the fewest instructions
    in "best" and a proven length in "optimum"; the suite file is written after each kernel.
    With `times` (the JSON of scripts/compile_times.py), its counts are the default
    configuration's and that configuration is not compiled again."""
    measured = {}
    if times is not None:
        data = json.loads(times.read_text(encoding="utf-8"))
        measured = {r["kernel"]: r["instructions"] for r in data["rows"]
                    if r["suite"] == "generality" and r["instructions"] is not None}
    for entry in suite["kernels"]:
        if names and entry["name"] not in names:
            continue
        if entry["name"] in measured:
            count = measured[entry["name"]]
            entry["figures"]["best"] = min(entry["figures"].get("best", count), count)
        path = (SUITE.parent / entry["file"]).resolve()
        for config in configs:
            if config == ("default",) and entry["name"] in measured:
                continue
            args = [] if config == ("default",) else list(config)
            if "--exhaustive" in args and entry["figures"].get("best", 99) > EXHAUSTIVE_UP_TO:
                continue
            cmd = [sys.executable, "-m", "kalg", "optimize", str(path), "--ops", "all", *args]
            try:
                done = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
            except subprocess.TimeoutExpired:
                continue
            if done.returncode != 0:
                continue
            count = sum(1 for line in done.stdout.splitlines()
                        if line.strip().endswith(";") and "kernel_" not in line)
            figures = entry["figures"]
            figures["best"] = min(figures.get("best", count), count)
            if "proven shortest" in done.stdout:
                figures["optimum"] = count
            print(f"{entry['name']} {' '.join(config)}: {count}", file=sys.stderr, flush=True)
        SUITE.write_text(json.dumps(suite, indent=1) + "\n", encoding="utf-8")


def exact(suite: dict, names: list[str], nodes: int, up_to: int, record: bool,
          longest: int | None = None) -> list[dict]:
    """The exact search (`kalg.targets.scamp5.exact.exhaustive`, op set all, A..F, input and output
    A) for every one-output kernel of at most 3x3 whose reference length is at most `up_to`: every
    length below the reference (the recorded "best", else kalg's default compile) is searched,
    under `nodes` (with `longest`, only lengths up to it). A shorter program is verified by
    the search; when none exists below "best", "best" (a verified program's length) is the
    optimum. Records "optimum" or "lower" when
    `record`; returns one row per kernel."""
    import kalg
    from kalg.resources import limit_memory
    from kalg.targets.scamp5.exact.exhaustive import shortest_program
    limit_memory()
    rows = []
    base = Path(suite.get("path", SUITE)).parent
    for entry in suite["kernels"]:
        if (names and entry["name"] not in names) or entry.get("outputs", 1) != 1:
            continue
        if entry.get("figures", {}).get("best", 0) > up_to:
            continue
        path = (base / entry["file"]).resolve()
        kernel = next(iter(kalg.compile(path, emit="kernels").kernels.values()))
        x0, x1, y0, y1 = kernel.trimmed().bounds()
        if x1 - x0 > 2 or y1 - y0 > 2:
            continue
        figures = entry.setdefault("figures", {})
        start = time.process_time()
        count = kalg.compile(path, ops="all").instructions
        compile_s = time.process_time() - start
        best = min(figures.get("best", count), count)
        if best > up_to:
            continue
        start = time.process_time()
        top = best - 1 if longest is None else min(best - 1, longest)
        outcome = shortest_program(kernel, max_length=top, nodes=nodes)
        seconds = time.process_time() - start
        if outcome.program is not None:
            optimum, lower = len(outcome.program), len(outcome.program)
        elif outcome.stopped is None and top < best - 1:
            optimum, lower = None, top + 1
        elif outcome.stopped is None:
            optimum, lower = best, best
        else:
            optimum, lower = None, outcome.lower
        row = {"kernel": entry["name"], "kalg": count, "best": best, "optimum": optimum,
               "lower": lower, "nodes": outcome.nodes, "search_cpu_s": round(seconds, 1),
               "compile_cpu_s": round(compile_s, 1), "stopped": outcome.stopped,
               "program": None if outcome.program is None else
               " ".join(str(i) for i in outcome.program)}
        rows.append(row)
        print(json.dumps(row), file=sys.stderr, flush=True)
        if record:
            figures["best"] = min(best, optimum or best)
            if optimum is not None:
                figures["optimum"] = optimum
                figures.pop("lower", None)
            elif lower > figures.get("lower", 0) and "optimum" not in figures:
                figures["lower"] = lower
            SUITE.write_text(json.dumps(suite, indent=1) + "\n", encoding="utf-8")
    return rows


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--update", action="store_true", help="compile and record best/optimum")
    p.add_argument("--times", type=Path, default=None,
                   help="with --update: take the default configuration's counts from this "
                        "output of scripts/compile_times.py --out")
    p.add_argument("--exhaustive-only", action="store_true",
                   help="with --update: compile the exhaustive configuration only")
    p.add_argument("--exact", action="store_true",
                   help="run the exact search only (see `exact`); records optimum/lower for "
                        "the generality suite")
    p.add_argument("--suite", type=Path, default=None,
                   help="with --exact: another suite file (e.g. bench/suite.json; not written)")
    p.add_argument("--nodes", type=int, default=3_000_000, help="with --exact: node budget")
    p.add_argument("--up-to", type=int, default=9,
                   help="with --exact: only kernels whose best is at most this")
    p.add_argument("--longest", type=int, default=None,
                   help="with --exact: search lengths up to this only (default: best - 1)")
    p.add_argument("--out", type=Path, default=None, help="with --exact: rows as JSON here")
    p.add_argument("names", nargs="*", help="with --update or --exact: only these kernels")
    args = p.parse_args()
    if args.exact and args.suite is not None:
        other = json.loads(args.suite.read_text(encoding="utf-8"))
        other["path"] = str(args.suite.resolve())
        rows = exact(other, args.names, args.nodes, args.up_to, record=False,
                     longest=args.longest)
        if args.out:
            args.out.write_text(json.dumps(rows, indent=1) + "\n", encoding="utf-8")
        return
    suite = write()
    if args.exact:
        rows = exact(suite, args.names, args.nodes, args.up_to, record=True,
                     longest=args.longest)
        if args.out:
            args.out.write_text(json.dumps(rows, indent=1) + "\n", encoding="utf-8")
        return
    if args.update:
        configs = tuple(c for c in CONFIGS if not args.exhaustive_only or "--exhaustive" in c)
        update(suite, args.names, args.times, configs)
    SUITE.write_text(json.dumps(suite, indent=1) + "\n", encoding="utf-8")
    print(f"{len(suite['kernels'])} kernels: {SUITE}", file=sys.stderr)


if __name__ == "__main__":
    main()
