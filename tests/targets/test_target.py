"""A target is a plug-in of one shape; the cpu target loads Halide only when a pipeline is built."""

import subprocess
import sys

from kalg import targets


def test_cpu_is_a_target_plug_in():
    cpu = targets.get("cpu")
    assert isinstance(cpu, targets.Target) and cpu.name == "cpu"
    assert cpu.runner is not None and cpu.cost() is not None


def test_checking_and_optimizing_never_import_halide():
    code = ("import sys; from kalg.cli import main; "
            "main(['optimize', 'examples/box7.kalg', '--target', 'cpu']); "
            "assert 'halide' not in sys.modules, 'halide imported'")
    subprocess.run([sys.executable, "-c", code], check=True, capture_output=True)


# ----------------------------------------------------------------------------- one shape
from fractions import Fraction  # noqa: E402

import numpy as np  # noqa: E402
import pytest  # noqa: E402

from kalg.algebra.kernel import Kernel  # noqa: E402
from kalg.cli import main  # noqa: E402
from kalg.diagnostics import UsageError, VerificationError  # noqa: E402
from kalg.eqsat.extract import ENode  # noqa: E402
from kalg.stages import Stage  # noqa: E402
from kalg.targets.scamp5.pipeline import Result  # noqa: E402

BINOMIAL = {"A": Kernel.from_rows([[1, 2, 1]]).scale(Fraction(1, 4))}


@pytest.mark.parametrize("name", ["scamp5", "scamp5_wide", "cpu", "cuda"])
def test_every_target_is_a_plug_in_of_the_same_shape(name):
    target = targets.get(name)
    assert isinstance(target, targets.Target) and target.name == name
    assert isinstance(target.emit, Stage)
    add = ENode("n1", "Add", "c1", ("c2", "c3"), ())
    shift = ENode("n2", "Shift", "c4", ("c2",), (3, 0))
    assert target.cost()(add) == pytest.approx(1, abs=0.01)  # one instruction / one operation
    # the target's own model: a move is bus steps on SCAMP-5, free addressing on a cpu
    assert (target.cost()(shift) == 0) == (name in ("cpu", "cuda"))


def test_scamp5_target_lowers_verifies_and_runs_a_program():
    scamp5 = targets.get("scamp5")
    program = scamp5.lower(BINOMIAL)
    assert program and "exact" in scamp5.verify(program, BINOMIAL)
    image = np.random.default_rng(1).uniform(-1, 1, (12, 12))
    got = scamp5.runner(program)(image)["A"]
    assert np.allclose(got[:, 2:-2], BINOMIAL["A"].apply(image)[:, 2:-2])
    wrong = {"A": Kernel.from_rows([[1, 2, 1]]).scale(Fraction(1, 2))}
    with pytest.raises(VerificationError):
        scamp5.verify(program, wrong)


def _spy(monkeypatch, name, method):
    """Make the plug-in `name`'s `method` record its calls and answer a marker text."""
    target, calls = targets.get(name), []

    def spy(text, path, settings, **kw):
        calls.append(settings)
        if method == "optimize":
            return Result(settings.emit, f"from {name}\n")
        return "compiled by " + name

    monkeypatch.setattr(target, method, spy)
    return calls


@pytest.mark.parametrize(("argv", "name"), [
    ([], "scamp5"), (["--target", "scamp5_wide"], "scamp5_wide"), (["--target", "cpu"], "cpu")])
def test_optimize_command_compiles_through_the_target_registry(monkeypatch, capsys, argv, name):
    calls = _spy(monkeypatch, name, "optimize")
    assert main(["optimize", "examples/gauss3.kalg", *argv]) == 0
    assert capsys.readouterr().out == f"from {name}\n" and len(calls) == 1
    assert calls[0].emit is targets.get(name).emit


@pytest.mark.parametrize("name", ["scamp5", "scamp5_wide", "cpu"])
def test_python_compile_goes_through_the_target_registry(monkeypatch, name):
    import kalg

    _spy(monkeypatch, name, "compile")
    assert kalg.compile([[1, 2, 1]], divisor=4, target=name) == "compiled by " + name


def test_python_compile_of_an_unknown_target_names_the_known_ones():
    import kalg

    with pytest.raises(UsageError, match=r"unknown target 'gpu'.*scamp5, scamp5_wide, cpu"):
        kalg.compile([[1, 2, 1]], target="gpu")
