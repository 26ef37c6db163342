"""Regression tests for big and hostile inputs (issue 27, item 5), one test per symptom: each
reproduces what a user hit and states what they rely on instead (a result, or a clear error
that names the limit, never a traceback)."""

from __future__ import annotations

import json
import sys
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

import kalg
from cli_run import run
from kalg.diagnostics import KalgError

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"


def kalg_file(tmp_path: Path, text: str, name: str = "k.kalg") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def failing(tmp_path: Path, capsys, command: str, text: str) -> tuple[Path, str]:
    """`kalg COMMAND` on a file of `text`, which must exit 1: the file and stderr."""
    path = kalg_file(tmp_path, text)
    code, _, err = run(capsys, command, str(path))
    assert code == 1, err
    return path, err


def random_kernel(size: int, seed: int = 0) -> list[list[int]]:
    return np.random.default_rng(seed).integers(-9, 10, size=(size, size)).tolist()


# ----------------------------------------------------------------------------- cpu target
def test_random_23x23_on_cpu_no_recursion_error():
    """A random 23x23 kernel on the cpu target ended in RecursionError (`Passes.copy` rebuilt
    its tap-by-tap chain of 529 passes recursively); now it compiles and is verified."""
    result = kalg.compile(random_kernel(23), target="cpu")
    assert result.verified
    image = np.random.default_rng(1).integers(0, 9, size=(30, 31))
    from scipy.ndimage import correlate

    want = correlate(image.astype(np.int64), np.array(random_kernel(23)), mode="constant")
    got = np.asarray(result.program(image), dtype=np.int64)
    assert np.array_equal(got[11:-11, 11:-11], want[11:-11, 11:-11])  # beyond any border


# ----------------------------------------------------------------------------- big numbers
def test_weight_of_2_pow_31_no_overflow_error():
    """`kalg.compile([[1, 2**31 + 1, 1]])` ended in OverflowError (python-flint's integer
    factoring sorts its factors with a key that overflows at 2^31); kalg takes big integers.
    SCAMP-5's search is run to its decomposition (the program, 60 instructions, takes 40 s)."""
    decomposition = kalg.compile([[1, 2**31 + 1, 1]], emit="decomposition")
    assert "add" in decomposition.text
    result = kalg.compile([[1, 2**31 + 1, 1]], target="cpu")
    assert result.verified
    assert dict(result.kernels["A"].entries) == {(-1, 0): 1, (0, 0): 2**31 + 1, (1, 0): 1}


def test_factoring_past_2_pow_63_gives_the_polynomial_back():
    """The rational fallback of the factoring is exact: content times the factors is p."""
    from kalg.eqsat import analyses

    x, y = analyses._ZZ.gens()
    p = -6 * (1 - x) * (3 * x + 2**64) * (y + 3) ** 2
    content, parts = analyses._integer_factors(p)
    product = analyses._ZZ.from_dict({(0, 0): content})
    for f, m in parts:
        product *= f**m
    assert product == p and content == 6 and len(parts) == 3


# ----------------------------------------------------------------------------- deep nesting
@pytest.mark.parametrize("expression", ["(" * 250 + "x" + ")" * 250,
                                        " + ".join(["x"] * 400), "-" * 250 + "x",
                                        "transpose(" * 250 + "x" + ")" * 250])
def test_expression_nested_250_deep_no_recursion_error(tmp_path, capsys, expression):
    """An expression nested about 250 deep ended in RecursionError (lark's Transformer, then
    the evaluator); now it is a located error that states the limit."""
    path = kalg_file(tmp_path, f"kernel k = [1]\nkernel d = {expression}\n")
    code, _, err = run(capsys, "check", path)
    assert code == 1 and "Traceback" not in err
    assert err.startswith(f"{path}:2:") and "nested more than 200 levels" in err


def test_expression_nested_200_deep_compiles_on_both_targets(tmp_path):
    """The limit is honest: 200 levels go through the whole compile."""
    from kalg.frontend.parser import MAX_NESTING

    source = ("kernel d = " + " + ".join(["x"] * (MAX_NESTING + 1))
              + "\nkernel e = " + "-" * (MAX_NESTING - 1) + "d\n")
    for target in ("scamp5", "cpu"):
        assert kalg.compile(source, target=target).verified


