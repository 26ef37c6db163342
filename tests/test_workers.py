"""The second core (`kalg.workers`): code generation's rungs on two processes give the program a
serial search gives, byte for byte; `KALG_WORKERS=1` forces one process; no child outlives the
call; a job a child cannot finish is run again in the parent."""

from __future__ import annotations

import json
import multiprocessing as mp
import os
import subprocess
import sys

import pytest

from kalg import workers
from kalg.diagnostics import KalgError
from kalg.targets.scamp5 import pipeline

GAUSS3 = """kernel g = [ 1 2 1
                 2 4 2
                 1 2 1 ] / 16
"""


def _square(i: int) -> tuple[int, int]:
    return i, i * i


def test_results_come_back_in_job_order_whatever_order_they_are_handed_out_in():
    order = [5, 0, 3, 1, 4, 2]
    assert workers.ordered_map(_square, 6, order, processes=2) == [_square(i) for i in range(6)]
    assert mp.active_children() == []  # every child joined: no zombie left behind


def test_a_job_that_fails_in_the_child_is_run_again_in_the_parent():
    parent = os.getpid()

    def job(i: int) -> int:
        if os.getpid() != parent:
            raise MemoryError("child out of memory")
        return i + 1

    assert workers.ordered_map(job, 4, processes=2) == [1, 2, 3, 4]
    assert mp.active_children() == []


def test_an_error_of_a_job_is_raised_as_a_serial_run_raises_it():
    def job(i: int) -> int:
        if i == 2:
            raise ValueError("job 2 is wrong")
        return i

    with pytest.raises(ValueError, match="job 2"):
        workers.ordered_map(job, 4, processes=2)
    assert mp.active_children() == []


def test_kalg_workers_forces_the_number_of_processes(monkeypatch):
    monkeypatch.setenv("KALG_WORKERS", "1")
    assert workers.workers() == 1
    monkeypatch.setenv("KALG_WORKERS", "3")
    assert workers.workers() == 3
    monkeypatch.delenv("KALG_WORKERS")
    assert 1 <= workers.workers() <= workers.MAX_WORKERS


@pytest.mark.parametrize("text", ["0", "two", "-1", ""])
def test_a_malformed_kalg_workers_is_a_clear_error(monkeypatch, text):
    monkeypatch.setenv("KALG_WORKERS", text)
    with pytest.raises(KalgError, match="KALG_WORKERS must be a positive number"):
        workers.workers()


def test_two_processes_give_the_serial_program_byte_for_byte(monkeypatch):
    texts = {}
    for count in ("1", "2"):
        monkeypatch.setenv("KALG_WORKERS", count)
        texts[count] = pipeline.compile_text(GAUSS3, "g.kalg").text
    assert texts["1"] == texts["2"]
    assert mp.active_children() == []


_EXTRACTIONS = """
import json, os, sys
from kalg.targets.scamp5 import optimize as opt
from kalg.frontend import check, parse

outputs = check(parse(sys.argv[1], "g.kalg")).definition(None).outputs
solved, extract = sys.argv[2], opt._extract

def logged(*args):
    with open(solved, "a") as log:
        log.write(f"{os.getpid()}\\n")
    return extract(*args)

opt._extract = logged
result = opt.optimize(outputs, opt.Options(also=("basic",)))
pids = set(open(solved).read().split())
print(json.dumps([str(result.decomposition), str(result.extra["basic"]), result.optimal,
                  len(pids)]))
"""


def test_the_extractions_of_both_op_sets_on_two_processes_are_the_serial_ones(tmp_path):
    """Op set all also extracts the lowering e-graph under basic costs: two independent ILPs,
    solved on two processes. Each must be the serial solve's choice (the decompositions, and so
    the programs, byte for byte), and both processes must really have solved one. Each run is a
    fresh process, as a user's compile is: the test process may hold other libraries' threads
    (Halide's), and `workers` never forks a threaded process."""
    found = {}
    for count in ("1", "2"):
        solved = tmp_path / f"pids{count}"
        solved.write_text("")
        env = {**os.environ, "KALG_WORKERS": count, "OPENBLAS_NUM_THREADS": "1"}
        run = subprocess.run([sys.executable, "-c", _EXTRACTIONS, GAUSS3, str(solved)],
                             capture_output=True, text=True, env=env, check=True)
        found[count] = json.loads(run.stdout)
    assert found["1"][:3] == found["2"][:3]
    assert (found["1"][3], found["2"][3]) == (1, 2)


class _Cut(BaseException):
    """Stands for --timeout's cut (`settings.TimeoutCut`), raised by a repeating alarm."""


def test_a_search_cut_while_its_child_sends_a_result_leaves_no_child_behind():
    # Issue 27's fuzz campaign found forked searches left blocked for good, each holding its
    # memory: --timeout's alarm (which repeats until the cut takes) cut `ordered_map` while its
    # child was sending a result larger than a pipe holds, and cut again the wait for the
    # child in the cleanup, so the child was never killed; and the child, holding the
    # parent's end of its own pipe, waited for a reader forever.
    import signal
    import time

    parent = os.getpid()

    def job(i: int) -> bytes:
        if os.getpid() == parent:
            time.sleep(0.5)  # the child is blocked in its send by now
            raise _Cut
        return b"x" * 1_000_000  # more than a pipe holds: the send waits for the reader

    def cut(signum, frame):
        raise _Cut

    old = signal.signal(signal.SIGALRM, cut)
    signal.setitimer(signal.ITIMER_REAL, 0.6, 0.02)  # repeats, as the cut's alarm does
    try:
        with pytest.raises(_Cut):
            workers.ordered_map(job, 2, processes=2)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)
    deadline = time.monotonic() + 5
    while mp.active_children() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert mp.active_children() == []
