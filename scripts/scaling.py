"""Scaling study: how kalg's program length and compile time grow with the problem.

    PYTHONPATH=src python scripts/scaling.py [--out docs] [--max-size 15] [--max-kernels 10]
                                             [--seed 0] [--timeout 300] [--quick]
                                             [--registers 6] [--registers 18]

Two sweeps, each compile run as `python -m kalg optimize FILE --ops all --stats` in its own
process under a wall-clock cap, one at a time, so that a slow or crashing compile is recorded
as such and never stops the study:

* kernel size: box (all ones, no division) and binomial Gaussian (outer product of the binomial
  row C(n-1, k), divided by 2^(2(n-1))) kernels, n = 3, 5, ..., --max-size, 6 registers A..F;
* number of kernels: the first k of a seeded sequence of random 3x3 kernels (integers 0..8
  over 8, all-zero kernels skipped, as in the Cain paper), k = 1 .. --max-kernels, with 6
  (A..F, the real SCAMP-5) and 18 (A..R, target `scamp5_wide`: a hypothetical wider register
  file that exists only in kalg's simulators, as in the Cain paper's study) registers, compiled
  together (one filter, outputs in A, B, C, ...) versus one at a time (each kernel alone,
  output in A; instruction counts and times summed).

Writes OUT/scaling.md (tables, plots, commentary), OUT/scaling_size.png and
OUT/scaling_kernels.png. The kernels are a deterministic function of --seed; the compiler's
search is bounded by time limits, so counts can differ slightly on a loaded machine.
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import resource
import signal
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from math import comb
from pathlib import Path

import matplotlib
import numpy as np

from kalg.algebra.random_kernels import random_kernels

matplotlib.use("Agg")
import matplotlib.pyplot as plt

ROOT = Path(__file__).resolve().parent.parent
REGISTERS = tuple("ABCDEFGHIJKLMNOPQR")
BUDGETS = {6: "A..F", 18: "A..R"}
"""Register budgets of the kernel-count sweep: number of registers -> target-block range."""
TARGETS = {6: "scamp5", 18: "scamp5_wide"}
"""The target of each budget: SCAMP-5 itself has six registers; more is the simulated
`scamp5_wide` (kalg refuses registers beyond F for `scamp5`)."""
CAIN_TOGETHER, CAIN_ALONE = 92, 131
"""Cain paper, random 3x3 kernels, 18 registers: instructions for ten kernels together and
one at a time."""


# --- kernels and .kalg source -------------------------------------------------------------

def box(n: int) -> tuple[np.ndarray, int]:
    """The n x n box kernel (all ones) and its divisor (1: a plain sum)."""
    return np.ones((n, n), dtype=int), 1


def binomial_gaussian(n: int) -> tuple[np.ndarray, int]:
    """The n x n binomial Gaussian: outer product of row C(n-1, k), over 2^(2(n-1))."""
    row = np.array([comb(n - 1, k) for k in range(n)], dtype=object)
    return np.outer(row, row), 2 ** (2 * (n - 1))


def matrix_text(weights: np.ndarray, divisor: int, indent: str) -> str:
    """A .kalg matrix literal, with ' / divisor' unless the divisor is 1."""
    width = max(len(str(w)) for w in weights.flat)
    rows = [" ".join(str(w).rjust(width) for w in row) for row in weights]
    body = ("\n" + indent + "  ").join(rows)
    return f"[ {body} ]" + (f" / {divisor}" if divisor != 1 else "")


def target_line(registers: int) -> str:
    return (f"target {TARGETS[registers]} {{ registers: {BUDGETS[registers]}, input: A, "
            "ops: all }\n\n")


def kernel_source(name: str, weights: np.ndarray, divisor: int, registers: int) -> str:
    """A .kalg file defining one kernel (output in the input register A)."""
    indent = " " * len(f"kernel {name} = ")
    return target_line(registers) + f"kernel {name} = {matrix_text(weights, divisor, indent)}\n"


def filter_source(name: str, kernels: list[np.ndarray], divisor: int, registers: int) -> str:
    """A .kalg file defining one filter whose i-th kernel is written to register A + i."""
    parts = [f"  {REGISTERS[i]}: {matrix_text(k, divisor, '     ')},"
             for i, k in enumerate(kernels)]
    return target_line(registers) + f"filter {name} = [\n" + "\n".join(parts) + "\n]\n"


# --- compiling ----------------------------------------------------------------------------

@dataclass
class Outcome:
    """One compile: the program's length on success, else why it failed."""

    name: str
    source: str
    wall: float
    instructions: int | None = None
    bus_steps: int | None = None
    registers: str = ""
    candidate: str = ""
    stages: dict[str, float] = field(default_factory=dict)
    failure: str = ""
    cpu: float | None = None
    """CPU seconds (user + system) of the compile and its children."""

    @property
    def ok(self) -> bool:
        return self.instructions is not None


def parse_stats(stderr: str) -> dict[str, str]:
    """The 'kalg: key: value' lines `kalg optimize --stats` prints, as a dict."""
    stats = {}
    for line in stderr.splitlines():
        if line.startswith("kalg: ") and ": " in line[6:]:
            key, value = line[6:].split(": ", 1)
            stats[key] = value
    return stats


def failure_reason(returncode: int, stderr: str) -> str:
    """One line saying why kalg failed: its error message, else a traceback's last line."""
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    errors = [line for line in lines if line.startswith("kalg: error")]
    if returncode < 0:
        name = signal.Signals(-returncode).name
        return f"killed by {name}" + (" (out of memory?)" if name == "SIGKILL" else "")
    if errors:
        reason = errors[-1].removeprefix("kalg: error: ")
    elif any(line.startswith("Traceback") for line in lines):
        reason = "crash: " + lines[-1]
    else:
        reason = lines[-1] if lines else "no message"
    if returncode == 3:
        reason = "verification failure: " + reason
    return f"exit {returncode}: {reason}"