# ----------------------------------------------------------------------------- simulate
@pytest.fixture(scope="module")
def sobel_program(tmp_path_factory):
    path = tmp_path_factory.mktemp("prog") / "sobel.scamp5"
    path.write_text(kalg.compile(EXAMPLES / "sobel.kalg").text, encoding="utf-8")
    return path


def test_simulate_size_20000_says_the_size_not_node_limit(capsys, sobel_program):
    """`kalg simulate --size 20000` ran out of memory and said "lower --node-limit", an
    option simulate does not have; the size is now checked up front."""
    code, _, err = run(capsys, "simulate", sobel_program, "--kernel", EXAMPLES / "sobel.kalg",
                       "--size", "20000")
    assert code == 2 and "--node-limit" not in err
    assert "--size 20000 is too large" in err and "4096" in err


def test_memory_error_outside_optimize_does_not_name_node_limit(capsys, monkeypatch):
    from kalg.commands import check

    def exhausted(args):
        raise MemoryError

    monkeypatch.setattr(check, "run", exhausted)
    code, _, err = run(capsys, "check", EXAMPLES / "sobel.kalg")
    assert code == 1 and "out of memory" in err and "--node-limit" not in err


def test_out_of_memory_with_json_ends_in_a_report_not_a_traceback(capsys, monkeypatch):
    """A dense 7x7 kernel's compile with --json that ran out of memory ended in a MemoryError
    traceback from an import: the report (`kalg.jsonout`, imported lazily) ran while the
    exception's traceback still held the failed search's frames, and so its memory. The
    report now comes once they are freed."""
    import weakref

    from kalg import cli
    from kalg.commands import optimize

    class Search:
        """Stands for the failed search's states."""

    held: list[weakref.ref] = []

    def exhausted(args):
        search = Search()
        held.append(weakref.ref(search))
        raise MemoryError

    freed_before_report = []
    report = cli._json_error

    def watched(*args, **kwargs):
        freed_before_report.append(held[0]() is None)
        return report(*args, **kwargs)

    monkeypatch.setattr(optimize, "run", exhausted)
    monkeypatch.setattr(cli, "_json_error", watched)
    code, out, err = run(capsys, "optimize", EXAMPLES / "sobel.kalg", "--json")
    assert code == 1 and freed_before_report == [True]
    assert json.loads(out)["ok"] is False and "out of memory" in err
    assert "Traceback" not in err


@pytest.mark.parametrize(("flag", "value"), [("--noise-relative", "nan"),
                                             ("--noise-gain", "-1"),
                                             ("--noise-additive", "inf")])
def test_noise_relative_nan_is_refused_not_snr_minus_inf(capsys, sobel_program, flag, value):
    """`--noise-relative nan` was accepted and printed "SNR -inf dB"."""
    code, out, err = run(capsys, "simulate", sobel_program, "--kernel",
                         EXAMPLES / "sobel.kalg", flag, value)
    assert code == 2 and "-inf" not in out
    assert f"{flag} must be a finite number >= 0" in err


def test_python_simulate_noise_by_name_no_attribute_error(sobel_program):
    """`kalg.simulate(..., noise="cain")` raised a raw AttributeError; a preset's name works,
    anything else is a KalgError naming the presets."""
    image = np.random.default_rng(0).integers(0, 256, (16, 16)).astype(float)
    run_ = kalg.simulate(sobel_program, EXAMPLES / "sobel.kalg", image, noise="cain")
    assert run_.noisy is not None and not np.array_equal(run_.noisy["A"], run_.outputs["A"])
    with pytest.raises(KalgError, match=r"unknown noise model 'cian'.*'cain', 'auke'"):
        kalg.simulate(sobel_program, EXAMPLES / "sobel.kalg", image, noise="cian")


