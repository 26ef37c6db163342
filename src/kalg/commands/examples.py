"""`kalg examples [NAME ...] [--out DIR]`: list the shipped example .kalg files, or write them.

The examples are `examples/*.kalg` in a checkout and `kalg/_data/examples` in a wheel, so they
are reachable after a plain `pip install kalg`.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from kalg.diagnostics import KalgError, UsageError
from kalg.resources import examples_dir

DESCRIPTION = """\
Without --out: list the example .kalg files shipped with kalg (name and first comment line).
With --out DIR: copy them (or the NAMEs given) into DIR, e.g. to try
  kalg examples --out ex && kalg optimize ex/gauss3.kalg"""


def add_parser(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    p = sub.add_parser("examples", help="list or write the example .kalg files shipped with kalg",
                       description=DESCRIPTION,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("names", nargs="*", metavar="NAME", help="examples to write (default: all)")
    p.add_argument("--out", metavar="DIR", type=Path, default=None,
                   help="write the examples into DIR (created if missing)")
    return p


def shipped() -> dict[str, Path]:
    """Every shipped example, name (file stem) → path, sorted by name."""
    return {p.stem: p for p in sorted(examples_dir().glob("*.kalg"))}


def run(args: argparse.Namespace) -> int:
    examples = shipped()
    unknown = [n for n in args.names if n.removesuffix(".kalg") not in examples]
    if unknown:
        raise UsageError(f"unknown example(s) {', '.join(unknown)}; kalg ships "
                         f"{', '.join(examples)}")
    chosen = {n: examples[n] for n in (a.removesuffix(".kalg") for a in args.names)} or examples
    if args.out is None:
        for name, path in chosen.items():
            print(f"{name:16} {_summary(path)}")
        return 0
    try:
        args.out.mkdir(parents=True, exist_ok=True)
        for name, path in chosen.items():
            (args.out / f"{name}.kalg").write_text(path.read_text(encoding="utf-8"),
                                                   encoding="utf-8")
    except OSError as err:
        raise KalgError(f"cannot write the examples to '{args.out}': {err.strerror}") from None
    print(f"wrote {len(chosen)} example(s) to {args.out}", file=sys.stderr)
    return 0


def _summary(path: Path) -> str:
    """The first comment line of the file, without its '#' and the file's own name."""
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("#"):
            return line.lstrip("# ").strip().removeprefix(f"{path.name}:").strip()
    return ""