@dataclass
class Runner:
    """Compiles .kalg texts one at a time, each in a fresh process with a time and memory cap."""

    workdir: Path
    timeout: float
    """Wall-clock seconds one compile may take."""
    memory_gib: float
    """Address space one compile may map (kalg's own e-graph child sets its own limit)."""
    jobs: int = 1
    """Compiles run at the same time (the kernel-count sweep only)."""
    reuse: dict[str, Outcome] = field(default_factory=dict)
    """Outcomes of an earlier run (--reuse), by source: a compile of the same .kalg text is
    taken from here instead of being run again (under this run's name)."""
    done: list[Outcome] = field(default_factory=list)
    """Every outcome of this run, in the order finished (written by --results)."""
    journal: Path | None = None
    """A file each outcome is appended to as one JSON line as soon as it is known (--results:
    RESULTS.jsonl), so that an interrupted run can be --reused."""

    def _limit_memory(self) -> None:
        # Soft limit only, so that kalg's saturation child may still set its own.
        cap = int(self.memory_gib * 2**30)
        resource.setrlimit(resource.RLIMIT_AS, (cap, resource.RLIM_INFINITY))

    def run_kalg(self, path: Path) -> tuple[int | None, str, float]:
        """Run `kalg optimize` on `path`; (exit code or None on timeout, stderr, seconds)."""
        env = dict(os.environ, PYTHONPATH=str(ROOT / "src"))
        # /usr/bin/time reports the CPU seconds of the compile and its saturation child, a
        # measure the other work on a shared machine inflates less than wall time.
        cmd = ["/usr/bin/time", "-f", "kalg-cpu-seconds: %U %S",
               sys.executable, "-m", "kalg", "optimize", str(path), "--ops", "all", "--stats",
               "-o", os.devnull]
        start = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                text=True, env=env, cwd=ROOT, start_new_session=True,
                                preexec_fn=self._limit_memory)
        try:
            _, stderr = proc.communicate(timeout=self.timeout)
            code: int | None = proc.returncode
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)  # the compile and anything it started
            _, stderr = proc.communicate()
            code = None
        return code, stderr, time.perf_counter() - start

    def compile(self, name: str, source: str) -> Outcome:
        """Compile one .kalg text; the outcome says how long it took and what came out."""
        old = self.reuse.get(source)
        if old is not None:
            old = Outcome(**{**asdict(old), "name": name})
            print(f"  {name}: reused ({old.instructions or old.failure})", file=sys.stderr)
            self.done.append(old)
            return old
        path = self.workdir / f"{name}.kalg"
        path.write_text(source, encoding="utf-8")
        code, stderr, wall = self.run_kalg(path)
        outcome = Outcome(name, source, wall)
        stats = parse_stats(stderr)
        if code is None:
            outcome.failure = f"timeout after {self.timeout:g} s"
        elif code != 0 or "instructions" not in stats:
            outcome.failure = failure_reason(code, stderr)
        else:
            outcome.instructions = int(stats["instructions"])
            outcome.bus_steps = int(stats.get("bus steps", 0))
            outcome.registers = stats.get("registers", "")
            outcome.candidate = stats.get("candidate", "")
            outcome.stages = ast.literal_eval(stats.get("seconds", "{}"))
        cpu = [line.split()[1:] for line in stderr.splitlines()
               if line.startswith("kalg-cpu-seconds:")]
        if cpu:
            outcome.cpu = float(cpu[-1][0]) + float(cpu[-1][1])
        status = f"{outcome.instructions} instructions" if outcome.ok else outcome.failure
        print(f"  {name}: {status} ({wall:.1f} s)", file=sys.stderr, flush=True)
        self.done.append(outcome)
        if self.journal is not None:
            with self.journal.open("a", encoding="utf-8") as f:
                f.write(json.dumps(asdict(outcome)) + "\n")
        return outcome

    def compile_all(self, jobs: list[tuple[str, str]]) -> dict[str, Outcome]:
        """Compile (name, source) pairs, `self.jobs` at a time; name -> outcome."""
        with ThreadPoolExecutor(max_workers=self.jobs) as pool:
            outcomes = list(pool.map(lambda job: self.compile(*job), jobs))
        return {o.name: o for o in outcomes}


# --- the two sweeps -----------------------------------------------------------------------

def size_sweep(sizes: list[int], runner: Runner) -> dict[str, list[Outcome]]:
    """Box and binomial Gaussian kernels of each size, 6 registers: family -> outcomes."""
    families = {"box": box, "gauss": binomial_gaussian}
    results: dict[str, list[Outcome]] = {}
    for family, make in families.items():
        print(f"size sweep: {family}", file=sys.stderr)
        results[family] = []
        for n in sizes:
            weights, divisor = make(n)
            source = kernel_source(f"{family}{n}", weights, divisor, 6)
            results[family].append(runner.compile(f"{family}{n}", source))
    return results


@dataclass
class CountSweep:
    """The kernel-count sweep for one register budget (Cain's protocol: several random filters
    per kernel count)."""

    registers: int
    filters: list[list[np.ndarray]]
    """filters[j]: the kernel sequence of sample j; at count k the filter is its first k."""
    alone: list[list[Outcome]]
    """alone[j][i]: kernel i of sample j compiled by itself (output in A)."""
    together: dict[tuple[int, int], Outcome]
    """together[(k, j)]: the first k kernels of sample j as one filter."""
    seed: int = 0
    """The seed of sample 0 (sample j is drawn from seed + j)."""

    def counts(self) -> list[int]:
        return sorted({k for k, _ in self.together})

    def one_at_a_time(self, k: int, j: int) -> int | None:
        outs = self.alone[j][:k]
        return sum(o.instructions for o in outs) if all(o.ok for o in outs) else None

    def alone_seconds(self, k: int, j: int) -> float:
        return sum(o.wall for o in self.alone[j][:k])


def filter_samples(count: int, kernels: int, seed: int) -> list[list[np.ndarray]]:
    """Sample j: `kernels` random kernels from `random_kernels(kernels, seed + j)`."""
    return [random_kernels(kernels, seed + j) for j in range(count)]


