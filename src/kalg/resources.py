"""Where kalg's data lives: `grammar/` and `rules/` at the repository root in a development install,
`kalg/_data/` inside an installed wheel."""

from __future__ import annotations

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


def bench_suite_path() -> Path:
    """The default `kalg bench` suite, bench/suite.json. Its kernels are ../examples/*.kalg,
    which resolves both in a development checkout and in a wheel (kalg/_data/{bench,examples})."""
    return data_dir("bench") / "suite.json"
