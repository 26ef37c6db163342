"""kalg's command line: `kalg SUBCOMMAND ...`.

Each subcommand lives in `kalg.commands.NAME` with `add_parser(subparsers)` and `run(args) -> int`.
This module owns the exit-code contract: 0 ok, 1 user error (a rendered diagnostic on stderr,
never a traceback), 2 usage error (argparse), 3 a program failed verification (a kalg bug).
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

from kalg import __version__
from kalg.diagnostics import KalgError
from kalg.resources import PROCESS_MEMORY_MIB, limit_memory

SUBCOMMANDS = ("check", "optimize", "simulate", "bench", "run")


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
        return err.exit_code
    except MemoryError:
        print("kalg: error: out of memory (the limit is KALG_MEMORY_MIB, default "
              f"{PROCESS_MEMORY_MIB} MiB): the kernel is too large for this search; lower "
              "--node-limit, or approximate or split the kernel", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("kalg: interrupted", file=sys.stderr)
        return 130
