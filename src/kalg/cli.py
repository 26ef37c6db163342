"""kalg's command line: `kalg SUBCOMMAND ...`.

Each subcommand lives in `kalg.commands.NAME` with `add_parser(subparsers)` and `run(args) -> int`.
This module owns the exit-code contract: 0 ok, 1 user error (a rendered diagnostic on stderr,
never a traceback), 2 usage error (argparse, or `UsageError`), 3 a program kalg itself produced
failed verification (a kalg bug). A closed stdout (`kalg ... | head`) ends quietly with 141, as a
shell reports SIGPIPE. `--json` output (see docs/json.md) reports errors as JSON on stdout too.

Startup stays fast (`kalg --version` well under 0.3 s): the command modules import only argparse
and light constants at module level; numpy, python-flint, highspy, egglog and lark load inside
`run`.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import importlib
import json
import os
import sys
from collections.abc import Sequence

from kalg import __version__
from kalg.diagnostics import KalgError
from kalg.resources import PROCESS_MEMORY_MIB, exit_at_once, limit_memory

# numpy's OpenBLAS starts a thread for each further core when it is imported. kalg's arrays are
# far too small for threaded BLAS, and a second thread makes `kalg.workers` run every job in this
# process (forking a threaded process can deadlock): the large-kernel path, which forks no
# e-graph child first (OpenBLAS stops its threads at a fork), ran its searches serially.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

SUBCOMMANDS = ("check", "optimize", "simulate", "bench", "run", "examples", "batch")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="kalg",
        description="Compile convolution kernels written in the kernel algebra (.kalg) into short, "
                    "verified SCAMP-5 programs.",
        epilog="Run 'kalg SUBCOMMAND --help' for the options of each subcommand.",
    )
    parser.add_argument("--version", action="version", version=f"kalg {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="SUBCOMMAND", required=True)
    for name in SUBCOMMANDS:
        module = importlib.import_module(f"kalg.commands.{name}")
        module.add_parser(sub).set_defaults(_run=module.run)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run kalg with `argv` (default: sys.argv[1:]) and return the process exit code."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse exits 2 on usage errors and 0 on --help
        return int(exc.code or 0)
    try:
        limit_memory()
        return int(args._run(args))
    except KalgError as err:
        print(err.render(), file=sys.stderr)
        _json_error(args, err.message, err.exit_code, err)
        return err.exit_code
    except MemoryError:
        pass  # reported below, once the exception and the frames it holds are gone
    except BrokenPipeError:
        return _broken_pipe()
    except KeyboardInterrupt:
        print("kalg: interrupted", file=sys.stderr)
        return 130
    return _out_of_memory(args)


def _out_of_memory(args: argparse.Namespace) -> int:
    """Report a MemoryError. Called after the `except` block: inside it, the exception's
    traceback kept every frame of the failed work alive, so the report itself (a lazy import
    for --json) could run out of memory and end in a traceback."""
    gc.collect()
    remedy = ("the kernel is too large for this search; lower --node-limit, or approximate "
              "or split the kernel" if args.command in ("optimize", "bench") else
              "the kernel or the image is too large; use a smaller one")
    message = ("out of memory (the limit is KALG_MEMORY_MIB, default "
               f"{PROCESS_MEMORY_MIB} MiB): {remedy}")
    print(f"kalg: error: {message}", file=sys.stderr)
    _json_error(args, message, 1)
    return 1


def run() -> None:
    """The `kalg` command and `python -m kalg`: `main()`, then the process ends at once with its
    exit code, its output flushed. The interpreter's usual shutdown frees every object a compile
    made one by one (code generation's search states and memos): 0.05-0.1 s of a 1.5 s compile
    on an idle machine, several tenths under load, for nothing. Every file kalg writes is closed
    and every child process joined before `main` returns, so nothing is lost. In-process callers
    (the tests, an application) call `main` and keep their interpreter; so does a run under a
    profiler, tracer or coverage tool, which writes its results at the usual exit."""
    exit_at_once()  # caches may be left to the exit below (`codegen.memo`)
    code = main()
    if _watched():
        sys.exit(code)
    try:
        sys.stdout.flush()
    except BrokenPipeError:
        code = _broken_pipe()
    except (OSError, ValueError):
        pass
    with contextlib.suppress(OSError, ValueError):
        sys.stderr.flush()
    os._exit(code)


def _watched() -> bool:
    """Whether a tracer, profiler or monitoring tool (cProfile, coverage, a debugger) is on."""
    if sys.gettrace() is not None or sys.getprofile() is not None:
        return True
    monitoring = getattr(sys, "monitoring", None)
    return monitoring is not None and any(monitoring.get_tool(tool) is not None
                                          for tool in range(6))


def _json_error(args: argparse.Namespace, message: str, code: int,
                err: KalgError | None = None) -> None:
    """With --json, the error also goes to stdout as the documented JSON object."""
    if not getattr(args, "json", False):
        return
    from kalg.jsonout import error_object

    try:
        print(json.dumps(error_object(args.command, message, code, err), indent=1))
    except BrokenPipeError:
        _broken_pipe()


def _broken_pipe() -> int:
    """stdout's reader went away (`| head`): stop without a traceback, and point stdout at
    /dev/null so the interpreter's final flush cannot raise again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass
    return 141