def count_sweep(samples: list[list[np.ndarray]], registers: int, runner: Runner,
                max_kernels: int, min_kernels: int = 2, seed: int = 0) -> CountSweep:
    """Each kernel of each sample alone, and the first k kernels of each sample together for
    k = 1 .. the most the budget allows (k = 1 is the first kernel alone: the same compile).
    Compiles are named after the budget, `seed` and the sample."""
    most = min(max_kernels, registers)  # every output needs a register of its own
    print(f"kernel-count sweep: {registers} registers, seed {seed}", file=sys.stderr)
    tag = f"r{registers}_" + (f"seed{seed}_" if seed else "")
    jobs = [(f"{tag}s{j}_alone{i + 1}",
             kernel_source(f"random{i + 1}", k, 8, registers))
            for j, ks in enumerate(samples) for i, k in enumerate(ks[:most])]
    jobs += [(f"{tag}s{j}_together{k}",
              filter_source(f"random1to{k}", ks[:k], 8, registers))
             for k in range(max(min_kernels, 2), most + 1) for j, ks in enumerate(samples)]
    done = runner.compile_all(jobs)
    alone = [[done[f"{tag}s{j}_alone{i + 1}"] for i in range(min(most, len(ks)))]
             for j, ks in enumerate(samples)]
    together = {(1, j): alone[j][0] for j in range(len(samples))}
    together |= {(k, j): done[f"{tag}s{j}_together{k}"]
                 for k in range(max(min_kernels, 2), most + 1) for j in range(len(samples))}
    return CountSweep(registers, samples, alone, together, seed)


def stats(values: list[float]) -> tuple[float, float, float, float] | None:
    """mean, standard deviation, min, max (None for no values)."""
    if not values:
        return None
    arr = np.array(values, dtype=float)
    return float(arr.mean()), float(arr.std()), float(arr.min()), float(arr.max())


def cumulative(outcomes: list[Outcome], value) -> list[float | None]:
    """Running sums of value(outcome); None from the first failure on."""
    sums: list[float | None] = []
    total: float | None = 0.0
    for o in outcomes:
        total = total + value(o) if total is not None and o.ok else None
        sums.append(total)
    return sums


# --- plots --------------------------------------------------------------------------------

def plot_series(ax, xs: list[int], ys: list[float | None], **style):
    """Plot the points that exist; a missing point (a failed compile) breaks the line."""
    style.setdefault("marker", "o")
    (line,) = ax.plot(xs, [np.nan if y is None else y for y in ys], **style)
    return line


def plot_times(ax, xs: list[int], outcomes: list[Outcome], **style) -> None:
    """Compile times: a line through the successful compiles, an x (same colour) at each
    failure, at the time it took to fail."""
    line = plot_series(ax, xs, [o.wall if o.ok else None for o in outcomes], **style)
    failed = [(x, o.wall) for x, o in zip(xs, outcomes, strict=True) if not o.ok]
    if failed:
        ax.scatter(*zip(*failed, strict=True), marker="x", s=70, color=line.get_color(),
                   zorder=3)


def failure_legend(ax, any_failed: bool) -> None:
    """The legend of `ax`, with 'failed or timed out' (the x of `plot_times`) if any."""
    handles, labels = ax.get_legend_handles_labels()
    if any_failed:
        handles.append(ax.scatter([], [], marker="x", s=70, color="grey"))
        labels.append("failed or timed out (time to failure)")
    ax.legend(handles, labels, fontsize=8)


def plot_sizes(sizes: list[int], results: dict[str, list[Outcome]], path: Path) -> None:
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.2))
    for family, outcomes in results.items():
        label = {"box": "box (all ones)", "gauss": "binomial Gaussian"}[family]
        plot_series(left, sizes, [o.instructions for o in outcomes], label=label)
        plot_times(right, sizes, outcomes, label=label)
    left.set(title="Program length (6 registers)", xlabel="kernel size n (n x n)",
             ylabel="instructions", xticks=sizes)
    right.set(title="Compile time", xlabel="kernel size n (n x n)",
              ylabel="wall seconds", xticks=sizes)
    left.grid(alpha=0.3)
    right.grid(alpha=0.3)
    left.legend(fontsize=8)
    failure_legend(right, any(not o.ok for r in results.values() for o in r))
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def plot_counts(sweeps: list[CountSweep], path: Path) -> None:
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.4))
    colors = {6: "tab:blue", 18: "tab:orange"}
    most = max(max(s.counts()) for s in sweeps)
    for s in sweeps:
        c = colors[s.registers]
        ks = s.counts()
        samples = range(len(s.filters))
        tog = [stats([s.together[(k, j)].instructions for j in samples
                      if s.together[(k, j)].ok]) for k in ks]
        one = [stats([v for j in samples if (v := s.one_at_a_time(k, j)) is not None])
               for k in ks]
        for series, style, label in ((tog, "-o", "together"), (one, "--s", "one at a time")):
            xs = [k for k, st in zip(ks, series, strict=True) if st]
            left.errorbar(xs, [st[0] for st in series if st], yerr=[st[1] for st in series if st],
                          fmt=style, color=c, capsize=3,
                          label=f"{s.registers} registers, {label} (mean, sd)")
        cpus = [[s.together[(k, j)].cpu or 0.0 for j in samples] for k in ks]
        right.plot(ks, [np.mean(w) for w in cpus], "-o", color=c,
                   label=f"{s.registers} registers, together: mean")
        right.plot(ks, [np.max(w) for w in cpus], ":^", color=c,
                   label=f"{s.registers} registers, together: max")
    left.scatter([10, 10], [CAIN_TOGETHER, CAIN_ALONE], marker="*", s=170, color="black",
                 zorder=3, label=f"Cain paper, 18 registers, k = 10\n(together {CAIN_TOGETHER}, "
                                 f"one at a time {CAIN_ALONE})")
    left.plot([1, 10], [CAIN_ALONE / 10, CAIN_TOGETHER], ":", color="black", alpha=0.5,
              label="Cain together, trend (k = 1 at 1/10 of one at a time)")
    left.set(title="Program length, random 3x3 filters", xlabel="number of kernels k",
             ylabel="instructions")
    right.axhline(30, color="grey", linestyle="--", linewidth=1, label="30 s goal")
    right.set(title="Compile time, together", xlabel="number of kernels k",
              ylabel="CPU seconds (user + system)")
    for ax in (left, right):
        ax.grid(alpha=0.3)
        ax.set_xticks(range(1, most + 1))
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


# --- the report ---------------------------------------------------------------------------

def cell(outcome: Outcome | None) -> str:
    if outcome is None:
        return "n/a"
    return str(outcome.instructions) if outcome.ok else "failed"