# ----------------------------------------------------------------------------- cpu borders
def test_cpu_border_as_a_pair_no_attribute_error():
    """`build(..., border=("constant", 7))` raised a raw AttributeError; the pair is a border,
    and anything else is a KalgError listing the modes."""
    from kalg.targets.cpu import build

    sobel = build(EXAMPLES / "sobel.kalg", border=("constant", 7))
    from scipy.ndimage import correlate

    ones = np.ones((6, 6))
    want = correlate(ones, np.array([[1, 0, -1], [2, 0, -2], [1, 0, -1]]), mode="constant",
                     cval=7)
    assert np.array_equal(sobel(ones), want) and want[0, 0] != 0
    with pytest.raises(KalgError, match="not a finite number"):
        sobel(ones, border=("constant", float("nan")))
    with pytest.raises(KalgError, match="a border is a mode name"):
        sobel(ones, border=3)


# ----------------------------------------------------------------------------- kalg run PNG
@pytest.fixture(scope="module")
def ramp_png(tmp_path_factory):
    from PIL import Image

    path = tmp_path_factory.mktemp("img") / "ramp.png"
    Image.fromarray(np.tile(np.arange(0, 250, 10, dtype=np.uint8), (25, 1)), mode="L").save(path)
    return path


def test_run_png_clipping_negative_outputs_warns(capsys, tmp_path, ramp_png):
    """`kalg run ... -o out.png` clipped a Sobel's negative outputs to 0 without a word."""
    from PIL import Image

    out = tmp_path / "edges.png"
    code, _, err = run(capsys, "run", EXAMPLES / "sobel.kalg", "--image", ramp_png, "-o", out)
    assert code == 0 and "warning" in err and "were clipped" in err
    assert "--png-scale auto" in err and "range -80..-40" in err
    assert np.asarray(Image.open(out)).max() == 0  # what clip means, and why it warned


@pytest.mark.parametrize(("scale", "low", "high"), [("auto", 0, 255), ("abs", 40, 80)])
def test_run_png_scale_auto_and_abs_keep_negative_outputs(capsys, tmp_path, ramp_png, scale,
                                                          low, high):
    from PIL import Image

    out = tmp_path / "edges.png"
    code, _, err = run(capsys, "run", EXAMPLES / "sobel.kalg", "--image", ramp_png, "-o", out,
                       "--png-scale", scale)
    data = np.asarray(Image.open(out))
    assert code == 0 and "clipped" not in err
    assert (int(data.min()), int(data.max())) == (low, high)


# ----------------------------------------------------------------------------- targets
WIDE_FILTER = "filter f = [A: [1 2 1] / 4, G: [1 0 -1]]\n"


def test_registers_override_for_filter_on_command_line_no_register_error(capsys, tmp_path):
    """`--target scamp5_wide --registers A..H` failed for a filter with an output in G (only a
    target block in the file worked): the command line's register file is the filter's."""
    path = kalg_file(tmp_path, WIDE_FILTER)
    code, out, err = run(capsys, "optimize", path, "--target", "scamp5_wide", "--registers",
                         "A..H")
    assert code == 0, err
    assert "registers A B C D E F G H" in out


def test_registers_override_for_filter_in_python_no_register_error():
    result = kalg.compile(WIDE_FILTER, target="scamp5_wide", registers="A..H")
    assert result.verified and sorted(result.kernels) == ["A", "G"]
    mapping = kalg.compile({"A": [[1, 2, 1]], "G": [[1, 0, -1]]}, target="scamp5_wide",
                           registers="A..H", divisor=4)
    assert mapping.verified


def test_output_beyond_the_registers_names_the_override(capsys, tmp_path):
    path = kalg_file(tmp_path, WIDE_FILTER)
    code, _, err = run(capsys, "check", path)
    assert code == 1 and "'G' is not a register" in err and "--registers" in err


CPU_FILTER = """target cpu { }
filter edges = [gx: [1 0 -1; 2 0 -2; 1 0 -1], gy: [1 2 1; 0 0 0; -1 -2 -1]]
"""


