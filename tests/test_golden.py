"""Golden programs: `kalg optimize` output for every benchmark kernel, checked in byte for byte.

A change in the optimizer or code generator that changes a program shows up here as a diff to
review. After an intended change, rewrite them with `pytest tests/test_golden.py --regen-golden`
(each rewritten file is checked like any other). Every golden file is also verified on its own,
exactly, against the kernel its header names - so a checked-in program is never wrong, whatever
produced it.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kalg.frontend import load_file
from kalg.targets.scamp5.machine.symbolic import verify_exact
from kalg.targets.scamp5.machine.text import parse_program
from kalg.targets.scamp5.pipeline import Settings, compile_file

ROOT = Path(__file__).resolve().parents[1]
GOLDEN = ROOT / "tests" / "golden"
NAMES = [k["name"] for k in json.loads((ROOT / "tests/data/cain/kernels.json").read_text())[
    "kernels"]]
CASES = [(name, ops) for name in NAMES for ops in ("all", "basic")]


def golden_path(name: str, ops: str) -> Path:
    return GOLDEN / f"{name}.{ops}.scamp5"


@pytest.mark.parametrize(("name", "ops"), CASES)
def test_program_matches_golden_file(request, name, ops):
    text = compile_file(ROOT / "examples" / f"{name}.kalg", Settings(ops=ops)).text
    path = golden_path(name, ops)
    if request.config.getoption("--regen-golden"):
        path.parent.mkdir(exist_ok=True)
        path.write_text(text)
    assert path.is_file(), f"no golden file {path.name}: run pytest with --regen-golden"
    assert text == path.read_text(), f"{path.name} changed: review, then --regen-golden"


@pytest.mark.parametrize(("name", "ops"), CASES)
def test_golden_file_is_a_correct_program(name, ops):
    path = golden_path(name, ops)
    assert path.is_file(), f"no golden file {path.name}: run pytest with --regen-golden"
    program = parse_program(path.read_text(), str(path), op_set=ops)
    module = load_file(ROOT / "examples" / f"{name}.kalg")
    verify_exact(program, module.definition().outputs, module.target.input)
    assert {r for i in program for r in i.registers()} <= set(module.target.registers)