def seconds(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.1f}"


def number(value: float | None) -> str:
    return "failed" if value is None else f"{value:g}"


def size_table(sizes: list[int], results: dict[str, list[Outcome]]) -> list[str]:
    lines = ["| n | box: instructions | box: bus steps | box: seconds | box: CPU s | box: won by | "
             "Gaussian: instructions | Gaussian: bus steps | Gaussian: seconds | "
             "Gaussian: CPU s | Gaussian: won by |",
             "|---:|---:|---:|---:|---:|---|---:|---:|---:|---:|---|"]
    for i, n in enumerate(sizes):
        row = [f"{n}x{n}"]
        for family in ("box", "gauss"):
            o = results[family][i]
            row += [cell(o), str(o.bus_steps) if o.ok else "", seconds(o.wall),
                    seconds(o.cpu), o.candidate]
        lines.append("| " + " | ".join(row) + " |")
    return lines


def spread(st: tuple[float, float, float, float] | None) -> str:
    def fmt(x: float) -> str:
        return f"{x:.0f}" if float(x).is_integer() else f"{x:.1f}"
    return "n/a" if st is None else f"{st[0]:.1f} ± {st[1]:.1f} ({fmt(st[2])}-{fmt(st[3])})"


def count_rows(s: CountSweep) -> list[dict]:
    """Per kernel count: the statistics the table and the commentary use."""
    rows = []
    for k in s.counts():
        samples = range(len(s.filters))
        pairs = [(s.together[(k, j)], s.one_at_a_time(k, j)) for j in samples]
        ok = [(t.instructions, a) for t, a in pairs if t.ok and a is not None]
        rows.append({
            "k": k,
            "together": stats([t.instructions for t, _ in pairs if t.ok]),
            "alone": stats([a for _, a in pairs if a is not None]),
            "ratio": (sum(t for t, _ in ok) / sum(a for _, a in ok)) if ok else None,
            "shorter": sum(t < a for t, a in ok), "equal": sum(t == a for t, a in ok),
            "longer": sum(t > a for t, a in ok),
            "failed": sum(not t.ok for t, _ in pairs),
            "seconds": stats([t.wall for t, _ in pairs]),
            "cpu": stats([t.cpu for t, _ in pairs if t.cpu is not None]),
            "alone seconds": stats([s.alone_seconds(k, j) for j in samples]),
            "won by": sorted({t.candidate for t, _ in pairs if t.ok}),
        })
    return rows


def count_table(s: CountSweep) -> list[str]:
    lines = ["| k | together: instructions | one at a time: instructions (sum) | "
             "together / one at a time | shorter / equal / longer together | together failed | "
             "together: wall seconds | together: CPU seconds | one at a time: wall seconds "
             "(sum) | together won by |",
             "|---:|---|---|---:|---|---:|---|---|---|---|"]
    for r in count_rows(s):
        ratio = "n/a" if r["ratio"] is None else f"{r['ratio']:.2f}"
        lines.append("| " + " | ".join([
            str(r["k"]), spread(r["together"]), spread(r["alone"]), ratio,
            f"{r['shorter']} / {r['equal']} / {r['longer']}", str(r["failed"]),
            spread(r["seconds"]), spread(r["cpu"]), spread(r["alone seconds"]),
            ", ".join(r["won by"])]) + " |")
    return lines


def sequence_table(s: CountSweep, path: Path) -> list[str]:
    """Together against the sequence of the outputs' own programs with the registers actually
    free (`scripts/sequence_baseline.py`'s JSON lines in `path`), per k."""
    runs = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()
            if line.strip()]
    lines = ["Against the *sequence of the outputs' own programs* (each output's own compile "
             "into its register with the registers actually free: the input and the outputs "
             "made kept, the input's register last; `scripts/sequence_baseline.py`, CPU "
             "seconds of its own compiles in the last column):", "",
             "| k | sequence fits | sequence: instructions | together on those filters | "
             "together / sequence | together longer | sequence: CPU seconds |",
             "|---:|---:|---|---|---:|---:|---|"]
    for k in sorted({r["k"] for r in runs}):
        fits = [r for r in runs if r["k"] == k and r["sequence"] is not None]
        pairs = [(s.together[(k, r["sample"])].instructions, r["sequence"]) for r in fits
                 if (k, r["sample"]) in s.together and s.together[(k, r["sample"])].ok]
        total = len([r for r in runs if r["k"] == k])
        ratio = (f"{sum(t for t, _ in pairs) / sum(q for _, q in pairs):.2f}" if pairs
                 else "n/a")
        lines.append("| " + " | ".join([
            str(k), f"{len(fits)} of {total}", spread(stats([q for _, q in pairs])),
            spread(stats([t for t, _ in pairs])), ratio,
            str(sum(t > q for t, q in pairs)),
            spread(stats([r["cpu"] for r in runs if r["k"] == k]))]) + " |")
    return lines


def kernels_block(kernels: list[np.ndarray], label: str = "k") -> list[str]:
    lines = ["```"]
    for i, k in enumerate(kernels):
        rows = ["  ".join(str(w) for w in row) for row in k]
        lines.append(f"{label}{i + 1}: [ " + " | ".join(rows) + " ] / 8")
    return [*lines, "```"]


KNOWN_CAUSES = {
    "KeyError": "A `KeyError` naming a register after F would be the simulator not knowing the "
                "wider register file (fixed: `scamp5_wide` programs simulate and verify).",
    "out of memory": "Out of memory: the process reached its address-space cap (kalg's "
                     "KALG_MEMORY_MIB, or this study's --memory-gib).",
    "no program for the": "Register pressure: code generation found no program that fits the "
                          "outputs, the input and its temporaries in the register budget.",
    "timeout": "Timeout: the compile ran past this study's wall-clock cap.",
}
"""Failure-message fragment -> what was found to cause it when this study was written."""


