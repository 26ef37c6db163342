"""A batch: many definitions (a network's layers, a sweep of approximation settings) compiled as
independent jobs, on a local process pool or a Dask cluster, into one JSON report (`run_batch`).

Each job is one definition of one file compiled by `kalg.compile` with the batch's options; its
entry in the report is what `kalg optimize --json` prints for it, without the wall times (so
that the report is byte-identical whichever engine ran it, and however many workers), or the
error it ended with: a failed job never stops the others. Jobs are listed in the order given
(files in order, a directory's files by name, a file's definitions in file order).

Engines (`Engine`): `serial` (this process), `pool` (a `concurrent.futures` process pool of
`forkserver` processes, each compile with one process of its own: the pool is the
parallelism) and `dask` (a `distributed.Client` at a scheduler's address). Dask is imported
only here.
"""

from __future__ import annotations

import concurrent.futures as cf
import copy
import multiprocessing as mp
import os
import pickle
import subprocess
import sys
import threading
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kalg.diagnostics import KalgError

__all__ = ["Job", "jobs_of", "report", "run_batch"]


@dataclass(frozen=True, slots=True)
class Job:
    """One definition to compile: a .kalg file, the definition's name (None: the file could not
    be read, and the job reports why) and `kalg.compile`'s options."""

    path: str
    name: str | None
    options: tuple[tuple[str, Any], ...] = field(default=())
    problem: str | None = None
    """Why the file's definitions could not be listed (the job then fails with it)."""


def jobs_of(paths: Sequence[str], options: dict[str, Any]) -> list[Job]:
    """The jobs of `paths`: 'FILE' (each of its definitions), 'FILE:NAME' (one) or a directory
    (each of its .kalg files, by name). A file that cannot be read or checked is one job that
    fails with the located error."""
    from kalg import frontend

    opts = tuple(sorted(options.items()))
    jobs = []
    for text in paths:
        for path, name in _targets(text):
            if name is not None:
                jobs.append(Job(path, name, opts))
                continue
            try:
                module = frontend.load_text(frontend.read_source(path), path)
            except KalgError as err:
                jobs.append(Job(path, None, opts, err.render()))
                continue
            jobs += [Job(path, n, opts) for n in module.definitions]
    return jobs


def _targets(text: str) -> Iterator[tuple[str, str | None]]:
    path = Path(text)
    if path.is_dir():
        yield from ((str(p), None) for p in sorted(path.glob("*.kalg")))
    elif not path.exists() and ":" in text:
        file, name = text.rsplit(":", 1)
        yield file, name
    else:
        yield text, None


def compile_job(job: Job) -> dict[str, Any]:
    """The report entry of one job (a pure function of the job: what `kalg optimize --json`
    prints for the definition, less the wall times, or the error).

    A job with --timeout outside a main thread (a Dask worker runs tasks in threads) runs in a
    fresh interpreter's main thread: only there can --timeout's alarm cut a stage that does not
    check the deadline (`kalg.settings.bounded`); in a thread the bound would be the searches'
    own checks only."""
    if dict(job.options).get("timeout") is not None and (
            threading.current_thread() is not threading.main_thread()):
        return _in_fresh_process(job)
    return _compile_job(job)


def _in_fresh_process(job: Job) -> dict[str, Any]:
    """`compile_job(job)` in a new interpreter (not a fork: a Dask worker is threaded, and may
    be a daemon), the job and its entry pickled through its standard streams."""
    code = "import pickle, sys; sys.path[:0] = pickle.load(sys.stdin.buffer); " \
           "from kalg.batch import _fresh_main; _fresh_main()"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, check=False,
                          input=pickle.dumps(sys.path) + pickle.dumps(job))
    if done.returncode != 0 or not done.stdout:
        raise RuntimeError(f"the process compiling the job exited with {done.returncode}: "
                           f"{done.stderr.decode(errors='replace')[-300:]}")
    return pickle.loads(done.stdout)


def _fresh_main() -> None:
    """The job of `_in_fresh_process`, read from stdin; its entry to stdout."""
    job, out = pickle.load(sys.stdin.buffer), sys.stdout.buffer
    sys.stdout = sys.stderr  # whatever the compile prints cannot mix with the answer
    out.write(pickle.dumps(_compile_job(job)))
    out.flush()


def _compile_job(job: Job) -> dict[str, Any]:
    import kalg
    from kalg.jsonout import base, compile_fields, error_entry, layer_fields

    entry = base("optimize", file=job.path, definition=job.name)
    if job.problem is not None:
        return entry | {"ok": False, "exit_code": 1, "errors": [error_entry(job.problem)]}
    try:
        result = kalg.compile(Path(job.path), name=job.name, **dict(job.options))
    except KalgError as err:
        return entry | {"ok": False, "exit_code": err.exit_code,
                        "errors": [error_entry(err.message, err)]}
    except Exception as err:  # a kalg bug: reported, and the batch goes on
        return entry | {"ok": False, "exit_code": 3,
                        "errors": [error_entry(f"internal error: {type(err).__name__}: {err}")]}
    fields = compile_fields(result)
    fields["seconds"] = None
    fields["stats"].pop("seconds", None)
    return entry | fields | layer_fields(result)


