"""`kalg bench [KERNEL ...]`: compile a suite of kernels and compare with Cain's and AUKE's figures.

The steps, one public function each: `load_suite` reads a suite file, `select` picks kernels by
name, `run_suite` compiles every kernel with every op set into `Row`s (a failure becomes a row
with its error, and the run goes on), `summarise` totals the rows per op set, and
`format_markdown` / `to_json` render them. `run` wires them to the command line.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import string
import sys
import time
import traceback
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

from kalg import __version__
from kalg.commands import generality
from kalg.diagnostics import KalgError, UsageError, VerificationError
from kalg.resources import bench_suite_path, many_compiles
from kalg.targets.scamp5.registers import REGISTERS, WIDE

DESCRIPTION = """\
Compile every kernel of a benchmark suite (default: kalg's bench suite, the 14 kernels of the
AUKE and Cain papers and AnalogNet2 with Cain's and AUKE's published instruction counts) and print
a Markdown table to stdout: instructions, bus steps, registers used, compile time (wall time of
one compile), whether the program was verified, the figures to compare with, kalg/Cain, and which
candidate decomposition, rule families and analyses the program came from. A summary line gives
the totals per op set. Progress goes to stderr.

kalg/Cain compares with Cain's op-set-all figure for op set all; for op set basic with Cain's
basic figure, else AUKE's (marked "AUKE").