FIXES = [
    "The first run of this study (kalg at 51984f8) found four problems; each is fixed in "
    "the code generator or the simulators, with a regression test named after the symptom:",
    "",
    "* *18 registers crashed* (`KeyError: 'G'` in the numeric verifier, every program using a "
    "seventh register). Registers beyond F now exist only in the opt-in target `scamp5_wide` "
    "(`target scamp5_wide { registers: A..R }`, or `kalg bench --registers N "
    "--simulated-registers`); both simulators and the exact verifier know them, and every "
    "such program says it is for a SIMULATED register file. `target scamp5` still refuses "
    "them.",
    "* *Binomial Gaussians from 9x9 failed*: 9x9 took 3.5 minutes of code generation for a "
    "2435-instruction program, 13x13 ran out of memory. The cause was the fallback schedule "
    "(`codegen/sequential.py`), which recomputed a value for every term that reads it: a chain "
    "such as (1 + x)^8 cost 2^8 recomputations, and the e-graph's candidates at these sizes are "
    "chains of doublings and halvings (its seeds split a factorisation into two flat "
    "literals, so the (1 + x)^(n-1) (1 + y)^(n-1) / 4^(n-1) chain is lost beyond 7x7). The "
    "fallback now makes each value once per sum and moves copies (linear), computes the "
    "deepest values first (Sethi-Ullman order, so a Horner chain fits six registers) and stops "
    "at 4000 steps; a factor-chain candidate (`codegen/chain.py`, offered by the pipeline "
    "whenever an output factors) applies the integer factors in turn; and a beam search whose "
    "program is estimated longer than 48 instructions gets expansions in proportion to that "
    "length (a fixed cap ended the 28-factor chain of 15x15 before any schedule was complete).",
    "* *Compiling kernels together was worse than one at a time* (51 against 39 for three "
    "kernels): with every output and the input alive, the joint search runs out of registers "
    "to share work in. `codegen.generate` now also compiles a filter's outputs one after "
    "another (each stage keeps the input and the outputs already made) and keeps the "
    "shorter, so for one decomposition together is never longer than its outputs in sequence. "
    "The one-at-a-time compiles may still win where each kernel alone picks a better "
    "decomposition than the filter's candidates hold (see the tables).",
    "",
    "The second run (issue 12, Cain's protocol) changed how filters are compiled:",
    "",
    "* *Four or more random kernels found no program on 6 registers* (op set all): the joint "
    "search kept the input, every output and the division scratch alive. A filter now also "
    "gets a constant-matrix program (`codegen/matrix.py`): the input is divided once into "
    "s = input/8, every output is a walk over its offsets that adds or subtracts multiples of "
    "s held in a pool (s, its halvings' copies and negations from `div`, sums of two), and the "
    "pool is cut to the registers left before each output. Every filter of up to five "
    "outputs on six registers compiles this way, in both op sets.",
    "* *Together was longer than one at a time*: the filter's candidates were all joint. Each "
    "output's own compile (its own e-graph and candidates), run one after another while the "
    "input and the outputs made are kept, is now a candidate too (pruned once it cannot beat "
    "the best program found), and the shortest program wins. Filters of more than three "
    "outputs skip the joint decomposition's code generation (tens of seconds, never the "
    "shortest on this study's filters).",
    "",
    "The third run (issue 12, items 1-3) changed:",
    "",
    "* *Six outputs on six registers ended in 'no program fits' without saying why*. A filter "
    "with one output per register now gets the program whose last output is made in place "
    "(`codegen/filling.py`, see 'Six outputs on six registers') where its form allows, and "
    "otherwise an error that states what the output written last would have to be.",
    "* *Outputs one at a time* also try the heaviest output first, and each output's e-graph is "
    "searched once for all its stages. The contract is tested on random filters: a filter is "
    "never longer than its outputs' own programs in sequence with the registers actually free "
    "(where every stage fits). Tried and dropped: dividing the input once and compiling every "
    "output's 8·K from the shared s (each stage's own compile loses div's free negated copies: "
    "81, 95 and 67 instructions against 62, 89 and 51 on three filters of k = 4 and 5).",
    "",
    "The fourth and later runs (issue 12, items 1-3) changed:",
    "",
    "* *Four and five kernels together were longer than each compiled alone* (1.25 at k = 5 "
    "on 6 registers): the last outputs, with one or two pool registers, were long sums of s. "
    "Later outputs now reuse finished ones (K = Σ q_j·K_j + R, small integer q_j) and, where "
    "registers are short, every output order is ranked by a dry build (`codegen/matrix.py`).",
    "* *Six kernels on six registers had no program*: the output written last is now made in "
    "place from the others at several shifts, with integer weights from an LLL-reduced lattice "
    "(`codegen/filling.py`; 'Six outputs on six registers' above).",
    "* *Compiles of two and three outputs took up to 68 s*: the joint decomposition's whole "
    "register ladder now runs only where a one-screen probe is within 2 instructions of the "
    "shared matrix's program (`filters.JOINT_PROBE_SLACK`), and filters of more than three "
    "outputs build no e-graph for a joint decomposition (`candidates.JOINT_OUTPUTS`).",
]
"""What this study found and what was changed (measured with the command in the header)."""


