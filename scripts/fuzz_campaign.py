"""A fuzzing campaign (issue 27): N inputs per strategy, run in warm worker processes with a
per-input timeout and a memory cap; prints a table of outcomes, tracebacks, runs past the
timeout and peak memory.

    .venv/bin/python scripts/fuzz_campaign.py [--examples N] [--workers W] [--timeout S]
                                              [--memory-mib M] [--strategies a,b] [--json OUT]
                                              [--progress FILE]

Strategies (tests/fuzz/strategies.py): kalg sources from the grammar, mutated examples and
SCAMP-5 program texts (issue 14), huge coefficients and deep nesting, layers (filters with more
outputs than registers), batches (many definitions, some failing) and pipelines (issue 27).
Each input is one command run in process (`kalg check`, `simulate`, `optimize` or `batch`, see
`STRATEGIES`): exit 0 or 1 with a located error is clean; anything else (another exit code, a
traceback, an error without a location) is a failure.

Speed: the parent imports kalg and runs each command once, then forks W workers (leave this
file unedited while a campaign runs: hypothesis reads it when a worker is forked again); each
draws its own share of the inputs with hypothesis (seed --seed + its index, default 27, so a
campaign is repeatable for a given W, and another --seed draws other inputs) and runs them one
after another in process, telling the parent when each starts and ends. The parent is the
watchdog: a worker whose input runs past the timeout in CPU time (or ten times it in wall-clock
time: a niced worker on a loaded machine waits for a core) is killed (the input counted as past
the timeout) and a fresh worker, forked again from the warm parent, resumes its share after
that input; so does a worker that died (killed for memory). Each worker's address space is
capped at M MiB; the peak resident memory is the largest a worker reached. Compiling commands
also count runs past their own `--timeout` contract (S x 1.1 + 1 s): in wall-clock time
(`over_wall`, logged) and, as failures, in CPU time (a niced worker on a loaded machine waits
for a core, which is not the compile's doing). Run it niced: `nice -n 15 .venv/bin/python
scripts/fuzz_campaign.py` (docs/robustness.md has the figures). """

from __future__ import annotations

import argparse
import contextlib
import json
import multiprocessing
import multiprocessing.connection as mpc
import os
import resource
import signal
import sys
import tempfile
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "src")]

from hypothesis import HealthCheck, Phase, given, seed, settings  # noqa: E402
from tests.fuzz import strategies as fs  # noqa: E402

SOBEL = str(ROOT / "examples" / "sobel.kalg")
COMPILE_TIMEOUT = 3.0
"""The `--timeout` given to compiling commands (layers_compile, batches)."""

STRATEGIES = {
    "kalg_sources": (fs.kalg_sources, "check"),
    "mutated_examples": (fs.mutated_examples, "check"),
    "program_texts": (fs.program_texts, "simulate"),
    "large_values": (fs.large_value_sources, "check"),
    "deep_nesting": (fs.deeply_nested_sources, "check"),
    "layers": (fs.layer_sources, "check"),
    "pipelines": (fs.pipeline_sources, "check"),
    "layers_compile": (fs.small_layer_sources, "optimize"),
    "pipelines_compile": (fs.pipeline_sources, "optimize"),
    "batches": (fs.batch_inputs, "batch"),
}
"""Name → (strategy, command)."""


# ----------------------------------------------------------------------------- one input
def _argv(command: str, data, tmp: str) -> tuple[list[str], str]:
    """The command line of one input (its files written under tmp) and the input's path."""
    if command == "batch":
        text, args = data
        path = os.path.join(tmp, "net.kalg")
        Path(path).write_text(text, encoding="utf-8")
        return (["batch", "--workers", "1", "--timeout", str(COMPILE_TIMEOUT),
                 *(a.format(f=path) for a in args)], path)
    path = os.path.join(tmp, "input.scamp5" if command == "simulate" else "input.kalg")
    Path(path).write_bytes(data if isinstance(data, bytes) else data.encode("utf-8"))
    if command == "simulate":
        return ["simulate", path, "--kernel", SOBEL, "--size", "12"], path
    if command == "optimize" and data.startswith("target scamp5"):  # small_layer_sources
        return ["optimize", path, "--timeout", str(COMPILE_TIMEOUT)], path
    if command == "optimize":
        return ["optimize", path], path
    return ["check", path], path