def test_cpu_filter_outputs_are_free_names_and_target_cpu_block_is_valid(capsys, tmp_path):
    """cpu filters had to name their outputs A..F and `target cpu { }` was not a valid
    block: on the cpu, outputs are any names and the block selects the target."""
    path = kalg_file(tmp_path, CPU_FILTER)
    code, out, err = run(capsys, "optimize", path)
    assert code == 0, err
    assert "gx" in out and "gy" in out and "ops/pixel" in out
    result = kalg.compile(path)
    assert result.target == "cpu" and sorted(result.kernels) == ["gx", "gy"]
    image = np.arange(36.0).reshape(6, 6)
    assert set(result.program(image)) == {"gx", "gy"}
    named = kalg.compile({"gx": [[1, 0, -1]], "gy": [[1], [0], [-1]]}, target="cpu")
    assert sorted(named.kernels) == ["gx", "gy"]
    code, out, _ = run(capsys, "check", path)
    assert code == 0 and out.startswith("target cpu { }\n")
    channels = kalg_file(tmp_path, "target cpu { input: r g }\nfilter f = [mix: [1 2 1] * r + g]\n",
                         "channels.kalg")
    assert kalg.compile(channels).inputs == ("r", "g")


# ----------------------------------------------------------------------------- SCAMP-5 limits
def test_program_reading_further_than_its_kernel_no_interior_error():
    """A random 31x31 kernel's program (reach 15, but reading 30 PEs away) failed its own check
    with "a 48x48 image has no interior", an internal limit reported as an input error: the
    check's image is now sized by the program's footprint, not the kernel's reach alone."""
    from kalg import targets
    from kalg.algebra.kernel import Kernel
    from kalg.targets.scamp5.machine.isa import Dir, Movx

    there_and_back = [Movx("A", "A", Dir.EAST)] * 30 + [Movx("A", "A", Dir.WEST)] * 30
    assert "simulator" in targets.get("scamp5").verify(there_and_back, {"A": Kernel.unit()})


def test_kernel_reaching_past_the_256_array_is_refused_up_front(tmp_path, capsys):
    """Kernels too large for SCAMP-5's 256x256 array are refused before any search, with the
    reason (no output pixel would see all its inputs)."""
    path = kalg_file(tmp_path, "kernel wide = (1 + x)^64 * (1 + x)^64 * x^2\n")
    code, _, err = run(capsys, "optimize", path)
    assert code == 1 and "reaches 130 pixels" in err and "256x256" in err


# ----------------------------------------------------------------------------- approximation
def test_approximated_box_reports_gain_error_and_l1_not_only_largest():
    """A float box rounded at a depth reported only its largest coefficient error (a 101x101
    box came out 6.6% too dark): the header, the stats and the result give the L1 norm of the
    coefficient error and the gain (DC) error too."""
    result = kalg.compile([[1, 1, 1]], divisor=3, approx=4)  # each 1/3 rounds to 5/16
    (line,) = [s for s in result.text.splitlines() if s.startswith("// approximated")]
    assert "largest coefficient error 1/48 = 0.0208" in line
    assert "L1 error 0.0625" in line and "gain (DC) 0.9375" in line and "(-6.25%)" in line
    report = result.approximation["A"]
    assert (report.gain, report.l1, report.gain_relative) == (Fraction(15, 16), Fraction(1, 16),
                                                              Fraction(-1, 16))
    stats = result.stats["approximation"]["A"]
    assert stats["gain"] == 15 / 16 and stats["gain_relative_error"] == -1 / 16


def test_approximation_report_in_json(capsys, tmp_path):
    path = kalg_file(tmp_path, "kernel mean = [1 1 1] / 3 with approx depth 4\n")
    code, out, _ = run(capsys, "optimize", path, "--json")
    data = json.loads(out)
    assert code == 0
    assert set(data["stats"]["approximation"]["A"]) >= {"l1_error", "gain_relative_error",
                                                        "largest_coefficient_error"}


def test_cpu_ignores_approximation_with_a_warning_and_computes_exact_weights(capsys):
    """The cpu target applied SCAMP-5's approximation without a word; it needs none."""
    result = kalg.compile(EXAMPLES / "mean3.kalg", target="cpu")
    assert any("approximation setting is ignored on the cpu" in w for w in result.warnings)
    assert all(c == Fraction(1, 9) for _, c in result.kernels["A"].entries)
    assert result.approximation == {}
    image = np.full((7, 7), 9.0)
    assert result.program(image)[3, 3] == pytest.approx(9.0)  # 7/64 * 81 would be 8.86
    code, out, err = run(capsys, "optimize", EXAMPLES / "mean3.kalg", "--target", "cpu")
    assert code == 0 and "approximation setting is ignored" in err and "1/9" in out


