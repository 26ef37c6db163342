"""Regression tests for the rough edges a new user hit (issue 14), one test per symptom.

Every test runs a small kernel, so the file stays within a few seconds.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from cli_run import run
from kalg.cli import main

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"
CAIN = ROOT / "tests" / "data" / "cain"
SRC = ROOT / "src"


def kalg_file(tmp_path: Path, text: str, name: str = "k.kalg") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def subprocess_kalg(*argv: str, **kwargs) -> subprocess.Popen:
    env = {"PYTHONPATH": str(SRC), "PATH": "/usr/bin:/bin"}
    return subprocess.Popen([sys.executable, "-m", "kalg", *argv], env=env, **kwargs)


# ----------------------------------------------------------------------------- no tracebacks
def test_broken_pipe_on_head_ends_without_a_traceback(tmp_path):
    """`kalg ... | head` ended in a BrokenPipeError traceback."""
    big = kalg_file(tmp_path, "kernel k = (1 + x)^60 * (1 + y)^60\n")  # ~70 kB of output
    proc = subprocess_kalg("check", str(big), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    proc.stdout.close()  # the reader is gone before kalg writes
    _, err = proc.communicate(timeout=60)
    assert b"Traceback" not in err and b"BrokenPipeError" not in err
    assert proc.returncode == 141


def test_broken_pipe_in_process_returns_141(tmp_path, monkeypatch):
    class Closed:
        def write(self, text):
            raise BrokenPipeError(32, "Broken pipe")

        def flush(self):
            raise BrokenPipeError(32, "Broken pipe")

        def fileno(self):
            raise OSError("no descriptor")

    monkeypatch.setattr(sys, "stdout", Closed())
    assert main(["check", str(EXAMPLES / "sobel.kalg")]) == 141


def test_missing_pillow_is_a_clear_message_not_a_traceback(capsys, monkeypatch, tmp_path):
    """After `pip install` without Pillow, --write-result ended in ModuleNotFoundError: PIL."""
    monkeypatch.setitem(sys.modules, "PIL", None)  # `from PIL import Image` now fails
    code, _, err = run(capsys, "simulate", CAIN / "sobel.scamp5", "--kernel",
                       EXAMPLES / "sobel.kalg", "--size", "16", "--write-result",
                       tmp_path / "r.png")
    assert code == 1
    assert "needs Pillow" in err and "pip install pillow" in err


def test_pillow_is_a_dependency():
    text = (ROOT / "pyproject.toml").read_text()
    dependencies = text.split("dependencies = [", 1)[1].split("]", 1)[0]
    assert '"pillow' in dependencies


# ----------------------------------------------------------------------------- noise and headers
def test_noise_is_reported_relative_to_the_signal_with_snr(capsys):
    code, out, _ = run(capsys, "simulate", CAIN / "sobel.scamp5", "--kernel",
                       EXAMPLES / "sobel.kalg", "--size", "32", "--noise", "cain")
    assert code == 0
    line = next(x for x in out.splitlines() if x.startswith("noise"))
    assert "signal rms" in line and "error/signal" in line and "SNR" in line and "dB" in line


def test_noise_that_swamps_the_signal_is_a_warning(capsys):
    """A LoG under AUKE noise came out as an inverted copy of the input with no warning."""
    code, _, err = run(capsys, "simulate", CAIN / "sobel.scamp5", "--kernel",
                       EXAMPLES / "sobel.kalg", "--size", "32", "--noise-additive", "5000")
    assert code == 0
    assert "warning: noise swamps the signal in A" in err


def test_approximated_kernel_header_states_the_kernel_computed_and_the_error():
    """A program for 1/9 said "verified: exactly" without saying it computes 7/64."""
    import kalg

    result = kalg.compile("kernel mean = [1 1 1] / 3 with approx depth 4")
    header = [line for line in result.text.splitlines() if line.startswith("//")]
    approx = next(line for line in header if "approximated" in line)
    assert "computes [5/16 5/16 5/16]" in approx
    assert "not the kernel written" in approx
    assert "largest coefficient error 1/48" in approx


# ----------------------------------------------------------------------------- early messages
def test_wide_coefficient_is_a_warning_before_the_search():
    """A 23-digit coefficient compiled to 162 instructions with no warning."""
    import kalg

    events = []
    kalg.compile("kernel k = 12345678901234567890123", emit="egraph",
                 warn=lambda m: events.append(("warn", m)),
                 progress=lambda m: events.append(("progress", m)))
    kinds = [kind for kind, _ in events]
    assert kinds.index("warn") < next(i for i, (k, m) in enumerate(events)
                                      if k == "progress" and m.startswith("e-graph"))
    assert "74 bits" in events[kinds.index("warn")][1]


def test_far_reaching_kernel_is_verified_on_an_image_that_fits_it():
    """(1+x)^60 failed after 23 s with "a 48x48 image has no interior"."""
    import kalg

    result = kalg.compile("kernel far = x^30")
    assert result.verified and result.instructions >= 1


def test_kernel_reaching_beyond_the_array_is_refused_at_its_definition(capsys, tmp_path):
    path = kalg_file(tmp_path, "kernel far = x^130\n")
    code, _, err = run(capsys, "optimize", path)
    assert code == 1
    assert f"{path}:1:1: error: 'far' reaches 130 pixels" in err


def test_zero_kernel_error_has_a_location(capsys, tmp_path):
    path = kalg_file(tmp_path, "kernel a = [1]\nkernel z = [0 0 0]\n")
    code, _, err = run(capsys, "optimize", path)
    assert code == 1
    assert err.startswith(f"{path}:2:1: error: 'z' is the zero kernel")


def test_a_kernel_approximated_to_zero_says_the_approximation_made_it_zero(capsys, tmp_path):
    # Regression (issue 11 audit): [1 2 1] / 10 at depth 1 rounds to [0 0 0], and kalg said
    # "'a' is the zero kernel: there is nothing to compute" of a kernel that is not zero
    path = kalg_file(tmp_path, "kernel a = [1 2 1] / 10 with approx depth 1\n")
    code, _, err = run(capsys, "optimize", path)
    assert code == 1
    assert "'a' approximated at depth 1 is the zero kernel" in err and "raise the" in err


def test_emit_kernels_ends_its_last_line(capsys, tmp_path):
    # Regression (issue 11 audit): `--emit kernels` printed no final newline, so a shell
    # prompt or the next command's output went on the matrix's last line
    path = kalg_file(tmp_path, "kernel r = [1 2; 3 4] @ (0, 0)\n")
    code, out, _ = run(capsys, "optimize", path, "--emit", "kernels")
    assert code == 0 and out.endswith("@ (0, 0)\n")


def test_utf8_byte_order_mark_is_accepted(capsys, tmp_path):
    path = tmp_path / "bom.kalg"
    path.write_bytes(b"\xef\xbb\xbfkernel k = [1 2 1]\n")
    code, out, _ = run(capsys, "check", path)
    assert code == 0 and "kernel k = [ 1 2 1 ]" in out


# ----------------------------------------------------------------------------- registers
def test_registers_without_the_input_explains_input_and_output(capsys, tmp_path):
    """`--registers B..F` said "register(s) A, A are not in the register budget"."""
    path = kalg_file(tmp_path, "kernel k = [1 2 1]\n")
    code, _, err = run(capsys, "optimize", path, "--registers", "B..F")
    assert code == 2
    assert "A is the input register" in err and "the output register" in err
    assert "--input" in err
    assert "A, A" not in err


def test_registers_without_a_filters_output_do_not_suggest_moving_the_input(capsys, tmp_path):
    # Regression (issue 11 audit): a filter output missing from --registers got the hint
    # "move the input with --input REG", which cannot put B in the budget
    path = kalg_file(tmp_path, "filter f = [A: [1 2 1], B: [1 0 -1]]\n")
    code, _, err = run(capsys, "optimize", path, "--registers", "A,C,D")
    assert code == 2
    assert "B is an output register of 'f'" in err and "--input" not in err


def test_a_register_listed_twice_or_a_falling_range_says_so(capsys, tmp_path):
    # Regression (issue 11 audit): `--registers A,A,B` and `--registers F..A` got only
    # "invalid register budget" and the forms, not what was wrong with them
    path = kalg_file(tmp_path, "kernel k = [1 2 1]\n")
    code, _, err = run(capsys, "optimize", path, "--registers", "A,A,B")
    assert code == 2 and "(A listed twice)" in err
    code, _, err = run(capsys, "optimize", path, "--registers", "F..A")
    assert code == 2 and "(a range runs up: A..F)" in err


def test_input_option_moves_the_input_and_the_kernels_output(capsys, tmp_path):
    path = kalg_file(tmp_path, "kernel k = [1 2 1]\n")
    program = tmp_path / "k.scamp5"
    code, _, err = run(capsys, "optimize", path, "--registers", "B..F", "--input", "B",
                       "-o", program)
    assert code == 0, err
    assert "input in B" in program.read_text()
    assert "A" not in {r for line in program.read_text().splitlines()
                       if not line.startswith("//") for r in line if r.isupper()} - set("B")
    code, out, _ = run(capsys, "simulate", program, "--kernel", path, "--input", "B",
                       "--size", "16")
    assert code == 0 and "input in B" in out


TWO_OUTPUTS_TWO_REGISTERS = """\
target scamp5 { registers: A..B, input: A, ops: basic }
kernel smooth = [1 2 1; 2 4 2; 1 2 1] / 16
kernel edges = [0 1 0; 1 -4 1; 0 1 0]
filter f = [A: smooth, B: edges]
"""


def test_one_output_per_register_without_a_program_says_why_and_what_to_give(capsys, tmp_path):
    """A filter with one output per register and no in-place form for its last output ends in
    a RegisterPressureError that says why and asks for one more register, which then works."""
    path = kalg_file(tmp_path, TWO_OUTPUTS_TWO_REGISTERS)
    code, out, err = run(capsys, "optimize", path)
    assert code == 1 and out == ""
    assert "no program found for 2 outputs in 2 registers A B" in err
    assert "made in its own register" in err and "give one more register" in err
    assert "Traceback" not in err
    code, out, err = run(capsys, "optimize", path, "--registers", "A..C")
    assert code == 0, err
    assert "verified" in out


def test_node_limit_zero_is_a_usage_error(capsys):
    code, _, err = run(capsys, "optimize", EXAMPLES / "sobel.kalg", "--node-limit", "0")
    assert code == 2 and "positive" in err


@pytest.mark.parametrize("option", [("--registers", "A..C"), ("--ops", "basic")])
def test_cpu_target_with_scamp5_options_is_a_usage_error(capsys, option):
    """`--target cpu` silently ignored --registers and --ops."""
    code, out, err = run(capsys, "optimize", EXAMPLES / "box3.kalg", "--target", "cpu", *option)
    assert code == 2 and out == ""
    assert f"{option[0]} is a SCAMP-5 setting" in err


def test_version_loads_no_heavy_module():
    """`kalg --version` must answer at once: no numpy, scipy, sympy, egglog or lark."""
    code = ("import sys; from kalg.cli import main; main(['--version']);"
            "heavy = {'numpy', 'scipy', 'sympy', 'egglog', 'egglog.bindings', 'lark', 'flint',"
            " 'highspy'} & set(sys.modules);"
            "print(sorted(heavy))")
    out = subprocess.run([sys.executable, "-c", code], env={"PYTHONPATH": str(SRC)},
                         capture_output=True, text=True, timeout=60).stdout
    assert out.splitlines()[-1] == "[]"


def test_a_compile_loads_neither_scipy_nor_sympy_nor_egglogs_python_layer():
    """Every compile pays for what it imports (issue 11: a median compile within 1.5 s, start-up
    included): scipy.optimize and sympy cost 0.3 s each, egglog's Python layer 0.33 s, and kalg
    needs none of them (HiGHS through highspy, factoring through python-flint, egglog through its
    compiled bindings)."""
    code = ("import sys; from kalg.cli import main; main(['optimize', sys.argv[1]]);"
            "print(sorted({'scipy', 'sympy', 'egglog'} & set(sys.modules)),"
            " sorted({'egglog.bindings', 'highspy', 'flint'} & set(sys.modules)))")
    out = subprocess.run([sys.executable, "-c", code, str(EXAMPLES / "gauss3.kalg")],
                         env={"PYTHONPATH": str(SRC)}, capture_output=True, text=True,
                         timeout=300).stdout
    assert out.splitlines()[-1] == "[] ['egglog.bindings', 'flint', 'highspy']"


# ----------------------------------------------------------------------------- --timeout
def test_timeout_ends_code_generation_with_the_best_program_so_far(monkeypatch):
    from kalg.settings import Deadline
    from kalg.targets.scamp5 import codegen, programs

    def slow(name, registers, input_register, ops, limits, memo=None, longest=None):
        time.sleep(0.3)
        return ["instr"] * {"first": 9, "second": 7}[name]

    class Named(str):
        def live(self):
            return []

    monkeypatch.setattr(codegen, "generate", slow)
    monkeypatch.setattr(programs, "bus_steps", lambda program: 0)
    # One process: a forked worker would start the second search at once, beside the first.
    monkeypatch.setenv("KALG_WORKERS", "1")
    candidates = {n: Named(n) for n in ("first", "second")}
    program, winner, stop = programs.best_program(candidates, ("A",), "A", "all",
                                                  Deadline(0.2))
    assert (winner, len(program)) == ("first", 9)  # the second search never started
    assert stop.startswith("--timeout 0.2 s expired during code generation")


def test_timeout_before_any_program_is_a_clear_error(monkeypatch):
    from kalg.diagnostics import ResourceLimitError
    from kalg.settings import Deadline
    from kalg.targets.scamp5 import programs

    class Named(str):
        def live(self):
            return []

    with pytest.raises(ResourceLimitError, match="expired before code generation found"):
        programs.best_program({"a": Named("a")}, ("A",), "A", "all", Deadline(0))


def test_timeout_option_bounds_a_compile(capsys, tmp_path):
    path = kalg_file(tmp_path, "kernel k = [1 2 1]\n")
    code, out, _ = run(capsys, "optimize", path, "--timeout", "60")
    assert code == 0 and "scamp5_kernel_begin();" in out
    code, _, err = run(capsys, "optimize", path, "--timeout", "0")
    assert code == 2 and "positive" in err


# ----------------------------------------------------------------------------- examples
def test_examples_are_listed_and_written(capsys, tmp_path):
    code, out, _ = run(capsys, "examples")
    assert code == 0 and out.splitlines()[0].startswith("analognet2")
    code, _, _ = run(capsys, "examples", "gauss3", "--out", tmp_path / "ex")
    assert code == 0
    assert (tmp_path / "ex" / "gauss3.kalg").read_text() == (EXAMPLES / "gauss3.kalg").read_text()
    code, _, err = run(capsys, "examples", "nosuch")
    assert code == 2 and "gauss3" in err


def test_license_file_matches_pyproject():
    assert "MIT License" in (ROOT / "LICENSE").read_text()
    assert 'license = { text = "MIT" }' in (ROOT / "pyproject.toml").read_text()


# ----------------------------------------------------------------------------- --json
def test_optimize_json_has_the_documented_keys(capsys, tmp_path):
    path = kalg_file(tmp_path, "kernel k = [1 2 1]\n")
    code, out, _ = run(capsys, "optimize", path, "--json")
    data = json.loads(out)
    assert code == 0 and data["ok"] is True and data["command"] == "optimize"
    assert data["instructions"] == data["program"].count(";") - 2  # begin and end lines
    assert data["verified"] is True and data["registers"][0] == "A"
    assert set(data["seconds"]) >= {"front end", "optimize", "codegen", "verify"}
    assert data["stop_reason"] == "searched every candidate" and data["bus_steps"] > 0


def test_json_errors_are_json_too(capsys, tmp_path):
    path = kalg_file(tmp_path, "kernel k = [1 2 1];\n")
    code, out, err = run(capsys, "check", path, "--json")
    data = json.loads(out)
    assert code == 1 and data["ok"] is False and data["exit_code"] == 1
    [error] = data["errors"]
    assert (error["file"], error["line"], error["column"]) == (str(path), 1, 19)
    assert "';' ends a row" in error["message"] and "error:" in err


def test_simulate_and_check_json(capsys):
    code, out, _ = run(capsys, "simulate", CAIN / "sobel.scamp5", "--kernel",
                       EXAMPLES / "sobel.kalg", "--size", "16", "--json")
    data = json.loads(out)
    assert code == 0 and data["verified"] is True and data["instructions"] == 5
    assert data["max_abs_error"] == {"A": 0.0}
    code, out, _ = run(capsys, "check", EXAMPLES / "sobel.kalg", "--json")
    data = json.loads(out)
    assert data["kernels"]["sobel"]["outputs"]["A"][0] == ["1", "0", "-1"]


def test_check_json_lists_a_targets_several_inputs(capsys):
    # Regression (issue 11 audit): `kalg check --json` of a file with `input: A B` gave
    # "input": "A" and nothing about B
    code, out, _ = run(capsys, "check", EXAMPLES / "frame_pair.kalg", "--json")
    assert code == 0 and json.loads(out)["target"]["inputs"] == ["A", "B"]


# ----------------------------------------------------------------------------- --report
def test_simulate_report_writes_one_png(capsys, tmp_path):
    pytest.importorskip("matplotlib")
    from PIL import Image

    code, out, _ = run(capsys, "simulate", CAIN / "sobel_xy.scamp5", "--kernel",
                       EXAMPLES / "sobel_xy.kalg", "--size", "24", "--noise", "cain",
                       "--report", tmp_path / "rep")
    assert code == 0 and f"report   {tmp_path / 'rep' / 'report.png'}" in out
    with Image.open(tmp_path / "rep" / "report.png") as img:
        width, height = img.size
    assert width > 2 * height  # five panels across, one row per output (two here)


def test_report_without_matplotlib_is_a_clear_message(capsys, monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    code, _, err = run(capsys, "simulate", CAIN / "sobel.scamp5", "--kernel",
                       EXAMPLES / "sobel.kalg", "--size", "16", "--report", tmp_path)
    assert code == 1 and "pip install 'kalg[plots]'" in err


# ----------------------------------------------------------------------------- the Python API
def test_float_array_without_approximation_is_refused():
    """np.full((3, 3), 1/9) silently became 2001599834386887/2^54."""
    import kalg
    from kalg.diagnostics import KalgError

    with pytest.raises(KalgError, match="is a float, which is not exact"):
        kalg.compile(np.full((3, 3), 1 / 9))


def test_api_bad_arguments_are_kalg_errors_not_python_ones():
    # Regression (issue 11 audit): an infinite entry raised OverflowError, an unknown op set
    # ValueError "tuple.index(x): x not in tuple", an unknown stage ValueError, and a 1-D image
    # to simulate ValueError "not enough values to unpack"; a float such as 0.5 was refused as
    # "not exact (0.5 is stored as 1/2)"
    import kalg
    from kalg.diagnostics import KalgError, UsageError

    assert kalg.KalgError is KalgError  # what a reader of the README catches
    with pytest.raises(KalgError, match="inf is not finite"):
        kalg.compile([[1, float("inf"), 1]])
    with pytest.raises(UsageError, match="unknown op set 'some': expected 'all' or 'basic'"):
        kalg.compile([[1, 2, 1]], ops="some")
    with pytest.raises(UsageError, match=r"unknown stage 'nope'.*decomposition, program"):
        kalg.compile([[1, 2, 1]], emit="nope")
    with pytest.raises(KalgError, match=r"2-D array of numbers \(one channel\), not one of shape"):
        kalg.simulate("scamp5_kernel_begin();\nscamp5_kernel_end();", [[1]], np.zeros(5))
    with pytest.raises(KalgError, match=r"0\.5 is a float, and kalg takes floats only to round"):
        kalg.compile([[0.5, 0.25, 0.5]])


def test_api_arrays_of_exact_numbers():
    from fractions import Fraction

    import kalg

    a = kalg.compile([[1, 2, 1]], divisor=4)
    b = kalg.compile([[Fraction(1, 4), "0.5", "1/4"]])
    assert a.text.split("\n", 3)[3] == b.text.split("\n", 3)[3]  # same program
    assert a.verified and a.instructions == len(a.program)
    assert a.kernels["A"].taps[(0, 0)] == Fraction(1, 2)


def test_api_float_array_with_approximation():
    import kalg

    result = kalg.compile(np.full((1, 3), 1 / 3), approx=4)
    assert result.kernels["A"].taps[(0, 0)] == 5 / 16 and result.verified


def test_api_multi_output_filter_from_a_mapping():
    import kalg

    result = kalg.compile({"A": [[1, 0, -1]], "B": np.array([[-1], [0], [1]])})
    assert sorted(result.kernels) == ["A", "B"] and result.verified
    sim = kalg.simulate(result, result, np.arange(64.0).reshape(8, 8))
    assert sim.max_abs_error == {"A": 0.0, "B": 0.0}


def test_api_simulate_of_a_wrong_program_raises_a_user_error():
    import kalg
    from kalg.diagnostics import ProgramMismatchError

    result = kalg.compile([[1, 2, 1]])
    with pytest.raises(ProgramMismatchError) as caught:
        kalg.simulate(result, [[1, 0, -1]])
    assert caught.value.exit_code == 1
    assert "register A differs" in caught.value.message


def test_simulate_of_a_program_reading_an_unwritten_register_names_the_instruction(capsys,
                                                                                  tmp_path):
    # Regression (issue 11 audit): a hand-written program that read C before writing it got
    # "register A holds no defined value" and nothing about where the undefined value came from
    program = tmp_path / "p.scamp5"
    program.write_text("scamp5_kernel_begin();\nadd(B, C, A);\nmov(A, B);\n"
                       "scamp5_kernel_end();\n")
    code, _, err = run(capsys, "simulate", program, "--kernel", EXAMPLES / "sobel.kalg",
                       "--size", "16")
    assert code == 1 and "instruction 1 (add(B, C, A);) reads C before anything writes it" in err


def test_api_cpu_target_goes_through_the_runtime_route():
    """target="cpu" is routed to kalg.targets.cpu; without it, a clear KalgError."""
    import importlib.util

    import kalg
    from kalg.diagnostics import KalgError

    if importlib.util.find_spec("kalg.targets.cpu") is None:
        with pytest.raises(KalgError, match="target cpu needs the cpu runtime"):
            kalg.compile([[1, 2, 1]], target="cpu")
        return
    pytest.importorskip("halide")
    result = kalg.compile([[1, 2, 1]], target="cpu")
    image = np.arange(30.0).reshape(5, 6)
    out = result.program(image)
    assert out.shape == (5, 6) and out[2, 2] == image[2, 1] + 2 * image[2, 2] + image[2, 3]


# ----------------------------------------------------------------------------- progress
def test_status_line_on_a_terminal_shows_the_stage_and_is_erased():
    """Nothing was printed for 30 to 110 s on long compiles."""
    import io

    from kalg.progress import StatusLine, reporter

    class Tty(io.StringIO):
        def isatty(self):
            return True

    stream = Tty()
    progress, done = reporter(stats=False, stream=stream)
    assert isinstance(progress, StatusLine)
    progress("code generation: search 1 of 4 (e-graph)")
    done()
    text = stream.getvalue()
    assert "code generation: search 1 of 4 (e-graph)" in text and text.endswith("\r\033[K")
    assert reporter(stats=False, stream=io.StringIO())[0] is None  # not a terminal: silent


def test_stats_lines_from_several_processes_are_whole_lines():
    # Regression (issue 11 audit): with --stats the large-kernel path's worker processes
    # printed "kalg: code generation: search 1 of 3 (factor chain)kalg: code generation:
    # search 2 of 3 ..." on one line: print writes the text and its line break separately
    from kalg.progress import reporter, warner

    writes: list[str] = []

    class Stream:
        def write(self, text):
            writes.append(text)

        def flush(self):
            pass

        def isatty(self):
            return False

    progress, _ = reporter(stats=True, stream=Stream())
    progress("code generation: search 1 of 3 (factor chain)")
    warner(Stream())("--timeout expired")
    assert writes == ["kalg: code generation: search 1 of 3 (factor chain)\n",
                      "kalg: warning: --timeout expired\n"]


def test_bench_json_has_the_common_keys_and_the_rows(capsys):
    code, out, _ = run(capsys, "bench", "sobel", "--ops", "all", "--json")
    data = json.loads(out)
    assert code == 0 and data["ok"] is True and data["command"] == "bench"
    [row] = data["rows"]
    assert (row["kernel"], row["instructions"], row["verified"]) == ("sobel", 5, True)
    assert data["totals"]["all"]["kalg_sum"] == 5