Progress = Callable[[int, int], None]
"""(jobs done, jobs in all), after each job."""

_Finished = Callable[["Job"], None]
"""What the engines call with each job as it finishes."""


def run_batch(jobs: Sequence[Job], scheduler: str | None = None, workers: int = 1,
              progress: Progress | None = None) -> list[dict[str, Any]]:
    """Every job's report entry, in the order of `jobs`: on the Dask cluster at `scheduler`,
    else on a pool of `workers` processes (one: this process). A job given more than once
    (a file named twice, or as a whole and by one definition) is compiled once: its entry is
    a pure function of the job, so each repeat reports a copy of it. `progress` counts every
    job, repeats with the one they repeat."""
    done = progress or (lambda _done, _total: None)
    repeats = Counter(jobs)
    unique = list(repeats)
    finished = 0

    def counted(job: Job) -> None:
        nonlocal finished
        finished += repeats[job]
        done(finished, len(jobs))

    if scheduler is not None:
        results = _on_dask(unique, scheduler, counted)
    elif workers <= 1 or len(unique) <= 1:
        results = []
        for job in unique:
            results.append(compile_job(job))
            counted(job)
    else:
        results = _on_pool(unique, workers, counted)
    entries = dict(zip(unique, results, strict=True))
    return [copy.deepcopy(entries[job]) for job in jobs]


def _on_pool(jobs: Sequence[Job], workers: int, done: _Finished) -> list[dict[str, Any]]:
    context = mp.get_context("forkserver")
    results: dict[int, dict[str, Any]] = {}
    with cf.ProcessPoolExecutor(max_workers=min(workers, len(jobs)), mp_context=context,
                                initializer=_one_process) as pool:
        futures = {pool.submit(compile_job, job): i for i, job in enumerate(jobs)}
        for future in cf.as_completed(futures):
            results[futures[future]] = _result(future.result, jobs[futures[future]])
            done(jobs[futures[future]])
    return [results[i] for i in range(len(jobs))]


def _one_process() -> None:
    """A pool process compiles with one process (`kalg.workers`): the pool is the parallelism,
    and a compile's program does not depend on its worker count."""
    os.environ["KALG_WORKERS"] = "1"


def _on_dask(jobs: Sequence[Job], scheduler: str, done: _Finished) -> list[dict[str, Any]]:
    from distributed import Client, as_completed

    try:
        client = Client(scheduler, timeout="5s")
    except (OSError, TimeoutError) as err:
        raise KalgError(f"cannot reach the Dask scheduler at {scheduler!r}: {err}") from None
    with client:
        futures = [client.submit(compile_job, job, key=f"kalg-{i}-{job.path}-{job.name}",
                                 pure=False) for i, job in enumerate(jobs)]
        index = {f.key: i for i, f in enumerate(futures)}
        results: dict[int, dict[str, Any]] = {}
        for future in as_completed(futures):
            results[index[future.key]] = _result(future.result, jobs[index[future.key]])
            done(jobs[index[future.key]])
    return [results[i] for i in range(len(jobs))]


def _result(get: Callable[[], dict[str, Any]], job: Job) -> dict[str, Any]:
    """A finished job's entry; a worker that died (out of memory, killed) is the job's error."""
    from kalg.jsonout import base, error_entry

    try:
        return get()
    except Exception as err:
        return base("optimize", file=job.path, definition=job.name) | {
            "ok": False, "exit_code": 3,
            "errors": [error_entry(f"the worker running this job failed: "
                                   f"{type(err).__name__}: {err}")]}


def report(results: list[dict[str, Any]]) -> dict[str, Any]:
    """The batch's one JSON object: the common keys (docs/json.md), `jobs` (each job's entry)
    and `totals`; not ok (exit code: the worst job's) when a job failed."""
    from kalg.jsonout import base, error_entry

    failed = [r for r in results if not r["ok"]]
    code = max((r["exit_code"] for r in failed), default=0)
    totals = {"jobs": len(results), "compiled": len(results) - len(failed),
              "failed": len(failed),
              "instructions": sum(r["instructions"] or 0 for r in results if r["ok"])}
    return base("batch", ok=not failed, exit_code=code,
                errors=[error_entry(_summary(r)) for r in failed], jobs=results, totals=totals)


def _summary(entry: dict[str, Any]) -> str:
    """A failed job's error in one line: FILE:NAME: message, or for a file that could not be
    read or checked (no definition), its own error, which names the file (it read
    "net.kalgx:None: kalg: error: cannot read 'net.kalgx'")."""
    message = entry["errors"][0]["message"]
    if entry["definition"] is None:
        return message.splitlines()[0].removeprefix("kalg: error: ")
    return f"{entry['file']}:{entry['definition']}: {message}"
