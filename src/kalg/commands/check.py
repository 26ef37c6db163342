"""`kalg check FILE`: parse and evaluate a .kalg file and print its exact kernels.

The printout is valid .kalg: every kernel and filter as a north-up matrix with exact
coefficients, the semiring where it is not real, and a comment for every approximation made.
"""

from __future__ import annotations

import argparse

from kalg.frontend import load_file
from kalg.frontend.report import format_module

DESCRIPTION = """\
Parse FILE, evaluate every kernel and filter exactly, and print them as north-up matrices
(row 1 is north, columns run west to east, '.' marks no entry). A real kernel whose
coefficients share a power-of-two denominator is shown as integers over it, e.g.
'[ 1 2 1 ... ] / 16'. Approximated kernels get a comment with the depth and the largest
coefficient error. The output is itself valid .kalg. Errors are reported as
FILE:LINE:COL with the source line and a caret, and exit with status 1."""


def add_parser(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    parser = sub.add_parser(
        "check", help="check a .kalg file and print its kernels exactly",
        description=DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("file", metavar="FILE", help="the .kalg file to check")
    parser.add_argument("--name", metavar="NAME",
                        help="print only the kernel or filter called NAME (default: all of them "
                             "and the target)")
    return parser


def run(args: argparse.Namespace) -> int:
    module = load_file(args.file)
    print(format_module(module, args.name), end="")
    return 0