# ----------------------------------------------------------------------------- provenance
def test_decomposition_none_for_whole_filter_construction_is_explained():
    """`.decomposition` was None without explanation whenever a whole-filter construction
    won: `.provenance` names the construction and says why."""
    result = kalg.compile({"A": [[1, 2, 1]], "B": [[1, 0, -1]], "C": [[1], [2], [1]],
                           "D": [[1], [0], [-1]]})
    assert result.decomposition is None
    assert result.provenance.startswith(f"construction: {result.stats['candidate']}")
    assert ".decomposition is None" in result.provenance
    single = kalg.compile([[1, 2, 1]], divisor=4)
    assert single.decomposition is not None
    assert single.provenance == f"decomposition: {single.stats['candidate']}"


# ----------------------------------------------------------------------------- --timeout
def test_timeout_cuts_a_stage_that_never_checks_the_deadline(monkeypatch):
    """`--timeout 0.1` on a six-output filter ran 12.7 s: stages that cannot be cut in the
    middle ran on. The compile is now abandoned at the bound (a search that stands still stands
    in for such a stage) and answers with the direct construction's program, verified before
    the cut, its stop reason naming the stage cut."""
    import time as clock

    from kalg.targets.scamp5 import candidates, fallback

    def stuck(*args, **kwargs):
        clock.sleep(60)

    monkeypatch.setattr(candidates, "search", stuck)
    start = clock.monotonic()
    result = kalg.compile([[1, 2, 1]], divisor=4, timeout=1)
    assert clock.monotonic() - start < 30  # the alarm, not the 60 s sleep, ended it
    assert result.stats["candidate"] == fallback.CANDIDATE
    assert result.stats["stop reason"].startswith("--timeout 1 s expired and the compile was "
                                                  "cut during 'front end")
    assert result.text.startswith("// stop: --timeout 1 s expired")
    assert max(kalg.simulate(result, "kernel k = [1 2 1] / 4").max_abs_error.values()) < 1e-9


def test_timeout_without_a_fallback_says_what_was_cut(monkeypatch):
    """Where the direct construction does not apply (six outputs on six registers leave no
    register for the divided input), the cut is a clear error naming the stage it cut."""
    import time as clock

    from kalg.targets.scamp5 import candidates

    def stuck(*args, **kwargs):
        clock.sleep(60)

    monkeypatch.setattr(candidates, "search", stuck)
    six = {r: np.random.default_rng(i).integers(-3, 4, (3, 3)).tolist()
           for i, r in enumerate("ABCDEF")}
    start = clock.monotonic()
    with pytest.raises(KalgError, match=r"--timeout 1 s expired and the compile was cut "
                                        r"during .front end"):
        kalg.compile(six, timeout=1)
    assert clock.monotonic() - start < 30


def test_timeout_on_random_9x9_no_overshoot_waiting_for_the_code_generator(monkeypatch):
    """`--timeout 1` on a random 9x9 took 2.2 s: the alarm waited, a second at a time, while
    the code generator built its own fallback. The alarm now cuts whatever runs, and the
    direct program made before the searches is the answer (a code generator that never stops
    stands in for a slow fallback: it kept the old alarm waiting as long as it ran)."""
    import time as clock

    from kalg.targets.scamp5 import fallback, pipeline

    def slow(*args, **kwargs):
        clock.sleep(60)

    monkeypatch.setattr(pipeline, "choose_program", slow)
    kernel = random_kernel(9, seed=9)
    start = clock.monotonic()
    result = kalg.compile(kernel, timeout=2)
    assert clock.monotonic() - start < 30
    assert result.stats["candidate"] == fallback.CANDIDATE
    assert "expired and the compile was cut during '" in result.stats["stop reason"]
    assert max(kalg.simulate(result, kernel).max_abs_error.values()) < 1e-9


