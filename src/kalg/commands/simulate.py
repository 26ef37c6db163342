"""`kalg simulate` (not implemented yet)."""

from __future__ import annotations

import argparse

from kalg.diagnostics import KalgError


def add_parser(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    return sub.add_parser("simulate", help="(not implemented yet)")


def run(args: argparse.Namespace) -> int:
    raise KalgError("'kalg simulate' is not implemented yet")
