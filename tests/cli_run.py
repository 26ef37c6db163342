"""Run the kalg command line in-process, as the tests of its commands do."""

from __future__ import annotations

from pathlib import Path

from kalg.cli import main


def run(capsys, *argv: str | Path) -> tuple[int, str, str]:
    """`kalg ARGV...` through `kalg.cli.main`: the exit code and what it printed to stdout and
    stderr (read from pytest's `capsys`)."""
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err
