"""Shared data for the SCAMP-5 tests: Cain's programs and the benchmark kernels they compute.

`tests/data/cain/` holds copies of ../shared/bench/programs/cain/*.scamp5 (written by the Cain
compiler, so an independent check of kalg's parser and simulators) and of kernels.json, whose
kernel values are `rows / 2**log2_divisor`. A test that takes a `cain_program` argument runs
once per program file; `cain_targets` and `cain_ops` are that program's kernels and op set.
"""

from __future__ import annotations

import json
from fractions import Fraction
from functools import cache
from pathlib import Path

import pytest

from kalg.algebra.kernel import Kernel

CAIN_DIR = Path(__file__).resolve().parents[1] / "data" / "cain"
CAIN_PROGRAMS = sorted(CAIN_DIR.glob("*.scamp5"))


@cache
def load_bench_kernels() -> dict[str, dict[str, Kernel]]:
    """kernels.json as kernel name → output register → exact kernel."""
    data = json.loads((CAIN_DIR / "kernels.json").read_text(encoding="utf-8"))
    return {entry["name"]: {reg: Kernel.from_rows(out["rows"])
                            .scale(Fraction(1, 2 ** out["log2_divisor"]))
                            for reg, out in entry["outputs"].items()}
            for entry in data["kernels"]}


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "cain_program" in metafunc.fixturenames:
        metafunc.parametrize("cain_program", CAIN_PROGRAMS, ids=[p.stem for p in CAIN_PROGRAMS])


@pytest.fixture
def cain_dir() -> Path:
    return CAIN_DIR


@pytest.fixture
def bench_kernels() -> dict[str, dict[str, Kernel]]:
    return load_bench_kernels()


@pytest.fixture
def cain_targets(cain_program: Path) -> dict[str, Kernel]:
    """The kernels the program must leave in its output registers (`gauss3.basic` → gauss3)."""
    return load_bench_kernels()[cain_program.name.split(".")[0]]


@pytest.fixture
def cain_ops(cain_program: Path) -> str:
    """Cain's file names say `.basic` for the basic op set; the others may use every macro."""
    return "basic" if ".basic." in cain_program.name else "all"
