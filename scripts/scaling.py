"""Scaling study: how kalg's program length and compile time grow with the problem.

    PYTHONPATH=src python scripts/scaling.py [--out docs] [--max-size 15] [--max-kernels 10]
                                             [--seed 0] [--timeout 300] [--quick]

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
import os
import resource
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from math import comb
from pathlib import Path

import matplotlib
import numpy as np

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


def random_kernels(count: int, seed: int) -> list[np.ndarray]:
    """`count` random 3x3 kernels of integers 0..8 (to be divided by 8), none all zero."""
    rng = np.random.default_rng(seed)
    kernels: list[np.ndarray] = []
    while len(kernels) < count:
        k = rng.integers(0, 9, size=(3, 3))
        if k.any():
            kernels.append(k)
    return kernels


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

    def _limit_memory(self) -> None:
        # Soft limit only, so that kalg's saturation child may still set its own.
        cap = int(self.memory_gib * 2**30)
        resource.setrlimit(resource.RLIMIT_AS, (cap, resource.RLIM_INFINITY))

    def run_kalg(self, path: Path) -> tuple[int | None, str, float]:
        """Run `kalg optimize` on `path`; (exit code or None on timeout, stderr, seconds)."""
        env = dict(os.environ, PYTHONPATH=str(ROOT / "src"))
        cmd = [sys.executable, "-m", "kalg", "optimize", str(path), "--ops", "all", "--stats",
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
        status = f"{outcome.instructions} instructions" if outcome.ok else outcome.failure
        print(f"  {name}: {status} ({wall:.1f} s)", file=sys.stderr, flush=True)
        return outcome


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
    """The kernel-count sweep for one register budget."""

    registers: int
    together: list[Outcome]
    """together[k-1]: the first k kernels as one filter."""
    alone: list[Outcome]
    """alone[i]: kernel i compiled by itself."""


def count_sweep(kernels: list[np.ndarray], registers: int, runner: Runner) -> CountSweep:
    """Compile the first k kernels together, for every k the budget allows, and each alone."""
    most = min(len(kernels), registers)  # every output needs a register of its own
    print(f"kernel-count sweep: {registers} registers", file=sys.stderr)
    alone = [runner.compile(f"r{registers}_alone{i + 1}",
                            kernel_source(f"random{i + 1}", k, 8, registers))
             for i, k in enumerate(kernels)]
    together = [runner.compile(f"r{registers}_together{k}",
                               filter_source(f"random1to{k}", kernels[:k], 8, registers))
                for k in range(1, most + 1)]
    return CountSweep(registers, together, alone)


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
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.2))
    colors = {6: "tab:blue", 18: "tab:orange"}
    for s in sweeps:
        c = colors[s.registers]
        ks_alone = list(range(1, len(s.alone) + 1))
        ks_together = list(range(1, len(s.together) + 1))
        plot_series(left, ks_together, [o.instructions for o in s.together], color=c,
                    label=f"{s.registers} registers, together")
        plot_series(left, ks_alone, cumulative(s.alone, lambda o: o.instructions), color=c,
                    linestyle="--", marker="s", label=f"{s.registers} registers, one at a time")
        plot_times(right, ks_together, s.together, color=c,
                   label=f"{s.registers} registers, together")
        plot_series(right, ks_alone, cumulative(s.alone, lambda o: o.wall), color=c,
                    linestyle="--", marker="s",
                    label=f"{s.registers} registers, one at a time (sum)")
    most = max(len(s.alone) for s in sweeps)
    if most >= 10:
        left.scatter([10, 10], [CAIN_TOGETHER, CAIN_ALONE], marker="*", s=150, color="black",
                     zorder=3, label="Cain paper, 10 kernels, 18 registers\n"
                                     f"(together {CAIN_TOGETHER}, one at a time {CAIN_ALONE})")
    left.set(title="Program length, random 3x3 kernels", xlabel="number of kernels k",
             ylabel="instructions")
    right.set(title="Compile time", xlabel="number of kernels k", ylabel="wall seconds")
    for ax in (left, right):
        ax.grid(alpha=0.3)
        ax.set_xticks(range(1, most + 1))
    left.legend(fontsize=8)
    failure_legend(right, any(not o.ok for s in sweeps for o in s.together))
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
    lines = ["| n | box: instructions | box: bus steps | box: seconds | box: won by | "
             "Gaussian: instructions | Gaussian: bus steps | Gaussian: seconds | "
             "Gaussian: won by |",
             "|---:|---:|---:|---:|---|---:|---:|---:|---|"]
    for i, n in enumerate(sizes):
        row = [f"{n}x{n}"]
        for family in ("box", "gauss"):
            o = results[family][i]
            row += [cell(o), str(o.bus_steps) if o.ok else "", seconds(o.wall), o.candidate]
        lines.append("| " + " | ".join(row) + " |")
    return lines


def count_table(s: CountSweep) -> list[str]:
    alone_instr = cumulative(s.alone, lambda o: o.instructions)
    alone_time = cumulative(s.alone, lambda o: o.wall)
    lines = ["| k | together: instructions | together: seconds | together: won by | "
             "one at a time: instructions (sum) | one at a time: seconds (sum) | "
             "k-th kernel alone |",
             "|---:|---:|---:|---|---:|---:|---:|"]
    for i in range(len(s.alone)):
        t = s.together[i] if i < len(s.together) else None
        row = [str(i + 1), cell(t), seconds(t.wall) if t else "n/a", t.candidate if t else "",
               number(alone_instr[i]), seconds(alone_time[i]), cell(s.alone[i])]
        lines.append("| " + " | ".join(row) + " |")
    return lines


def kernels_block(kernels: list[np.ndarray]) -> list[str]:
    lines = ["```"]
    for i, k in enumerate(kernels):
        rows = ["  ".join(str(w) for w in row) for row in k]
        lines.append(f"k{i + 1}: [ " + " | ".join(rows) + " ] / 8")
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
]
"""What this study found and what was changed (measured with the command in the header)."""


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
                f"compile time {first[1].wall:.1f} s to {last[1].wall:.1f} s.")
        failed = [n for n, o in zip(sizes, outcomes, strict=True) if not o.ok]
        if failed:
            text += f" Failed or timed out: {', '.join(f'{n}x{n}' for n in failed)}."
        notes.append(text)
    return notes


def failed_indices(outcomes: list[Outcome]) -> str:
    """'2, 3, 7': the 1-based positions of the failed outcomes."""
    return ", ".join(str(i + 1) for i, o in enumerate(outcomes) if not o.ok)


def sweep_failures(s: CountSweep) -> str:
    """A sentence naming the failed compiles of one kernel-count sweep, or ''."""
    parts = []
    if failed := failed_indices(s.together):
        parts.append(f"together failed for k = {failed}")
    if failed := failed_indices(s.alone):
        parts.append(f"alone failed for kernel(s) {failed}")
    return (" " + "; ".join(parts).capitalize() + " (see Failures).") if parts else ""


def count_commentary(sweeps: list[CountSweep]) -> list[str]:
    notes = []
    for s in sweeps:
        alone = cumulative(s.alone, lambda o: o.instructions)
        pairs = [(k + 1, t.instructions, alone[k]) for k, t in enumerate(s.together)
                 if t.ok and alone[k] is not None]
        if not pairs:
            notes.append(f"* {s.registers} registers: no k with both compiles succeeding."
                         + sweep_failures(s))
            continue
        k, together, one = pairs[-1]
        change = 100 * (together / one - 1)
        word = "fewer" if change < 0 else "more"
        relation = f"{abs(change):.0f}% {word} together" if together != one else "the same"
        worse = [kk for kk, t, a in pairs if t > a]
        text = (f"* {s.registers} registers: at k = {k} (largest k with both numbers) together "
                f"is {together} instructions versus {one:g} one at a time "
                f"({relation}).")
        if worse:
            text += f" Together is longer than one at a time for k = {', '.join(map(str, worse))}."
        notes.append(text + sweep_failures(s))
    longer = [(t, a) for s in sweeps
              for t, a in zip(s.together, cumulative(s.alone, lambda o: o.instructions),
                              strict=False)]
    if any(t.ok and a is not None and t.instructions > a for t, a in longer):
        notes.append(
            "* Where together is still longer than one at a time, the code generator is not the "
            "limit: for every candidate decomposition it now also compiles the outputs one after "
            "another and keeps the shorter program, so together is never longer than that "
            "candidate's outputs in sequence. The difference is the candidates: each kernel "
            "compiled alone gets its own e-graph (and node limit) and picks its own best "
            "candidate, while the filter's candidates are one joint e-graph, each output's best "
            "variant from it, and Horner digit planes (compare the *won by* columns). Closing the "
            "gap needs one more candidate in the pipeline: each output's decomposition from its "
            "own compile, run in sequence (about k more e-graph runs per filter). Measured by hand "
            "for this study: that candidate gives 137 instructions for ten kernels with 18 "
            "registers (145 now) and 41 for three with 6 registers (43 now). It cannot reach "
            "the one-at-a-time sum exactly: each kernel compiled alone may overwrite the input "
            "(every compile starts from a fresh frame), while one program for all of them must "
            "keep the input until the last kernel, which costs registers (most with 6).")
    cain_fewer = 100 * (1 - CAIN_TOGETHER / CAIN_ALONE)
    notes.append(f"* Cain paper, random 3x3 kernels, 18 registers: {CAIN_TOGETHER} together "
                 f"versus {CAIN_ALONE} one at a time for ten kernels ({cain_fewer:.0f}% fewer "
                 "together). The kernels here are a different random draw from Cain's, so "
                 "compare the trend, not the exact counts.")
    return notes


def write_report(out: Path, args: argparse.Namespace, sizes: list[int],
                 size_results: dict[str, list[Outcome]], kernels: list[np.ndarray],
                 sweeps: list[CountSweep]) -> None:
    command = (f"PYTHONPATH=src python scripts/scaling.py --out {args.out} "
               f"--max-size {args.max_size} --max-kernels {args.max_kernels} "
               f"--seed {args.seed} --timeout {args.timeout:g} --memory-gib {args.memory_gib:g}")
    every = [o for r in size_results.values() for o in r]
    every += [o for s in sweeps for o in (*s.alone, *s.together)]
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
        "shortest (e-graph, e-graph variants, horner, factor chain).",
        "",
        "## Kernel size",
        "",
        "Box: n x n, every weight 1, no division (a plain sum). Binomial Gaussian: the outer "
        "product of the binomial row C(n-1, k), divided by 2^(2(n-1)). Registers A..F, input "
        "and output in A.",
        "",
        "![instructions and compile time against kernel size](scaling_size.png)",
        "",
        *size_table(sizes, size_results),
        "",
        "## Number of kernels compiled together",
        "",
        f"The first k of {len(kernels)} random 3x3 kernels (numpy `default_rng({args.seed})`, "
        "integers 0..8, divided by 8, all-zero kernels skipped, as in the Cain paper). "
        "*Together*: one filter whose kernel i is written to the i-th register (A, B, C, ...; "
        "the input register A is also the first output). *One at a time*: each kernel compiled "
        "alone into A, instruction counts and times summed over the first k. Every output "
        "needs a register of its own, so with 6 registers (A..F) at most 6 kernels can be "
        "compiled together (and the sixth leaves no scratch register); the table says n/a "
        "beyond that. The 18-register rows are for target `scamp5_wide`, a SIMULATED register "
        "file wider than the device's (as in the Cain paper's study): those programs are "
        "verified in kalg's simulators but cannot run on a SCAMP-5.",
        "",
        "![instructions and compile time against the number of kernels](scaling_kernels.png)",
        "",
    ]
    for s in sweeps:
        lines += [f"### {s.registers} registers ({BUDGETS[s.registers]})", "",
                  *count_table(s), ""]
    lines += ["The kernels:", "", *kernels_block(kernels), "",
              "## What the numbers show", "",
              *size_commentary(sizes, size_results), *count_commentary(sweeps), "",
              "## Failures", "", *failures_section(every), "",
              "## Fixes made for this study", "", *FIXES, ""]
    (out / "scaling.md").write_text("\n".join(lines), encoding="utf-8")


# --- main ---------------------------------------------------------------------------------

def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", default="docs", help="folder for scaling.md and the plots")
    p.add_argument("--max-size", type=int, default=15, help="largest kernel size n (odd)")
    p.add_argument("--max-kernels", type=int, default=10, help="most random kernels")
    p.add_argument("--seed", type=int, default=0, help="seed of the random kernels")
    p.add_argument("--timeout", type=float, default=300,
                   help="wall-clock cap of one compile, seconds (default 300)")
    p.add_argument("--memory-gib", type=float, default=8,
                   help="address-space cap of one compile, GiB (default 8)")
    p.add_argument("--quick", action="store_true",
                   help="a smoke run: sizes up to 7, up to 3 kernels, 120 s cap")
    p.add_argument("--keep", metavar="DIR", help="keep the generated .kalg files in DIR")
    p.add_argument("--sizes-only", action="store_true",
                   help="run the kernel-size sweep only and replace the 'Kernel size' section "
                        "of an existing OUT/scaling.md (and its plot)")
    args = p.parse_args(argv)
    if args.quick:
        args.max_size = min(args.max_size, 7)
        args.max_kernels = min(args.max_kernels, 3)
        args.timeout = min(args.timeout, 120)
    return args


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
    kernels = random_kernels(args.max_kernels, args.seed)
    if args.sizes_only:
        return sizes_only(args, out, sizes)
    with tempfile.TemporaryDirectory(prefix="kalg-scaling-") as tmp:
        workdir = Path(args.keep) if args.keep else Path(tmp)
        workdir.mkdir(parents=True, exist_ok=True)
        runner = Runner(workdir, args.timeout, args.memory_gib)
        size_results = size_sweep(sizes, runner)
        sweeps = [count_sweep(kernels, r, runner) for r in BUDGETS]
    plot_sizes(sizes, size_results, out / "scaling_size.png")
    plot_counts(sweeps, out / "scaling_kernels.png")
    write_report(out, args, sizes, size_results, kernels, sweeps)
    print(f"wrote {out / 'scaling.md'}, {out / 'scaling_size.png'}, "
          f"{out / 'scaling_kernels.png'}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
