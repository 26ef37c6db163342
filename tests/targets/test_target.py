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
