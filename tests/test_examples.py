"""Every example in examples/ checks, and the benchmark examples mean exactly bench/kernels.json.

kernels.json lives in the shared reference folder beside the repository (../shared/bench).
"""

import json
from fractions import Fraction
from pathlib import Path

import pytest

from kalg.algebra.kernel import MINPLUS, Kernel
from kalg.cli import main
from kalg.frontend import load_file, load_text
from kalg.frontend.report import format_module

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = sorted((ROOT / "examples").glob("*.kalg"))
BENCH = ROOT.parent / "shared" / "bench" / "kernels.json"


def _bench() -> list[dict]:
    if not BENCH.is_file():
        pytest.skip(f"{BENCH} is not beside the repository")
    return json.loads(BENCH.read_text())["kernels"]


def _bench_names() -> list[str]:
    return [k["name"] for k in json.loads(BENCH.read_text())["kernels"]] if BENCH.is_file() else []


def _expected(output: dict) -> Kernel:
    return Kernel.from_rows(output["rows"]).scale(Fraction(1, 2 ** output["log2_divisor"]))


def test_there_is_an_example_for_every_benchmark_kernel():
    names = {path.stem for path in EXAMPLES}
    missing = [k["name"] for k in _bench() if k["name"] not in names]
    assert missing == []


@pytest.mark.parametrize("name", _bench_names())
def test_benchmark_example_is_exactly_the_benchmark_kernel(name):
    (entry,) = [k for k in _bench() if k["name"] == name]
    module = load_file(ROOT / "examples" / f"{name}.kalg")
    definition = module.definition()
    assert definition.name == name
    assert list(definition.outputs) == list(entry["outputs"])
    for register, output in entry["outputs"].items():
        assert definition.outputs[register] == _expected(output), register
    assert definition.approx_error == {}
    assert module.target.input == "A"


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_example_checks_and_its_last_definition_is_named_after_the_file(path, capsys):
    assert load_file(path).definition().name == path.stem
    assert main(["check", str(path)]) == 0
    out, err = capsys.readouterr()
    assert err == ""
    assert f"{load_file(path).definition().kind} {path.stem} = " in out


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_check_output_loads_back_to_the_same_values(path):
    module = load_file(path)
    reloaded = load_text(format_module(module), "printed.kalg")
    assert reloaded.target == module.target
    assert list(reloaded.definitions) == list(module.definitions)
    for name, definition in module.definitions.items():
        assert reloaded.definitions[name].outputs == definition.outputs
        assert reloaded.definitions[name].semiring is definition.semiring


def test_algebraic_gauss_example():
    module = load_file(ROOT / "examples" / "gauss_algebra.kalg")
    gauss3 = Kernel.from_rows([[1, 2, 1], [2, 4, 2], [1, 2, 1]]).scale(Fraction(1, 16))
    assert module.definitions["gauss3"].outputs["A"] == gauss3
    assert module.definitions["smooth"].outputs["A"] == gauss3
    gauss5 = _expected(next(k for k in _bench() if k["name"] == "gauss5")["outputs"]["A"])
    assert module.definitions["gauss5"].outputs["A"] == gauss5
    assert module.definition().outputs == {"A": gauss5 - gauss3, "B": gauss3}


def test_min_plus_example_gives_chamfer_distances():
    chamfer = load_file(ROOT / "examples" / "chamfer.kalg").definition()
    assert chamfer.semiring is MINPLUS
    assert chamfer.outputs["A"].to_rows() == [[4, 3, 2, 3, 4],
                                              [3, 2, 1, 2, 3],
                                              [2, 1, 0, 1, 2],
                                              [3, 2, 1, 2, 3],
                                              [4, 3, 2, 3, 4]]


def test_approximation_example_reports_its_error():
    mean3 = load_file(ROOT / "examples" / "mean3.kalg").definition()
    assert mean3.exact["A"] == Kernel.from_rows([[1] * 3] * 3).scale(Fraction(1, 9))
    assert mean3.approx_depth == {"A": 6}
    assert mean3.approx_error == {"A": Fraction(1, 9) - Fraction(7, 64)}
    assert mean3.outputs["A"] == Kernel.from_rows([[7] * 3] * 3).scale(Fraction(1, 64))