SIX_OUTPUTS = [
    "## Six outputs on six registers",
    "",
    "With one output per register every register ends holding an output, and two facts "
    "shape the programs (the 6-register rows at k = 6 above):",
    "",
    "* **No sequence of the outputs' own programs exists from k = 5 on (op set all).** Cain's "
    "one-at-a-time protocol compiles each output in turn with the registers the earlier ones "
    "leave free, the input kept until the last. A halving needs `div` or `diva`, which write "
    "three registers; the fourth of five outputs (the fifth of six) is made with only two "
    "registers writable besides the kept input, so it cannot be a kernel with a coefficient "
    "that is not an integer (every random filter here has one), and the sixth of six has the "
    "input's register alone, where only shifts of the input can be made. "
    "`scripts/sequence_baseline.py` says where each filter's sequence stops. So at k = 6 the "
    "'one at a time' column (each kernel alone with the whole register file, summed) is a "
    "comparison, not a program: nothing leaves six outputs in six registers that way.",
    "* **The output written last is S^d·v + Σ q·K.** Take the moment t after which five "
    "registers hold their final outputs; from then on only the sixth, L, may be written. "
    "The instructions that write one register and keep what it held are `add(L, L, R)`, "
    "`add(L, L, R, R')`, `sub(L, L, R)`, `movx(L, L, d)`, `mov2x(L, L, d, d')`, "
    "`addx(L, L, R, d)`, `add2x`, `subx(L, L, d, R)` and `sub2x` (`neg(L, L)`, `sub(L, R, L)`, "
    "`divq(L, L)` and `add(L, L, L)` break the operand rules; `div` and `diva` write three "
    "registers; `mov`, `neg`, `res` or `add(L, R, R')` forget what L held). So what L held at "
    "t, v, is only shifted, and the other outputs are added or subtracted at shifts a whole "
    "number of times: K_L = S^d·v + Σ_{j,e} q_{j,e}·S^e·K_j with integer q, or the same "
    "without v.",
    "",
    "kalg's construction (`codegen/filling.py`): the other five by the constant-matrix "
    "program (`codegen/matrix.py`) with v kept in L (v = 0, or ±s where s = input/8, div's "
    "value and its negated copy), then L in place. The weights q for every choice of L, v and "
    "d are the nearest lattice point found by LLL (python-flint) over the 3x3 shifts, and over "
    "the box of every kernel's taps where a kernel is larger; the cheapest choices by the "
    "walk's estimate are built and their weights improved by a bounded integer program "
    "(HiGHS, a node count, so deterministic); the shortest verified program wins. For 3x3 "
    "kernels the filter is first *reduced backwards* (`codegen/reduction.py`): the last "
    "instructions of a program may be in-place steps K_i += ±S^e·K_j, each undone by its "
    "opposite, so the outputs are reduced, K_i -= ±S^e·K_j, greedily by the largest fall in "
    "coefficient mass and within the kernels' box, the reduced filter is made as above and the "
    "steps are replayed at the end (about one instruction each). The reduced outputs' last "
    "weights are much smaller; the states after 4 and 5 steps are ranked by the scan's "
    "estimate and both built. The "
    "register written last is the cheapest one, not always the input's A: which register is "
    "written last is invisible in the result (each output ends in its register, verified), "
    "and forcing A costs instructions.",
    "",
    "Why it stays long: the tail after t costs about the size of q, and five random 3x3 "
    "kernels generate the unit ideal of Z[x^±1, y^±1] only with large weights. This is not a "
    "proof that the kernels-alone sum is out of reach: a program may let the fifth output and "
    "L read each other while both are made (Euclid-like exchanges, whose coefficients grow "
    "geometrically), or borrow a finished register and restore it, and kalg does not search "
    "those.",
]
"""The six-output case: what any program must look like, and what kalg builds."""


def failures_section(outcomes: list[Outcome]) -> list[str]:
    failed = [o for o in outcomes if not o.ok]
    if not failed:
        return ["Every compile succeeded."]
    lines = [f"{len(failed)} of {len(outcomes)} compiles failed:", ""]
    lines += [f"* `{o.name}` ({o.wall:.0f} s): {o.failure}" for o in failed]
    causes = [text for key, text in KNOWN_CAUSES.items() if any(key in o.failure for o in failed)]
    for cause in causes:
        lines += ["", cause]
    return lines


def size_commentary(sizes: list[int], results: dict[str, list[Outcome]]) -> list[str]:
    notes = []
    for family, outcomes in results.items():
        name = {"box": "Box", "gauss": "Binomial Gaussian"}[family]
        ok = [(n, o) for n, o in zip(sizes, outcomes, strict=True) if o.ok]
        if not ok:
            notes.append(f"* {name}: no size compiled.")
            continue
        first, last = ok[0], ok[-1]
        text = (f"* {name}: {first[1].instructions} instructions at {first[0]}x{first[0]}, "
                f"{last[1].instructions} at {last[0]}x{last[0]} (largest size that compiled); "
                f"compile time {first[1].wall:.1f} s to {last[1].wall:.1f} s; at most "
                f"{max(o.wall for _, o in ok):.1f} s of wall time and "
                f"{max(o.cpu or 0.0 for _, o in ok):.1f} s of CPU.")
        failed = [n for n, o in zip(sizes, outcomes, strict=True) if not o.ok]
        if failed:
            text += f" Failed or timed out: {', '.join(f'{n}x{n}' for n in failed)}."
        notes.append(text)
    return notes


def count_commentary(sweeps: list[CountSweep]) -> list[str]:
    notes = []
    for s in sweeps:
        rows = count_rows(s)
        last = [r for r in rows if r["ratio"] is not None][-1]
        worst = max(r["seconds"][3] for r in rows if r["seconds"])
        worst_cpu = max((r["cpu"][3] for r in rows if r["cpu"]), default=float("nan"))
        seed = f", seed {s.seed}" if s.seed else ""
        text = (f"* {s.registers} registers{seed}: at k = {last['k']} (the largest k with both "
                f"numbers) together is "
                f"{spread(last['together'])} instructions (mean ± sd, min-max over "
                f"{len(s.filters)} filters) against {spread(last['alone'])} one at a time, "
                + (f"a ratio of {last['ratio']:.2f}. " if last["ratio"] else ". "))
        longer = [(r["k"], r["longer"]) for r in rows if r["longer"]]
        failed = [(r["k"], r["failed"]) for r in rows if r["failed"]]
        behind = [r["k"] for r in rows if r["k"] >= 2 and r["ratio"] is not None
                  and r["ratio"] >= 1]
        text += ("Together is shorter on average at every k >= 2. " if not behind else
                 f"Together is not shorter on average at k = {', '.join(map(str, behind))}. ")
        text += ("No filter is longer together than one at a time. " if not longer else
                 "Filters longer together than one at a time: " + ", ".join(
                     f"{n} at k = {k}" for k, n in longer) + ". ")
        text += ("Every filter compiled. " if not failed else "Failed: " + ", ".join(
            f"{n} at k = {k}" for k, n in failed) + " (see Failures). ")
        text += (f"The slowest compile together took {worst:.1f} s of wall time "
                 f"({worst_cpu:.1f} s of CPU at most).")
        notes.append(text)
    cain_ratio = CAIN_TOGETHER / CAIN_ALONE
    notes.append(f"* Cain paper, random 3x3 kernels, 18 registers: {CAIN_TOGETHER} together "
                 f"versus {CAIN_ALONE} one at a time for ten kernels (a ratio of "
                 f"{cain_ratio:.2f}). Cain's one-at-a-time compiles keep the other kernels' "
                 "registers; kalg's here compile each kernel alone with the whole register file, "
                 "free to overwrite the input (a shorter baseline). Different random draws: "
                 "compare the trend, not the exact counts.")
    return notes


