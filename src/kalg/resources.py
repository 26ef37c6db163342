"""Where kalg's data lives: `grammar/` and `rules/` at the repository root in a development install,
`kalg/_data/` inside an installed wheel."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

_PACKAGE = Path(__file__).resolve().parent


def data_dir(name: str) -> Path:
    """The directory `name` ("grammar" or "rules"), wherever this install keeps it."""
    for candidate in (_PACKAGE / "_data" / name, _PACKAGE.parents[1] / name):
        if candidate.is_dir():
            return candidate
    raise FileNotFoundError(f"kalg's {name}/ directory is missing from this installation")


def grammar_path() -> Path:
    return data_dir("grammar") / "kalg.lark"


def rules_dir() -> Path:
    return data_dir("rules")


def bench_suite_path(name: str = "suite") -> Path:
    """A `kalg bench` suite shipped with kalg, bench/NAME.json (default: suite.json, the
    benchmark; "generality": kernels outside it). Its kernels are ../examples/..., which
    resolves both in a development checkout and in a wheel (kalg/_data/{bench,examples})."""
    return data_dir("bench") / f"{name}.json"


def examples_dir() -> Path:
    """The shipped example .kalg files (examples/ in a checkout, kalg/_data/examples in a wheel)."""
    return data_dir("examples")


PROCESS_MEMORY_MIB = 6144
"""Default address space kalg may add to what it has at start-up (KALG_MEMORY_MIB overrides)."""


def address_space() -> int:
    """This process's current virtual size in bytes (what a fork starts with)."""
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmSize:"):
                return int(line.split()[1]) * 1024
    return 0


def threads() -> int:
    """This process's threads (1 where /proc cannot say). Forking a process with more than
    one can deadlock the child (a lock another thread held at the fork is never released)."""
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("Threads:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 1


def may_fork() -> bool:
    """Whether this process may fork children through multiprocessing: one thread (`threads`)
    and not a daemon (multiprocessing refuses children to a daemonic process, such as a
    worker of a `multiprocessing` pool or of a Dask cluster: `kalg.compile` there ended in
    "daemonic processes are not allowed to have children")."""
    import multiprocessing

    return threads() <= 1 and not multiprocessing.current_process().daemon


def cap_address_space(extra_mib: int, lower_only: bool = False) -> None:
    """Set this process's soft address-space limit to its current size plus `extra_mib`, within
    the hard limit; with `lower_only`, never raise a limit the user already set lower."""
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    want = address_space() + extra_mib * 1024 * 1024
    if hard != resource.RLIM_INFINITY:
        want = min(want, hard)
    if lower_only and soft != resource.RLIM_INFINITY and soft <= want:
        return
    resource.setrlimit(resource.RLIMIT_AS, (want, hard))


_EXITS_AT_ONCE = False


def exit_at_once() -> None:
    """Declare that this process ends with `os._exit` once its command is done (`kalg.cli.run`,
    the `kalg` command): the system then takes all its memory back at once, so a cache may be
    left to that end rather than freed object by object (`codegen.memo.Memo.release`)."""
    global _EXITS_AT_ONCE
    _EXITS_AT_ONCE = True


_MANY_COMPILES = False


@contextmanager
def many_compiles() -> Iterator[None]:
    """Within the block this process runs many compiles (`kalg bench`): a cache left to the
    exit (`exit_at_once`) would only be garbage for the compiles after it, held to the end (it
    grew to `codegen.memo.LEAVE_UNDER_MIB`, 512 MiB, and took that much from every later
    compile's KALG_MEMORY_MIB headroom), so each compile frees its caches when it ends, as an
    in-process caller does: the process holds one compile's memory at a time."""
    global _MANY_COMPILES
    was, _MANY_COMPILES = _MANY_COMPILES, True
    try:
        yield
    finally:
        _MANY_COMPILES = was


def exits_at_once() -> bool:
    """Whether `exit_at_once` was declared (never in an in-process caller: tests, an API),
    and this process compiles once (`many_compiles` was not declared)."""
    return _EXITS_AT_ONCE and not _MANY_COMPILES


def resident_mib() -> float | None:
    """This process's resident memory in MiB (None where /proc cannot say)."""
    import os

    try:
        with open("/proc/self/statm") as statm:
            return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20
    except (OSError, ValueError, IndexError):
        return None


def limit_memory() -> None:
    """Cap kalg's own address space at start-up plus KALG_MEMORY_MIB, so that a blow-up in any
    stage becomes a MemoryError and a clear message, never a machine that swaps or an
    OOM-killed neighbour. A malformed KALG_MEMORY_MIB is a KalgError."""
    import os

    from kalg.diagnostics import KalgError

    text = os.environ.get("KALG_MEMORY_MIB", str(PROCESS_MEMORY_MIB))
    if not text.isdigit() or int(text) == 0:
        raise KalgError(f"KALG_MEMORY_MIB must be a positive number of MiB, not {text!r}")
    cap_address_space(int(text), lower_only=True)


@contextmanager
def collector_paused() -> Iterator[None]:
    """Python's cycle collector off for the block (back on after, if it was on), where the
    block allocates many objects that are not garbage:

    * code generation (`codegen.collector_paused`): millions of small tuples that live as long
      as a `Memo`, and each full collection walks all of them (a third of the code
      generator's time). What the block drops is freed by reference counting, the memos' own
      cycles by `Memo.release`;
    * importing the compiler (`kalg optimize`): modules, classes and functions, walked by
      about 30 collections (10 ms, a hundredth of a median compile)."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()
