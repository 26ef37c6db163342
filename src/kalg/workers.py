"""Independent jobs on this process and a forked copy of it: the machine's second core.

`ordered_map(job, count, first)` returns `[job(0), ..., job(count - 1)]` - the same list, in
the same order, however many processes computed it - so a caller that combines the results in
that order is as deterministic as a serial loop. Jobs are handed out one at a time from a shared
counter, in the order `first` gives (the longest first balances the processes best); this process
takes jobs too, and its forked children send their results back through a pipe.

Contracts:

* `KALG_WORKERS=1` (or a machine with one core) runs every job here, in order: no fork. So does
  a process with other threads (a library's, or a host application's): forking it can deadlock
  the child (a lock held by a thread that the child does not have).
* A job must be a pure function of its index (given what this process held when it forked):
  a child's result is then the result this process would compute.
* A job a child could not finish (an exception, a child killed or out of memory) is run again
  here after the others, serially, with this process's full memory: the result, or the error,
  is then the serial one.
* Memory: `KALG_MEMORY_MIB` caps each process's address space (a fork inherits the cap). While
  children run, this process and each child get an equal share of the headroom left under the
  cap, so together they stay within it; this process gets its own cap back afterwards.
* No child outlives `ordered_map`: each is joined, and killed first if it is still running
  (an exception here, or Ctrl-C); a child dies with this process if this one is killed.

Code generation uses it (`kalg.targets.scamp5.portfolio`, the large-kernel path), and so does the
e-graph's extraction (`kalg.targets.scamp5.optimize`: one ILP per op set). The e-graph's saturation
runs in its own child before, never at the same time.
"""

from __future__ import annotations

import contextlib
import multiprocessing as mp
import os
import resource
from collections.abc import Callable, Sequence

from kalg.diagnostics import KalgError
from kalg.resources import address_space, may_fork

WORKERS_ENV = "KALG_WORKERS"
MAX_WORKERS = 2
"""Processes at most (this one included): the portfolio's ladder has one or two heavy rungs."""


def workers() -> int:
    """How many processes `ordered_map` uses: `KALG_WORKERS` if set (a positive integer), else
    the cores this process may run on, at most `MAX_WORKERS`."""
    text = os.environ.get(WORKERS_ENV)
    if text is not None:
        if not text.strip().isdigit() or int(text) == 0:
            raise KalgError(f"{WORKERS_ENV} must be a positive number of processes, not {text!r}")
        return int(text)
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        cores = os.cpu_count() or 1
    return max(1, min(MAX_WORKERS, cores))


def ordered_map[T](job: Callable[[int], T], count: int, first: Sequence[int] | None = None,
                processes: int | None = None) -> list[T]:
    """`[job(i) for i in range(count)]`, computed by up to `processes` (default `workers()`)
    processes; `first` is the order jobs are handed out in (default 0, 1, ...)."""
    order = list(first) if first is not None else list(range(count))
    assert sorted(order) == list(range(count)), "first must be a permutation of the jobs"
    processes = min(processes or workers(), count)
    if processes <= 1 or not may_fork():  # a threaded process's child can deadlock
        return [job(i) for i in range(count)]
    ctx = mp.get_context("fork")
    counter = ctx.RawValue("i", 0)
    lock = ctx.Lock()
    results: dict[int, T] = {}
    children = []
    collected = False
    with _shared_memory(processes):
        try:
            for _ in range(processes - 1):
                receive, send = ctx.Pipe(duplex=False)
                child = ctx.Process(target=_child, args=(job, order, counter, lock, send,
                                                         receive), daemon=True)
                child.start()
                send.close()
                children.append((child, receive))
            for i in _take(order, counter, lock):
                # A job that fails here is run again below, with all the memory.
                with contextlib.suppress(Exception):
                    results[i] = job(i)
            for _, receive in children:
                _collect(receive, results)
            collected = True
        finally:
            # Left by an exception (a --timeout cut, whose alarm repeats, Ctrl-C): the
            # children's results are not wanted, and a wait here may itself be cut, so they
            # are killed first. (A child blocked sending its result to a parent that stopped
            # reading stayed blocked for good.)
            for child, receive in children:
                receive.close()
                if not collected and child.exitcode is None:
                    child.kill()
            for child, _ in children:
                child.join(5 if child.exitcode is None else None)
                if child.is_alive():
                    child.kill()
                    child.join()
    for i in sorted(set(range(count)) - set(results)):  # the jobs a child did not answer
        results[i] = job(i)
    return [results[i] for i in range(count)]


def _take(order: Sequence[int], counter, lock):
    """The next job's index, until none is left (shared by every process)."""
    while True:
        with lock:
            k = counter.value
            counter.value = k + 1
        if k >= len(order):
            return
        yield order[k]


def _child(job, order, counter, lock, send, receive) -> None:
    _die_with_parent()
    # The parent's end of the pipe, inherited at the fork: closed, so that a send to a parent
    # that has closed its end fails (BrokenPipeError) instead of waiting for a reader forever.
    receive.close()
    try:
        for i in _take(order, counter, lock):
            try:
                result = job(i)
            except Exception:  # the parent runs it again (and reports its error)
                continue
            send.send((i, result))
    except (KeyboardInterrupt, BrokenPipeError):  # Ctrl-C reaches the parent too, which
        pass                                       # stops; or the parent stopped reading
    finally:
        with contextlib.suppress(OSError):
            send.close()


def _die_with_parent() -> None:
    """Ask Linux to kill this child if the parent dies first (killed: no `finally` runs
    there), so that no search outlives the kalg that asked for it. Elsewhere, nothing."""
    try:
        import ctypes
        import signal

        ctypes.CDLL(None).prctl(1, signal.SIGKILL)  # 1: PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def _collect(receive, results: dict) -> None:
    """Every result a child sends, until it closes its end (done, or died)."""
    while True:
        try:
            i, result = receive.recv()
        except Exception:  # closed (EOF), or unreadable: its jobs run again here
            return
        results[i] = result


class _shared_memory:
    """Lower this process's address-space cap to its share of the headroom while children run
    (they inherit it at the fork), and restore it afterwards. Without a cap, nothing."""

    def __init__(self, processes: int):
        self.processes = processes
        self.saved: tuple[int, int] | None = None

    def __enter__(self):
        soft, hard = resource.getrlimit(resource.RLIMIT_AS)
        if soft == resource.RLIM_INFINITY:
            return self
        used = address_space()
        share = used + max(soft - used, 0) // self.processes
        if share < soft:
            self.saved = (soft, hard)
            resource.setrlimit(resource.RLIMIT_AS, (share, hard))
        return self

    def __exit__(self, *exc) -> None:
        if self.saved is not None:
            resource.setrlimit(resource.RLIMIT_AS, self.saved)