def located_program(err: str) -> bool:
    """Program errors are located unless the whole program is at fault (as tests/fuzz)."""
    return "does not compute the kernel" not in err and "no interior" not in err


def _judge(command: str, code: int, out: str, err: str, path: str) -> tuple[str, str]:
    if command == "batch":
        if code not in (0, 1) or "Traceback" in err:
            return "failure", f"exit {code}: {err[-300:]}"
        report = json.loads(out)
        bugs = [j for j in report["jobs"] if j["exit_code"] not in (0, 1)]
        if bugs:
            return "failure", json.dumps(bugs[0]["errors"])[:300]
        return ("ok" if code == 0 else "error"), f"{len(report['jobs'])} jobs"
    # a compile may also end in an error of the whole compile ("kalg: error: --timeout 3 s
    # expired ...", no program in the registers): clear, but at no line of the input
    located = command == "check" or (command == "simulate" and located_program(err))
    if command == "optimize" and code == 1 and err.startswith("kalg: error: "):
        return "error", ""
    try:
        fs.check_outcome(code, err, Path(path), located=located)
    except AssertionError as failure:
        return "failure", str(failure)[:300]
    return ("ok" if code == 0 else "error"), ""


def run_one(command: str, data, tmp: str) -> tuple[str, str, float]:
    """(verdict, detail, seconds) of one input, in this process."""
    start = time.perf_counter()
    try:
        argv, path = _argv(command, data, tmp)
        code, out, err, _ = fs.run_kalg(argv)
        verdict, detail = _judge(command, code, out, err, path)
    except MemoryError:
        verdict, detail = "memory", "MemoryError"
    except BaseException:  # a traceback: the bug this campaign looks for
        verdict, detail = "traceback", traceback.format_exc()[-800:]
    return verdict, detail, time.perf_counter() - start


# ----------------------------------------------------------------------------- workers
def _worker(conn, name: str, index: int, share: int, skip: int, memory_mib: int,
            base_seed: int) -> None:
    """Draw `share` inputs (seed base_seed + index), skip the first `skip`, run the rest; tell
    the
    parent ("start", i, input) before and ("done", i, verdict, detail, seconds, peak KiB)
    after each."""
    _die_with_parent()
    os.environ["KALG_WORKERS"] = "1"
    limit = memory_mib * 2**20
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    strategy, command = STRATEGIES[name]
    counter = [0]
    tmp = tempfile.mkdtemp(prefix=f"fuzz-{name}-{index}-")

    @seed(base_seed + index)
    @settings(max_examples=share, deadline=None, database=None, phases=[Phase.generate],
              suppress_health_check=list(HealthCheck))
    @given(data=strategy())
    def one(data):
        i = counter[0]
        counter[0] += 1
        if i < skip or i >= share:
            return
        cpu = time.process_time()
        conn.send(("start", i, data, cpu))
        verdict, detail, seconds = run_one(command, data, tmp)
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        conn.send(("done", i, verdict, detail, seconds, peak, time.process_time() - cpu))
        if verdict == "memory":  # the process may be in a bad state: start afresh
            os._exit(0)

    one()
    conn.send(("end", counter[0]))
    conn.close()


def _die_with_parent() -> None:
    """Linux ends this worker when the campaign's process dies (PR_SET_PDEATHSIG)."""
    import ctypes

    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)


@dataclass
class Slot:
    """One worker and what the parent knows of it."""

    index: int
    share: int
    seed: int = 27
    next: int = 0
    proc: multiprocessing.Process | None = None
    conn: mpc.Connection | None = None
    current: tuple[int, object, float, float] | None = None
    """(index, input, wall-clock start, the worker's CPU seconds at the start)"""
    finished: bool = False
    deaths: int = 0
    """Deaths in a row before an input started (a worker that cannot start is given up)."""


@dataclass
class Tally:
    counts: dict[str, int] = field(default_factory=dict)
    seconds: float = 0.0
    peak_kib: int = 0
    failures: list[str] = field(default_factory=list)
    over_wall: int = 0
    """Inputs past --timeout's bound in wall-clock time (counted as verdicts only past it in
    CPU time too)."""

    log: object = None
    """Where each failure is written as it is found (the progress file)."""

    def log_line(self, text: str) -> None:
        print(text, file=self.log, flush=True)

    def add(self, verdict: str, detail: str, data, seconds: float) -> None:
        self.counts[verdict] = self.counts.get(verdict, 0) + 1
        self.seconds = max(self.seconds, seconds)
        if verdict not in ("ok", "error"):
            if len(self.failures) < 8:
                self.failures.append(f"{verdict}: {detail}\n  input: {data!r:.400}")
            print(f"FAILURE {verdict} after {seconds:.2f} s: {detail}\n  input: {data!r}",
                  file=self.log, flush=True)


