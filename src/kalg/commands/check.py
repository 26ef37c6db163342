"""`kalg check FILE`: parse and evaluate a .kalg file and print its exact kernels.

The printout is valid .kalg: every kernel and filter as a north-up matrix with exact
coefficients, the semiring where it is not real, and a comment for every approximation made.
"""

from __future__ import annotations

import argparse
import json

DESCRIPTION = """\
Parse FILE, evaluate every kernel and filter exactly, and print them as north-up matrices
(row 1 is north, columns run west to east, '.' marks no entry). A real kernel whose
coefficients share a power-of-two denominator is shown as integers over it, e.g.
'[ 1 2 1 ... ] / 16'. Approximated kernels get a comment with the depth and the largest
coefficient error. The output is itself valid .kalg. Errors are reported as
FILE:LINE:COL with the source line and a caret, and exit with status 1. With --json, one JSON
object (docs/json.md): "kernels" maps each definition to its kind, semiring, outputs (rows of
exact coefficients as strings) and approximation."""


def add_parser(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    parser = sub.add_parser(
        "check", help="check a .kalg file and print its kernels exactly",
        description=DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("file", metavar="FILE", help="the .kalg file to check")
    parser.add_argument("--name", metavar="NAME",
                        help="print only the kernel or filter called NAME (default: all of them "
                             "and the target)")
    parser.add_argument("--json", action="store_true",
                        help="print one JSON object (docs/json.md) instead of the kernels")
    return parser


def run(args: argparse.Namespace) -> int:
    from kalg.frontend import load_file
    from kalg.frontend.report import format_module

    module = load_file(args.file)
    text = format_module(module, args.name)
    if args.json:
        from kalg.jsonout import base

        chosen = [module.definition(args.name)] if args.name else module.definitions.values()
        t = module.target
        text = json.dumps(base("check", file=args.file, output=text,
                               target={"name": t.name, "registers": list(t.registers),
                                       "input": t.input, "ops": t.ops,
                                       **({"inputs": list(t.inputs)} if t.inputs else {})},
                               kernels={d.name: _definition(d) for d in chosen}), indent=1) + "\n"
    print(text, end="")
    return 0


def _definition(d) -> dict:
    return {"kind": d.kind, "semiring": d.semiring.name,
            "outputs": {r: [[None if c is None else str(c) for c in row]
                            for row in k.to_rows()] for r, k in sorted(d.outputs.items())},
            "approximation": {r: {"depth": d.approx_depth[r],
                                  "max_error": str(d.approx_error.get(r, 0))} | a.as_dict()
                              for r, a in d.approximation().items()}}
