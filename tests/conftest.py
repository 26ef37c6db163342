"""Shared pytest options, and the process settings the `kalg` command makes too."""

import os

# As `kalg.cli` does for the command: numpy's OpenBLAS starts no thread of its own, so
# `kalg.workers` may fork this process (it runs every job in-process while another thread
# exists), and the tests see the process layout a user's compile has.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
# The cpu's schedule search compiles and times several pipelines per kernel: the tests run the
# fixed schedule, and tests/targets/test_cpu_schedules.py turns the search on where it is tested.
os.environ.setdefault("KALG_CPU_SEARCH", "0")


def pytest_addoption(parser):
    parser.addoption("--regen-golden", action="store_true",
                     help="rewrite tests/golden/*.scamp5 from the compiler, then check them")