def size_section(sizes: list[int], size_results: dict[str, list[Outcome]],
                 previous: str = "") -> list[str]:
    """The kernel-size section; with --skip-size, the one of the report being replaced (its
    text up to the next section), said to be from an earlier run."""
    if not size_results:
        if "## Kernel size" not in previous:
            return []
        old = previous.split("## Kernel size", 1)[1].split("\n## ", 1)[0].strip("\n")
        return ["## Kernel size", "",
                "(From the previous run of this study, whose command is in the git history of "
                "this file; this run passed --skip-size.)", "", old, ""]
    return ["## Kernel size", "",
            "Box: n x n, every weight 1, no division (a plain sum). Binomial Gaussian: the outer "
            "product of the binomial row C(n-1, k), divided by 2^(2(n-1)). Registers A..F, "
            "input and output in A.", "",
            "![instructions and compile time against kernel size](scaling_size.png)", "",
            *size_table(sizes, size_results), ""]


def write_report(out: Path, args: argparse.Namespace, sizes: list[int],
                 size_results: dict[str, list[Outcome]], kernels: list[np.ndarray],
                 sweeps: list[CountSweep], fresh: list[CountSweep] = ()) -> None:
    command = (f"PYTHONPATH=src python scripts/scaling.py --out {args.out} "
               f"--max-size {args.max_size} --min-kernels {args.min_kernels} "
               f"--max-kernels {args.max_kernels} "
               f"--filters {args.filters} --seed {args.seed} "
               + "".join(f"--fresh-seed {s} " for s in args.fresh_seed or ())
               + f"--timeout {args.timeout:g} --memory-gib {args.memory_gib:g} "
               f"--jobs {args.jobs}"
               + "".join(f" --registers {r}" for r in args.registers or ())
               + (" --skip-size" if args.skip_size else "")
               + (" --sequence SEQUENCE.jsonl" if args.sequence else ""))
    report = out / "scaling.md"
    previous = report.read_text(encoding="utf-8") if report.exists() else ""
    every = [o for r in size_results.values() for o in r]
    every += [o for s in sweeps for row in s.alone for o in row]
    every += [o for s in sweeps for (k, _), o in s.together.items() if k > 1]
    lines = [
        "# Scaling study",
        "",
        f"Generated by `{command}` (`scripts/scaling.py`). Each compile is "
        f"`kalg optimize FILE --ops all --stats` in its own process, one at a time, capped at "
        f"{args.timeout:g} s of wall time and {args.memory_gib:g} GiB of address space, with "
        "kalg's default limits (saturation 10 s and 30000 e-nodes, extraction 30 s; code "
        "generation bounded by expansion counts, so deterministic). *Seconds* are the wall time "
        "of that process, Python start-up and import (about 1 s) included, on a 2-core machine "
        "shared with other work. *Won by* names the candidate decomposition whose program was "
        "shortest (e-graph, e-graph variants, horner, factor chain; for filters also shared "
        "matrix and outputs one at a time). In the kernel-count sweep "
        f"{args.jobs} compiles ran at a time.",
        "",
        *size_section(sizes, size_results, previous),
        "## Number of kernels compiled together",
        "",
        f"Cain's protocol (section 4.3 of the Cain paper): for k = 1 .. {args.max_kernels}, "
        f"{args.filters} random filters of k random 3x3 kernels each. The generator: sample j "
        f"(j = 0 .. {args.filters - 1}) is a sequence of {args.max_kernels} kernels from numpy "
        f"`default_rng({args.seed} + j)`, every weight an integer uniform on 0..8, "
        "independently, the kernel divided by 8 (an all-zero kernel is drawn again); the "
        "filter of sample j at count k is its first k kernels (so each kernel is compiled "
        "alone once). *Together*: one filter whose kernel i is written to the i-th register "
        "(A, B, C, ...; the input register A is also the first output). *One at a time*: each "
        "kernel compiled alone into A with the whole register file (free to overwrite the "
        "input), instruction counts and times summed over the first k. Cells are mean ± "
        "standard deviation (min-max) over the samples; the ratio is the sum of together over "
        "the sum of one at a time. With 6 registers (A..F) at most 6 kernels fit (each output "
        "needs its register); with six, the output written last is made in place from the "
        "others (see 'Six outputs on six registers' below), and the kernels compiled alone, "
        "summed, are no longer a program: a comparison, not a baseline that exists. "
        "The 18-register rows are for target `scamp5_wide`, a SIMULATED register file "
        "wider than the device's (as in the Cain paper's study): those programs are verified "
        "in kalg's simulators but cannot run on a SCAMP-5.",
        "",
        "![instructions and compile time against the number of kernels](scaling_kernels.png)",
        "",
    ]
    for s in sweeps:
        lines += [f"### {s.registers} registers ({BUDGETS[s.registers]})", "",
                  *count_table(s), ""]
        if s.registers == 6 and args.sequence:
            lines += [*sequence_table(s, Path(args.sequence)), ""]
        for f in (f for f in fresh if f.registers == s.registers):
            lines += [f"Fresh filters, {s.registers} registers: the same protocol on the "
                      f"samples of seed {f.seed} (sample j from `default_rng({f.seed} + j)`), "
                      "a draw no file of the project holds:", "", *count_table(f), ""]
    lines += ["The kernels of sample 0 (seed " + str(args.seed) + "):", "",
              *kernels_block(kernels), "",
              *SIX_OUTPUTS, "",
              "## What the numbers show", "",
              *size_commentary(sizes, size_results), *count_commentary([*sweeps, *fresh]), "",
              "## Failures", "", *failures_section(every), "",
              "## Fixes made for this study", "", *FIXES, ""]
    (out / "scaling.md").write_text("\n".join(lines), encoding="utf-8")


# --- main ---------------------------------------------------------------------------------