def test_cut_layer_answers_with_a_verified_sequence_of_direct_programs(monkeypatch):
    """An eight-output filter with `--split auto` cut by --timeout: every program of the layer
    is the direct construction's, and the sequence is verified as a layer's always is."""
    import time as clock

    from kalg.targets.scamp5 import candidates

    def stuck(*args, **kwargs):
        clock.sleep(60)

    monkeypatch.setattr(candidates, "search", stuck)
    eight = {r: [[i + 1, 0, -1]] for i, r in enumerate("ABCDEFGH")}
    result = kalg.compile(eight, split="auto", timeout=1)
    assert len(result.readouts) == 2
    assert "cut during 'layer: program 1'" in result.stats["stop reason"]
    assert "direct construction" in result.text


def test_stop_reason_never_says_searched_every_candidate_when_cut(monkeypatch):
    """The JSON stop reason said "searched every candidate" when the search was cut."""
    from kalg import settings

    monkeypatch.setattr(settings.Deadline, "passed", lambda self: self.end is not None)
    result = kalg.compile([[1, 2, 1]], divisor=4, timeout=1000)
    assert "searched every candidate" not in result.stats["stop reason"]
    assert "--timeout 1000 s expired" in result.stats["stop reason"]
    untimed = kalg.compile([[1, 2, 1]], divisor=4)
    assert untimed.stats["stop reason"] == "searched every candidate"


def test_split_2_in_the_target_block_says_the_option_not_expected_a_name(tmp_path, capsys):
    """Fuzzing layers: `split: 2` in a target block was "unexpected number 2: expected '[' or a
    name", which says neither what the field takes nor where a number of outputs goes."""
    path, err = failing(tmp_path, capsys, "check", "target scamp5 { registers: A..F, input: A, "
                        "split: 2 }\nfilter f = [B: [1], C: [2]]\n")
    assert err.startswith(f"{path}:1:51: error: a target field takes names or a register range")
    assert "--split N" in err


def _compile_in_child(queue) -> None:
    try:
        result = kalg.compile([[1, 3, 1]], timeout=30)
        queue.put(f"ok {result.verified}")
    except BaseException as err:  # what the test reports
        queue.put(f"{type(err).__name__}: {err}")


def test_compile_in_a_daemonic_process_no_daemonic_children_error():
    """Fuzzing compiles in daemonic workers: `kalg.compile` in a daemonic process (a
    multiprocessing pool's or a Dask cluster's worker) ended in "AssertionError: daemonic
    processes are not allowed to have children" (the e-graph runs in a child process). It
    now runs the e-graph in a fresh interpreter there, as in a threaded process."""
    import multiprocessing

    ctx = multiprocessing.get_context("fork")
    queue = ctx.Queue()
    child = ctx.Process(target=_compile_in_child, args=(queue,), daemon=True)
    child.start()
    answer = queue.get(timeout=300)
    child.join()
    assert answer == "ok True"


def test_batch_timeout_in_a_thread_still_cuts_with_the_alarm(tmp_path):
    """A Dask worker runs each job in a thread, where --timeout's alarm cannot be set: a job
    there was bounded only by the searches' own checks. A job with --timeout off the main
    thread now runs in a fresh interpreter's main thread, cut there as on a local pool (a
    random 9x9 is cut long before its search ends)."""
    import threading

    from kalg.batch import Job, compile_job
    from kalg.targets.scamp5.fallback import CANDIDATE

    path = kalg_file(tmp_path, "kernel r = [" + "; ".join(
        " ".join(map(str, row)) for row in random_kernel(9, seed=9)) + "]\n")
    job = Job(str(path), "r", (("timeout", 0.3),))
    entries = []
    thread = threading.Thread(target=lambda: entries.append(compile_job(job)))
    thread.start()
    thread.join()
    (entry,) = entries
    # the alarm's words: the direct program answered, or (on a machine so loaded that the
    # direct program was not ready either) the error naming the stage cut; the searches' own
    # checks say "expired during the search" or "before code generation found a program"
    said = entry["stats"]["stop reason"] if entry["ok"] else entry["errors"][0]["message"]
    assert "expired and the compile was cut during" in said
    assert not entry["ok"] or entry["stats"]["candidate"] == CANDIDATE


