"""A fuzzing campaign (issue 27, item 6): N inputs per strategy, each run in a child process
with a timeout and a memory cap; prints a table of outcomes, tracebacks, runs past the timeout
and peak memory.

    .venv/bin/python scripts/fuzz_campaign.py [--examples N] [--timeout S] [--memory-mib M]
                                              [--strategies a,b] [--json OUT]

Strategies (tests/fuzz/strategies.py): kalg sources from the grammar, mutated examples and
SCAMP-5 program texts (issue 14), huge coefficients and deep nesting (issue 27). Each input
is one `kalg check` (`kalg simulate` for programs) in a forked child: exit 0 or 1 with a
located error is clean; anything else (another exit code, a traceback, an error without a
location) is counted as a failure, a child still running at the timeout is killed and counted,
and the child's peak resident memory is recorded (its address space is capped at M MiB). The
inputs are drawn by hypothesis with a fixed seed, so a campaign is repeatable. Run it niced:
`nice -n 10 .venv/bin/python scripts/fuzz_campaign.py` (docs/fuzzing.md has the figures).
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import resource
import sys
import tempfile
import time
import traceback
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "src")]

from hypothesis import HealthCheck, given, seed, settings  # noqa: E402
from tests.fuzz import strategies as fs  # noqa: E402

SOBEL = str(ROOT / "examples" / "sobel.kalg")
STRATEGIES = {
    "kalg_sources": (fs.kalg_sources, "check", ".kalg"),
    "mutated_examples": (fs.mutated_examples, "check", ".kalg"),
    "program_texts": (fs.program_texts, "simulate", ".scamp5"),
    "large_values": (fs.large_value_sources, "check", ".kalg"),
    "deep_nesting": (fs.deeply_nested_sources, "check", ".kalg"),
}
"""Name → (strategy, command, file suffix)."""


def _argv(command: str, path: str) -> list[str]:
    if command == "simulate":
        return ["simulate", path, "--kernel", SOBEL, "--size", "12"]
    return ["check", path]


def _child(conn, argv: list[str], path: str, memory_mib: int) -> None:
    """Run one input; send (verdict, detail, peak KiB)."""
    limit = memory_mib * 2**20
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    try:
        code, _, err, _ = fs.run_kalg(argv)
        located = argv[0] == "check" or located_program(err)
        try:
            fs.check_outcome(code, err, Path(path), located=located)
            verdict, detail = ("ok" if code == 0 else "error"), ""
        except AssertionError as failure:
            verdict, detail = "failure", str(failure)[:300]
    except MemoryError:
        verdict, detail = "memory", "MemoryError"
    except BaseException:  # a traceback: the bug this campaign looks for
        verdict, detail = "traceback", traceback.format_exc()[-600:]
    conn.send((verdict, detail, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss))
    conn.close()


def located_program(err: str) -> bool:
    """Program errors are located unless the whole program is at fault (as tests/fuzz)."""
    return "does not compute the kernel" not in err and "no interior" not in err


def run_one(data: str | bytes, command: str, suffix: str, timeout: float,
            memory_mib: int) -> tuple[str, str, int, float]:
    """(verdict, detail, peak KiB, seconds) of one input in a forked child."""
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "input" + suffix)
        Path(path).write_bytes(data if isinstance(data, bytes) else data.encode("utf-8"))
        ctx = multiprocessing.get_context("fork")
        parent, child = ctx.Pipe(duplex=False)
        proc = ctx.Process(target=_child, args=(child, _argv(command, path), path, memory_mib))
        start = time.perf_counter()
        proc.start()
        child.close()
        ready = parent.poll(timeout)
        seconds = time.perf_counter() - start
        if not ready:
            proc.kill()
            proc.join()
            return "timeout", f"still running after {timeout} s", 0, seconds
        try:
            verdict, detail, peak = parent.recv()
        except EOFError:  # the child died (killed for memory) before it answered
            verdict, detail, peak = "died", f"exit code {proc.exitcode}", 0
        proc.join()
        return verdict, detail, peak, seconds


def campaign(name: str, examples: int, timeout: float, memory_mib: int) -> dict:
    """Run `examples` inputs of strategy `name`; the counts and the worst cases."""
    strategy, command, suffix = STRATEGIES[name]
    counts: dict[str, int] = {}
    worst = {"seconds": 0.0, "peak_mib": 0.0}
    failures: list[str] = []

    @seed(27)
    @settings(max_examples=examples, deadline=None, database=None,
              suppress_health_check=list(HealthCheck))
    @given(data=strategy())
    def one(data):
        verdict, detail, peak, seconds = run_one(data, command, suffix, timeout, memory_mib)
        counts[verdict] = counts.get(verdict, 0) + 1
        if (done := sum(counts.values())) % 100 == 0:
            print(f"  {name}: {done} inputs, {counts}", file=sys.stderr, flush=True)
        worst["seconds"] = max(worst["seconds"], seconds)
        worst["peak_mib"] = max(worst["peak_mib"], peak / 1024)
        if verdict not in ("ok", "error") and len(failures) < 5:
            failures.append(f"{verdict}: {detail}\n  input: {data!r:.300}")

    one()
    return {"strategy": name, "command": command, "inputs": sum(counts.values()), **counts,
            "max_seconds": round(worst["seconds"], 2), "peak_mib": round(worst["peak_mib"]),
            "failures": failures}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--examples", type=int, default=10_000, help="inputs per strategy")
    p.add_argument("--timeout", type=float, default=10.0, help="seconds per input")
    p.add_argument("--memory-mib", type=int, default=3072, help="address space per input")
    p.add_argument("--strategies", default=",".join(STRATEGIES),
                   help=f"comma-separated, from {', '.join(STRATEGIES)}")
    p.add_argument("--json", type=Path, help="also write the results as JSON")
    args = p.parse_args(argv)
    # load what every input needs (numpy, lark's tables, the commands) once, before the forks
    fs.run_kalg(["check", SOBEL])
    fs.run_kalg(["simulate", str(ROOT / "tests" / "golden" / "sobel.all.scamp5"), "--kernel",
                 SOBEL, "--size", "12"])
    rows = []
    for name in args.strategies.split(","):
        start = time.perf_counter()
        row = campaign(name, args.examples, args.timeout, args.memory_mib)
        row["wall_seconds"] = round(time.perf_counter() - start)
        rows.append(row)
        print(_row(row), flush=True)
        for failure in row["failures"]:
            print("    " + failure.replace("\n", "\n    "), flush=True)
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1) + "\n", encoding="utf-8")
    bad = sum(r.get(k, 0) for r in rows for k in ("traceback", "timeout", "failure", "died",
                                                   "memory"))
    return 1 if bad else 0


HEADER = ("| strategy | command | inputs | ok | located errors | tracebacks | other failures | "
          "past timeout | killed/out of memory | slowest s | peak MiB | wall s |")


def _row(r: dict) -> str:
    return (f"| {r['strategy']} | {r['command']} | {r['inputs']} | {r.get('ok', 0)} | "
            f"{r.get('error', 0)} | {r.get('traceback', 0)} | {r.get('failure', 0)} | "
            f"{r.get('timeout', 0)} | {r.get('died', 0) + r.get('memory', 0)} | "
            f"{r['max_seconds']} | {r['peak_mib']} | {r['wall_seconds']} |")


if __name__ == "__main__":
    print(HEADER)
    print("|" + "---|" * HEADER.count(" | ") + "---|")
    sys.exit(main())