def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", default="docs", help="folder for scaling.md and the plots")
    p.add_argument("--max-size", type=int, default=15, help="largest kernel size n (odd)")
    p.add_argument("--max-kernels", type=int, default=10, help="most random kernels")
    p.add_argument("--min-kernels", type=int, default=2,
                   help="fewest kernels compiled together (rows below it are left out)")
    p.add_argument("--seed", type=int, default=0, help="seed of the random kernels")
    p.add_argument("--filters", type=int, default=10, help="random filters per kernel count")
    p.add_argument("--fresh-seed", type=int, action="append", metavar="SEED",
                   help="also sweep the kernel counts on the filters of this seed (repeatable): "
                        "a second draw, tabled beside the first")
    p.add_argument("--jobs", type=int, default=1,
                   help="compiles at a time in the kernel-count sweep (default 1)")
    p.add_argument("--skip-size", action="store_true",
                   help="only the kernel-count sweep (the size section is left out)")
    p.add_argument("--timeout", type=float, default=300,
                   help="wall-clock cap of one compile, seconds (default 300)")
    p.add_argument("--memory-gib", type=float, default=8,
                   help="address-space cap of one compile, GiB (default 8)")
    p.add_argument("--quick", action="store_true",
                   help="a smoke run: sizes up to 7, up to 3 kernels, 120 s cap")
    p.add_argument("--registers", type=int, choices=sorted(BUDGETS), action="append",
                   help="register budget of the kernel-count sweep (repeatable; default all)")
    p.add_argument("--results", metavar="JSON",
                   help="write every compile's outcome to this file, and each as it is known to "
                        "this file + 'l' (JSON lines; both for --reuse)")
    p.add_argument("--reuse", metavar="JSON", action="append",
                   help="take the outcomes of compiles of the same name and source from this "
                        "--results file of an earlier run (repeatable)")
    p.add_argument("--sequence", metavar="JSONL",
                   help="scripts/sequence_baseline.py's output: a table of together against "
                        "the outputs' own programs in sequence, 6 registers")
    p.add_argument("--keep", metavar="DIR", help="keep the generated .kalg files in DIR")
    p.add_argument("--sizes-only", action="store_true",
                   help="run the kernel-size sweep only and replace the 'Kernel size' section "
                        "of an existing OUT/scaling.md (and its plot)")
    args = p.parse_args(argv)
    if args.quick:
        args.max_size = min(args.max_size, 7)
        args.max_kernels = min(args.max_kernels, 3)
        args.filters = min(args.filters, 2)
        args.timeout = min(args.timeout, 120)
    return args


def save_outcomes(outcomes: list[Outcome], path: Path) -> None:
    """Every outcome as JSON (name, source, counts, times, failure)."""
    path.write_text(json.dumps([asdict(o) for o in outcomes], indent=1), encoding="utf-8")


def load_outcomes(paths: list[str]) -> dict[str, Outcome]:
    """source -> outcome from --results files (a later file wins)."""
    found: dict[str, Outcome] = {}
    for path in paths:
        text = Path(path).read_text(encoding="utf-8")
        items = ([json.loads(line) for line in text.splitlines() if line.strip()]
                 if path.endswith(".jsonl") else json.loads(text))
        for item in items:
            found[item["source"]] = Outcome(**item)
    return found


def sizes_only(args: argparse.Namespace, out: Path, sizes: list[int]) -> int:
    """The size sweep alone, written over the 'Kernel size' section of OUT/scaling.md."""
    with tempfile.TemporaryDirectory(prefix="kalg-scaling-") as tmp:
        results = size_sweep(sizes, Runner(Path(args.keep or tmp), args.timeout,
                                           args.memory_gib))
    plot_sizes(sizes, results, out / "scaling_size.png")
    report = out / "scaling.md"
    text = report.read_text(encoding="utf-8")
    start = text.index("## Kernel size")
    end = text.index("## Number of kernels compiled together")
    command = (f"PYTHONPATH=src python scripts/scaling.py --out {args.out} --sizes-only "
               f"--max-size {args.max_size} --timeout {args.timeout:g} "
               f"--memory-gib {args.memory_gib:g}")
    section = ["## Kernel size", "",
               f"This section was regenerated by `{command}` (the rest of the study by the "
               "command above). Box: n x n, every weight 1, no division (a plain sum). "
               "Binomial Gaussian: the outer product of the binomial row C(n-1, k), divided by "
               "2^(2(n-1)). Registers A..F, input and output in A.", "",
               "![instructions and compile time against kernel size](scaling_size.png)", "",
               *size_table(sizes, results), "", *size_commentary(sizes, results), "", ""]
    report.write_text(text[:start] + "\n".join(section) + text[end:], encoding="utf-8")
    print(f"wrote {report} (kernel size section), {out / 'scaling_size.png'}", file=sys.stderr)
    return 0


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    sizes = list(range(3, args.max_size + 1, 2))
    samples = filter_samples(args.filters, args.max_kernels, args.seed)
    kernels = samples[0]
    if args.sizes_only:
        return sizes_only(args, out, sizes)
    with tempfile.TemporaryDirectory(prefix="kalg-scaling-") as tmp:
        workdir = Path(args.keep) if args.keep else Path(tmp)
        workdir.mkdir(parents=True, exist_ok=True)
        runner = Runner(workdir, args.timeout, args.memory_gib, args.jobs,
                        load_outcomes(args.reuse or []),
                        journal=Path(args.results + "l") if args.results else None)
        size_results = {} if args.skip_size else size_sweep(sizes, runner)
        sweeps = [count_sweep(samples, r, runner, args.max_kernels, args.min_kernels, args.seed)
                  for r in args.registers or BUDGETS]
        fresh = [count_sweep(filter_samples(args.filters, args.max_kernels, seed), r, runner,
                             args.max_kernels, args.min_kernels, seed)
                 for seed in args.fresh_seed or () for r in args.registers or BUDGETS]
    if args.results:
        save_outcomes(runner.done, Path(args.results))
    if size_results:
        plot_sizes(sizes, size_results, out / "scaling_size.png")
    plot_counts(sweeps, out / "scaling_kernels.png")
    write_report(out, args, sizes, size_results, kernels, sweeps, fresh)
    print(f"wrote {out / 'scaling.md'}, {out / 'scaling_size.png'}, "
          f"{out / 'scaling_kernels.png'}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