def test_timeout_alarm_in_a_finaliser_still_cuts_without_a_traceback(monkeypatch):
    """Fuzzing layers with --timeout 3: compiles ran 22-42 s, and stderr showed "Exception
    ignored in: <function _afterFork ...> Traceback ... TimeoutCut": the one alarm had landed
    in a hook where Python ignores exceptions (a fork hook; a finaliser alike), and nothing
    cut the compile after. The alarm now repeats until the cut takes, and an ignored cut
    prints nothing (a finaliser that is running when the alarm fires stands in for the hook)."""
    import time as clock

    from kalg.targets.scamp5 import candidates, fallback

    class Slow:
        def __del__(self):
            clock.sleep(60)

    def stuck(*args, **kwargs):
        slow = Slow()
        del slow  # the finaliser runs now: the first alarm lands in it
        clock.sleep(60)

    ignored = []  # what Python would print as "Exception ignored in ..."
    monkeypatch.setattr(sys, "unraisablehook", ignored.append)
    monkeypatch.setattr(candidates, "search", stuck)
    start = clock.monotonic()
    result = kalg.compile([[1, 2, 1]], divisor=4, timeout=1)
    assert clock.monotonic() - start < 30  # was 60: the first alarm was the only one
    assert result.stats["candidate"] == fallback.CANDIDATE
    assert ignored == []


def test_timeout_alarm_in_the_unraisable_hook_prints_no_traceback():
    """Fuzzing layers with --timeout 3 (session 17): stderr showed "Exception ignored in
    sys.unraisablehook: <function bounded.<locals>.quiet> ... TimeoutCut": a repeat of the
    alarm had landed inside the hook that keeps ignored cuts quiet. A cut is not raised there
    (the next repeat cuts): here the alarm lands while the hook reads what was ignored."""
    import signal

    from kalg.settings import TimeoutCut, bounded

    class Ignored:  # what Python hands the hook; reading it lets the alarm in
        @property
        def exc_value(self):
            signal.raise_signal(signal.SIGALRM)
            return TimeoutCut()

    def work():
        sys.unraisablehook(Ignored())  # the hook `bounded` installed
        return "done"

    assert bounded(30, lambda: "work", work) == "done"


def test_batch_of_a_missing_file_says_cannot_read_not_none(tmp_path, capsys):
    """Fuzzing batches: a missing file's summary line read "kalg: error: net.kalgx:None: kalg:
    error: cannot read 'net.kalgx'" (the definition None, the prefix twice)."""
    missing = tmp_path / "net.kalgx"
    code, _, err = run(capsys, "batch", str(missing), "--workers", "1")
    assert code == 1
    assert f"kalg: error: cannot read '{missing}'" in err
    assert ":None:" not in err and "error: kalg: error:" not in err


def test_pipeline_without_a_conv_on_the_cpu_runs_not_index_error(tmp_path, capsys):
    """Fuzzing pipelines: `optimize --target cpu` of a pipeline whose stages are all
    pointwise (`out r = img`) ended in "IndexError: list index out of range"
    (targets/cpu/plan.py: no kernel to plan). A pointwise pipeline is a pipeline (a fixpoint's
    parts are such pipelines too): it compiles and runs."""
    import numpy as np

    from kalg.frontend import load_text
    from kalg.targets.cpu.pipelines import build_pipeline
    text = "target cpu { input: A }\npipeline p(img) {\n  let s0 = img\n  out r = abs(img) * 2\n}\n"
    path = tmp_path / "p.kalg"
    path.write_text(text)
    code, out, _ = run(capsys, "optimize", "--target", "cpu", str(path))
    assert code == 0 and "nothing to verify: no kernel" in out
    image = np.random.default_rng(4).standard_normal((9, 13)).astype(np.float32)
    f = build_pipeline(load_text(text).definition(), schedule="fused")
    assert np.array_equal(f(image), np.abs(image) * 2)