def _spawn(slot: Slot, name: str, memory_mib: int) -> None:
    ctx = multiprocessing.get_context("fork")
    parent, child = ctx.Pipe(duplex=False)
    # not a daemon: a compile starts processes of its own (egglog's, a batch's pool); the
    # worker asks Linux to end it with the parent instead (`_die_with_parent`)
    slot.proc = ctx.Process(target=_worker, args=(child, name, slot.index, slot.share,
                                                  slot.next, memory_mib, slot.seed))
    slot.proc.start()
    child.close()
    slot.conn, slot.current = parent, None


def _lost(slot: Slot, tally: Tally, verdict: str, detail: str, name: str,
          memory_mib: int) -> None:
    """The worker's current input timed out or killed it: count it, resume after it."""
    if slot.proc.is_alive():
        slot.proc.kill()
    slot.proc.join()
    slot.conn.close()
    if slot.current is None:  # it died between inputs (memory): resume where it was
        slot.deaths += 1
        if slot.next >= slot.share or slot.deaths > 3:  # it cannot start: give its share up
            tally.add("died", f"the worker died {slot.deaths} times before an input; "
                      f"{slot.share - slot.next} inputs not run", None, 0.0)
            slot.finished = True
            return
    else:
        i, data, started, _ = slot.current
        tally.add(verdict, detail, data, time.monotonic() - started)
        slot.next, slot.deaths = i + 1, 0
    if slot.next >= slot.share:
        slot.finished = True
    else:
        _spawn(slot, name, memory_mib)


