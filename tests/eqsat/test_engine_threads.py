"""Saturation runs in a child process; a process with other threads is never forked for it."""

from __future__ import annotations

import subprocess
import sys
import threading
import warnings

from kalg.eqsat import engine
from kalg.eqsat.terms import evaluate
from kalg.targets.scamp5.optimize import FAMILIES, LOWERING, lowering_facts

FORM = "(KAdd (KAdd (Sh 0 0) (Sh 1 0)) (KAdd (Sh 2 0) (Sh 3 0)))"


def _saturated():
    facts = lowering_facts({"A": [FORM]}, {"A": evaluate(FORM, {})})
    return engine.saturate(FAMILIES, facts, LOWERING, engine.Limits())


def test_saturation_in_a_threaded_process_forks_no_thread_and_finds_the_same_graph():
    # Regression: the test suite printed hundreds of "This process is multi-threaded, use of
    # fork() may lead to deadlocks in the child" warnings: saturation forked the process after
    # Halide (or any host application) had started threads. Its child is now a fresh
    # interpreter there, and saturates exactly as a forked child does.
    alone, _ = _saturated()
    stop = threading.Event()
    other = threading.Thread(target=stop.wait, daemon=True)
    other.start()
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            threaded, _ = _saturated()
    finally:
        stop.set()
        other.join()
    assert not [w for w in caught if "fork()" in str(w.message)]
    assert threaded == alone


SCRIPT = """
import threading
import kalg
threading.Thread(target=threading.Event().wait, daemon=True).start()
print(kalg.compile([[1, 2, 1], [2, 4, 2], [1, 2, 1]], divisor=16).instructions)
"""


def test_a_script_without_a_main_guard_compiles_in_a_threaded_process(tmp_path):
    # Regression: with other threads running (numpy's OpenBLAS started by an earlier import,
    # any host thread), saturation's child came from a fork server, which runs the caller's
    # main module again: a script without `if __name__ == "__main__"` failed with
    # multiprocessing's "bootstrapping phase" error.
    script = tmp_path / "user_script.py"
    script.write_text(SCRIPT)
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                          timeout=300, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["8"]
