"""Saturation runs in a child process; a process with other threads is never forked for it."""

from __future__ import annotations

import threading
import warnings

from kalg.eqsat import engine
from kalg.eqsat.optimize import FAMILIES, LOWERING, lowering_facts
from kalg.eqsat.terms import evaluate

FORM = "(KAdd (KAdd (Sh 0 0) (Sh 1 0)) (KAdd (Sh 2 0) (Sh 3 0)))"


def _saturated():
    facts = lowering_facts({"A": [FORM]}, {"A": evaluate(FORM, {})})
    return engine.saturate(FAMILIES, facts, LOWERING, engine.Limits())


def test_saturation_in_a_threaded_process_forks_no_thread_and_finds_the_same_graph():
    # Regression: the test suite printed hundreds of "This process is multi-threaded, use of
    # fork() may lead to deadlocks in the child" warnings: saturation forked the process after
    # Halide (or any host application) had started threads. Its child now comes from a fork
    # server there, and saturates exactly as a forked child does.
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