def _past(slot: Slot, timeout: float) -> bool:
    """Whether the worker's input has run past `timeout`: in CPU time (a niced worker on a
    loaded machine may wait for a core that long), or ten times it in wall-clock time."""
    wall = time.monotonic() - slot.current[2]
    if wall <= timeout:
        return False
    try:
        fields = Path(f"/proc/{slot.proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
        cpu = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return True
    return cpu - slot.current[3] > timeout or wall > 10 * timeout


def _message(slot: Slot, tally: Tally, msg: tuple, contract: float | None) -> None:
    if msg[0] == "start":
        slot.current = (msg[1], msg[2], time.monotonic(), msg[3])
        return
    if msg[0] == "end":
        slot.finished = True
        return
    _, i, verdict, detail, seconds, peak, cpu = msg
    data = slot.current[1]
    if contract is not None and detail.endswith(" jobs"):  # a batch: the bound of each job
        contract = 1 + int(detail.split()[0]) * contract
    if verdict in ("ok", "error") and contract is not None and seconds > contract:
        # past --timeout's bound in wall-clock time; on a loaded machine a niced worker may
        # wait for a core, so its CPU time is counted apart
        tally.over_wall += 1
        tally.log_line(f"past the bound in wall time only: {seconds:.2f} s wall, {cpu:.2f} s "
                       f"CPU > {contract:.2f} s\n  input: {data!r}")
        if cpu > contract:
            verdict, detail = "over_contract", f"{cpu:.2f} s CPU > {contract:.2f} s"
    tally.add(verdict, detail, data, seconds)
    tally.peak_kib = max(tally.peak_kib, peak)
    slot.current, slot.next = None, i + 1


def campaign(name: str, examples: int, workers: int, timeout: float, memory_mib: int,
             progress, base_seed: int = 27) -> dict:
    """Run `examples` inputs of strategy `name` on `workers` workers (worker w drawing with
    seed base_seed + w); counts and worst cases."""
    command = STRATEGIES[name][1]
    contract = COMPILE_TIMEOUT * 1.1 + 1 if command == "batch" or name == "layers_compile" \
        else None
    shares = [examples // workers + (w < examples % workers) for w in range(workers)]
    slots = [Slot(w, s, base_seed) for w, s in enumerate(shares) if s]
    tally = Tally(log=progress)
    for slot in slots:
        _spawn(slot, name, memory_mib)
    reported = 0
    while not all(s.finished for s in slots):
        live = [s for s in slots if not s.finished]
        for slot in live:
            if slot.current and _past(slot, timeout):
                _lost(slot, tally, "timeout", f"still running after {timeout} s", name,
                      memory_mib)
        ready = mpc.wait([s.conn for s in slots if not s.finished], timeout=1.0)
        for slot in [s for s in slots if not s.finished and s.conn in ready]:
            try:
                _message(slot, tally, slot.conn.recv(), contract)
            except EOFError:  # the worker died: killed for memory, or crashed
                _lost(slot, tally, "died", f"exit code {slot.proc.exitcode}", name,
                      memory_mib)
                continue
            if slot.finished:
                slot.proc.join()
        done = sum(tally.counts.values())
        if done - reported >= 100 or (done and all(s.finished for s in slots)):
            reported = done
            print(f"{time.strftime('%H:%M:%S')} {name}: {done}/{examples} {tally.counts} "
                  f"slowest {tally.seconds:.2f} s peak {tally.peak_kib / 1024:.0f} MiB",
                  file=progress, flush=True)
    return {"strategy": name, "command": command, "inputs": sum(tally.counts.values()),
            **tally.counts, "over_wall": tally.over_wall, "max_seconds": round(tally.seconds, 2),
            "peak_mib": round(tally.peak_kib / 1024), "failures": tally.failures}


def _warm_up() -> None:
    """Import what every input needs (numpy, lark's tables, the commands) once, before the
    forks; egglog is left to the workers (a fork after its threads start is unsafe)."""
    fs.run_kalg(["check", SOBEL])
    fs.run_kalg(["simulate", str(ROOT / "tests" / "golden" / "sobel.all.scamp5"), "--kernel",
                 SOBEL, "--size", "12"])


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--examples", type=int, default=10_000, help="inputs per strategy")
    p.add_argument("--workers", type=int, default=1, help="worker processes")
    p.add_argument("--timeout", type=float, default=10.0, help="seconds per input")
    p.add_argument("--memory-mib", type=int, default=3072, help="address space per worker")
    p.add_argument("--strategies", default=",".join(list(STRATEGIES)[:7]),
                   help=f"comma-separated, from {', '.join(STRATEGIES)} (default: the "
                        f"checking ones)")
    p.add_argument("--seed", type=int, default=27,
                   help="worker i draws its inputs with seed SEED + i (default 27)")
    p.add_argument("--json", type=Path, help="also write the results as JSON")
    p.add_argument("--progress", type=Path, help="append progress lines here (default stderr)")
    args = p.parse_args(argv)
    _warm_up()
    progress = args.progress.open("a", encoding="utf-8") if args.progress else sys.stderr
    print(HEADER)
    print("|" + "---|" * HEADER.count(" | ") + "---|", flush=True)
    rows = []
    for name in args.strategies.split(","):
        start = time.perf_counter()
        timeout = args.timeout if STRATEGIES[name][1] in ("check", "simulate") else max(
            args.timeout, 120.0)
        row = campaign(name, args.examples, args.workers, timeout, args.memory_mib, progress,
                       args.seed)
        row["wall_seconds"] = round(time.perf_counter() - start)
        rows.append(row)
        print(_row(row), flush=True)
        for failure in row["failures"]:
            print("    " + failure.replace("\n", "\n    "), flush=True)
        if args.json:
            args.json.write_text(json.dumps(rows, indent=1) + "\n", encoding="utf-8")
    bad = sum(r.get(k, 0) for r in rows for k in ("traceback", "timeout", "failure", "died",
                                                   "memory", "over_contract"))
    return 1 if bad else 0


HEADER = ("| strategy | command | inputs | ok | located errors | tracebacks | other failures | "
          "past timeout (--timeout's bound in wall time) | killed/out of memory | slowest s | "
          "peak MiB | wall s |")


def _row(r: dict) -> str:
    return (f"| {r['strategy']} | {r['command']} | {r['inputs']} | {r.get('ok', 0)} | "
            f"{r.get('error', 0)} | {r.get('traceback', 0)} | {r.get('failure', 0)} | "
            f"{r.get('timeout', 0) + r.get('over_contract', 0)} "
            f"({r.get('over_wall', 0)} in wall time) | "
            f"{r.get('died', 0) + r.get('memory', 0)} | "
            f"{r['max_seconds']} | {r['peak_mib']} | {r['wall_seconds']} |")


if __name__ == "__main__":
    sys.exit(main())