All compiles run in this one process, one after another; each frees its caches when it ends,
so the run holds one compile's memory at a time (a few hundred MiB on the suites), and a compile
time includes that freeing (a tenth of a second or so more than a lone `kalg optimize`, which
leaves its caches to the process's exit).

A kernel that fails to compile is reported in its row and the others still run; the exit status
is then 1 (3 if a program failed verification, a kalg bug). A suite file is JSON:
{"source": ..., "kernels": [{"name", "file" (relative to the suite file), "outputs" (how many,
default 1), "figures": {"cain_all", "cain_basic", "auke_basic", ...} (numbers)}]}.

examples:
  kalg bench --out bench-results     the whole suite, both op sets (minutes)
  kalg bench sobel box3 --ops all    two kernels, op set all"""

OP_SETS = {"all": ("all",), "basic": ("basic",), "both": ("all", "basic")}

REFERENCES = {"all": ("cain_all",), "basic": ("cain_basic", "auke_basic")}
"""The figure kalg is compared with, per op set: the first of these the kernel has."""

REFERENCE_LABELS = {"cain_all": "Cain all", "cain_basic": "Cain basic", "auke_basic": "AUKE"}

SIMULATED_NOTE = ("Target scamp5_wide: a SIMULATED register file wider than SCAMP-5's A..F; "
                  "these programs cannot run on the device.\n\n")

COLUMNS = ("kernel", "ops", "kalg", "bus steps", "registers", "compile s", "verified",
           "Cain all", "Cain basic", "AUKE basic", "kalg/Cain", "won by")


@dataclass(frozen=True)
class Entry:
    """One kernel of a suite: its name, its .kalg file, how many outputs it has, and the figures
    (instruction counts and times of other compilers) it is measured against."""

    name: str
    path: Path
    outputs: int
    figures: dict[str, float] = field(default_factory=dict)


@dataclass
class Row:
    """One compile of one kernel with one op set. `error` is None exactly when it compiled; a
    compiled program is always verified (compile_file verifies before it returns)."""

    kernel: str
    ops: str
    file: str
    outputs: int
    figures: dict[str, float]
    compile_s: float
    instructions: int | None = None
    bus_steps: int | None = None
    registers: str | None = None
    registers_used: int | None = None
    registers_budget: int | None = None
    verified: bool = False
    candidate: str | None = None
    provenance: list[str] | None = None
    stage_seconds: dict[str, float] | None = None
    horner: int | None = None
    """Instructions of the Horner baseline (digit planes, no e-graph), when the suite asks."""
    error: str | None = None
    exit_code: int = 0

    @property
    def reference(self) -> str | None:
        """The key of the figure this row is compared with, or None if the kernel has none."""
        return next((k for k in REFERENCES[self.ops] if k in self.figures), None)

    @property
    def ratio(self) -> float | None:
        """kalg's instructions over the reference figure; None without both."""
        if self.instructions is None or self.reference is None:
            return None
        return self.instructions / self.figures[self.reference]

    def as_json(self) -> dict:
        return asdict(self) | {"reference": self.reference, "ratio": _round(self.ratio, 3)}


def add_parser(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    p = sub.add_parser("bench", help="compile the benchmark suite and compare with Cain and AUKE",
                       description=DESCRIPTION,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("kernels", nargs="*", metavar="KERNEL",
                   help="names of the suite's kernels to run (default: all of them)")
    p.add_argument("--suite", metavar="FILE|NAME", default=None,
                   help="the suite file, or the name of a suite kalg ships: 'suite' (the "
                        "default, bench/suite.json) or 'generality' (bench/generality.json: "
                        "kernels outside the benchmark, with the proven optimum where known, "
                        "the best count any kalg configuration found, and the Horner baseline)")
    p.add_argument("--ops", choices=sorted(OP_SETS), default="both",
                   help="SCAMP-5 op set to compile for; 'both' compiles every kernel twice "
                        "(default: both)")
    p.add_argument("--registers", metavar="N", type=register_count, default=None,
                   help="register budget: the first N registers of A..F (of A..Z with "
                        "--simulated-registers) (default: each file's target block)")
    p.add_argument("--simulated-registers", action="store_true",
                   help="compile for target scamp5_wide, a hypothetical register file wider "
                        "than SCAMP-5's six (verified in simulation only; allows --registers "
                        "up to 26)")
    p.add_argument("--target", choices=["scamp5", "cpu", "cuda"], default="scamp5",
                   help="cpu: throughput of kalg's Halide pipelines against OpenCV and "
                        "scipy.ndimage on a 3840x2160 image (kalg.targets.cpu.bench); cuda: "
                        "on CUDA device 0 against CuPy and PyTorch conv2d (cuDNN) "
                        "(kalg.targets.cuda.bench; an error where there is no device); "
                        "KERNEL names select rows by substring")
    p.add_argument("--out", metavar="DIR", type=Path, default=None,
                   help="also write the table to DIR/bench.md and every number to "
                        "DIR/bench.json (DIR is created)")
    p.add_argument("--json", action="store_true",
                   help="print the JSON object (docs/json.md: every row with program figures, "
                        "and the totals) on stdout instead of the Markdown table")
    return p


def register_count(text: str) -> tuple[str, ...]:
    """'6' → ('A', ..., 'F'); an argparse type for 1 to 26 registers."""
    letters = string.ascii_uppercase
    if not text.isdigit() or not 1 <= int(text) <= len(letters):
        raise argparse.ArgumentTypeError(
            f"expected a number of registers from 1 to {len(letters)}, got {text!r}")
    return tuple(letters[: int(text)])


def suite_path(text: str | None) -> Path:
    """The suite file: `text` as a path when that file exists or it is not a bare name, else
    the shipped suite of that name (bench/NAME.json); the default suite for None. KalgError
    for a bare name kalg does not ship."""
    if text is None:
        return bench_suite_path()
    if Path(text).is_file() or not re.fullmatch(r"[a-z][a-z0-9_]*", text):
        return Path(text)  # a file name: load_suite says what is wrong with it
    if bench_suite_path(text).is_file():
        return bench_suite_path(text)
    raise KalgError(f"no suite named '{text}': kalg ships 'suite' and 'generality' (or give "
                    "a .json file)")


def suite_columns(path: Path) -> list[str]:
    """The suite's extra columns ("optimum", "best", "horner"); [] for the benchmark's."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    columns = data.get("columns", []) if isinstance(data, dict) else []
    return [c for c in columns if c in ("optimum", "best", "horner")]


def load_suite(path: Path) -> list[Entry]:
    """The kernels of the suite file at `path`, in file order, with their paths resolved against
    the suite file's directory. Raises KalgError when the file is unreadable or malformed."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as err:
        raise KalgError(f"cannot read suite file '{path}': {err.strerror}") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as err:
        raise KalgError(f"suite file '{path}' is not valid JSON: {err}") from None
    kernels = data.get("kernels") if isinstance(data, dict) else None
    if not isinstance(kernels, list) or not kernels:
        raise KalgError(f"suite file '{path}' has no \"kernels\" list")
    return [_entry(item, index, Path(path)) for index, item in enumerate(kernels, 1)]


def _entry(item: object, index: int, suite: Path) -> Entry:
    ok = (isinstance(item, dict) and isinstance(item.get("name"), str)
          and isinstance(item.get("file"), str) and isinstance(item.get("outputs", 1), int)
          and isinstance(item.get("figures", {}), dict)
          and all(isinstance(v, int | float) for v in item.get("figures", {}).values()))
    if not ok:
        raise KalgError(f"suite file '{suite}': kernel #{index} needs a \"name\", a \"file\", "
                        "an integer \"outputs\" and numeric \"figures\"")
    return Entry(item["name"], (suite.parent / item["file"]).resolve(), item.get("outputs", 1),
                 dict(item.get("figures", {})))


def select(entries: Sequence[Entry], names: Sequence[str]) -> list[Entry]:
    """The entries called `names`, in that order (all entries if `names` is empty). Raises
    KalgError naming the unknown ones and listing the suite's kernels."""
    by_name = {e.name: e for e in entries}
    unknown = [n for n in names if n not in by_name]
    if unknown:
        raise KalgError(f"unknown kernel(s) {', '.join(unknown)}; the suite has "
                        f"{', '.join(by_name)}")
    return [by_name[n] for n in names] if names else list(entries)


def run_suite(entries: Sequence[Entry], op_sets: Sequence[str],
              registers: tuple[str, ...] | None = None,
              progress: Callable[[str], None] | None = None,
              target: str | None = None, horner: bool = False) -> list[Row]:
    """Compile every entry with every op set (entry by entry) into one Row each. `registers`
    None means each file's target block; `target` "scamp5_wide" the simulated wider register
    file. Never raises for a kernel that fails: its row carries the error. `progress` receives
    a line before and after each compile."""
    jobs = [(e, ops) for e in entries for ops in op_sets]
    rows = []
    for number, (entry, ops) in enumerate(jobs, 1):
        tag = f"[{number}/{len(jobs)}] {entry.name} {ops}"
        if progress:
            progress(f"{tag} ...")
        row = compile_row(entry, ops, registers, target)
        if horner and row.error is None:
            row.horner = generality.horner_count(entry.path, ops, registers)
        rows.append(row)
        if progress:
            done = f"error: {row.error}" if row.error else f"{row.instructions} instructions"
            progress(f"{tag}: {done} ({row.compile_s:.1f} s)")
    return rows


def compile_row(entry: Entry, ops: str, registers: tuple[str, ...] | None = None,
                target: str | None = None) -> Row:
    """Compile one entry with one op set; the row records the program's figures or the error.
    Compile time is the wall time of the compile_file call."""

    from kalg.targets.scamp5.pipeline import (  # numpy, scipy, egglog: only when compiling
        Settings,
        compile_file,
    )

    row = Row(entry.name, ops, str(entry.path), entry.outputs, entry.figures, 0.0)
    start = time.perf_counter()
    try:
        result = compile_file(entry.path, Settings(ops=ops, registers=registers, target=target))
    except KalgError as err:
        row.error, row.exit_code = _error_text(err), err.exit_code
    except Exception as err:  # a kalg bug: report it with its traceback, go on with the others
        traceback.print_exc(file=sys.stderr)
        row.error, row.exit_code = f"internal error: {type(err).__name__}: {err}", 1
    row.compile_s = round(time.perf_counter() - start, 3)
    if row.error is None:
        _fill(row, result.stats)
    elif row.exit_code == VerificationError.exit_code:
        row.error = f"verification failed: {row.error}"
    return row


def _fill(row: Row, stats: dict) -> None:
    row.verified = True
    row.instructions = stats.get("instructions")
    row.bus_steps = stats.get("bus steps")
    row.registers = str(stats.get("registers", ""))
    counts = re.match(r"(\d+) of (\d+)", row.registers)  # "3 of 6 (A B C)"
    if counts:
        row.registers_used, row.registers_budget = int(counts[1]), int(counts[2])
    row.candidate = stats.get("candidate")
    provenance = stats.get("provenance")
    row.provenance = list(provenance) if provenance is not None else None
    row.stage_seconds = stats.get("seconds")


def summarise(rows: Sequence[Row]) -> dict[str, dict]:
    """Totals per op set, in the order the op sets first appear: rows, failed, and over the rows
    that compiled and have a reference figure ("compared"): kalg's sum, the reference sum, their
    ratio, how many are strictly shorter; compile time median and max over compiled rows."""
    totals = {}
    for ops in dict.fromkeys(r.ops for r in rows):
        mine = [r for r in rows if r.ops == ops]
        compiled = [r for r in mine if r.error is None]
        compared = [r for r in compiled if r.reference is not None]
        kalg = sum(r.instructions or 0 for r in compared)
        reference = sum(r.figures[r.reference] for r in compared)
        times = [r.compile_s for r in compiled]
        totals[ops] = {
            "reference": ", else ".join(REFERENCES[ops]),
            "rows": len(mine), "failed": len(mine) - len(compiled), "compared": len(compared),
            "kalg_sum": kalg, "reference_sum": reference,
            "ratio": _round(kalg / reference if reference else None, 3),
            "shorter": sum(r.instructions < r.figures[r.reference] for r in compared),
            "median_compile_s": _round(statistics.median(times) if times else None, 3),
            "max_compile_s": _round(max(times) if times else None, 3),
        }
    return totals


def format_markdown(rows: Sequence[Row], totals: dict[str, dict]) -> str:
    """The Markdown table (one line per row, columns `COLUMNS`) and under it a summary line per
    op set, each its own paragraph."""
    lines = ["| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    lines += ["| " + " | ".join(_cells(r)) + " |" for r in rows]
    lines += ["\n" + _summary(ops, t) for ops, t in totals.items()]
    return "\n".join(lines) + "\n"


def _cells(r: Row) -> list[str]:
    f = r.figures
    ratio = "" if r.ratio is None else f"{r.ratio:.2f}"
    if ratio and r.reference == "auke_basic":
        ratio += " (AUKE)"
    if r.error is None:
        won_by = (r.candidate or "") + (f": {', '.join(r.provenance)}" if r.provenance else "")
        used = f"{r.registers_used} of {r.registers_budget}" if r.registers_used else r.registers
    else:
        won_by, used = "error: " + r.error.replace("|", "\\|"), ""
    kalg = "—" if r.instructions is None else str(r.instructions)
    verified = "yes" if r.verified else "no"
    return [r.kernel, r.ops, kalg, _text(r.bus_steps), used or "", f"{r.compile_s:.1f}", verified,
            _text(f.get("cain_all")), _text(f.get("cain_basic")), _text(f.get("auke_basic")),
            ratio, won_by]


def _summary(ops: str, t: dict) -> str:
    label = "Cain" if ops == "all" else "Cain basic (else AUKE)"
    ratio = "n/a" if t["ratio"] is None else f"{t['ratio']:.2f}"
    times = ("no compile time" if t["median_compile_s"] is None else
             f"compile median {t['median_compile_s']:.1f} s, max {t['max_compile_s']:.1f} s")
    failed = f"; {t['failed']} failed" if t["failed"] else ""
    kernels = "1 kernel" if t["compared"] == 1 else f"{t['compared']} kernels"
    return (f"op set {ops}: {kernels} with a figure; kalg {t['kalg_sum']} "
            f"instructions, {label} {_text(t['reference_sum'])} (ratio {ratio}); "
            f"{t['shorter']} strictly shorter than {label}; {times}{failed}")


def to_json(rows: Sequence[Row], totals: dict[str, dict], suite: Path,
            registers: tuple[str, ...] | None, target: str | None = None) -> dict:
    """Everything the run measured: the settings ("registers" null: each file's target block;
    "target" null: each file's, "scamp5_wide": the simulated wider register file), one object
    per row (`Row` with its reference and ratio), and the totals of `summarise`."""
    return {"kalg": __version__, "suite": str(suite),
            "registers": " ".join(registers) if registers else None, "target": target,
            "rows": [r.as_json() for r in rows], "totals": totals}


def write_outputs(out: Path, markdown: str, data: dict) -> None:
    """Write out/bench.md and out/bench.json, creating `out`; KalgError if that fails."""
    try:
        out.mkdir(parents=True, exist_ok=True)
        (out / "bench.md").write_text(f"# kalg bench\n\n{markdown}", encoding="utf-8")
        (out / "bench.json").write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
    except OSError as err:
        raise KalgError(f"cannot write the results to '{out}': {err.strerror}") from None


def run(args: argparse.Namespace) -> int:
    if getattr(args, "target", "scamp5") == "cpu":
        from kalg.targets.cpu import bench as cpu_bench  # Halide, OpenCV: loaded only here
        return cpu_bench.main(args.kernels or None)
    if getattr(args, "target", "scamp5") == "cuda":
        from kalg.targets.cuda import bench as cuda_bench  # Halide, CuPy, PyTorch: only here
        return cuda_bench.main(args.kernels or None)
    target = WIDE if args.simulated_registers else None
    if args.registers and len(args.registers) > len(REGISTERS) and target is None:
        raise UsageError(f"--registers {len(args.registers)}: SCAMP-5 has {len(REGISTERS)} "
                         "analogue registers; add --simulated-registers to compile for a "
                         "hypothetical wider register file (simulation only)")
    suite = suite_path(args.suite)
    entries = select(load_suite(suite), args.kernels)
    columns = suite_columns(suite)
    with many_compiles():  # each compile's caches freed when it ends
        rows = run_suite(entries, OP_SETS[args.ops], args.registers,
                         progress=lambda line: print(line, file=sys.stderr, flush=True),
                         target=target, horner="horner" in columns)
    totals = summarise(rows)
    if columns:
        totals = {ops: t | generality.totals([r for r in rows if r.ops == ops])
                  for ops, t in totals.items()}
        markdown = generality.format_markdown(rows, totals)
    else:
        markdown = format_markdown(rows, totals)
    if target is not None:
        markdown = SIMULATED_NOTE + markdown
    data = to_json(rows, totals, suite, args.registers, target)
    if args.json:
        from kalg.jsonout import base

        code = max((r.exit_code for r in rows), default=0)
        sys.stdout.write(json.dumps(base("bench", ok=code == 0, exit_code=code,
                                         errors=[{"message": f"{r.kernel} ({r.ops}): {r.error}"}
                                                 for r in rows if r.error]) | data,
                                    indent=1) + "\n")
    else:
        sys.stdout.write(markdown)
    if args.out is not None:
        write_outputs(args.out, markdown, data)
    failed = [r for r in rows if r.error is not None]
    if failed:
        print(f"kalg: error: {len(failed)} of {len(rows)} compiles failed: "
              f"{', '.join(f'{r.kernel} ({r.ops})' for r in failed)}", file=sys.stderr)
    return max((r.exit_code for r in rows), default=0)


def _error_text(err: KalgError) -> str:
    """The error on one line, after its place in the source when it has one."""
    where = f"{Path(err.span.path).name}:{err.span.line}:{err.span.column}: " if err.span else ""
    return where + " ".join(err.message.split())


def _text(value: float | None) -> str:
    if value is None:
        return ""
    return str(int(value)) if float(value).is_integer() else str(value)


def _round(value: float | None, digits: int) -> float | None:
    return None if value is None else round(value, digits)
