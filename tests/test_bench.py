"""`kalg bench`: a fast smoke run on two small kernels, the suite file, errors and the table.

The full benchmark is a command (`kalg bench --out DIR`), not a test; nothing here asserts times.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from cli_run import run
from kalg.commands.bench import Row, format_markdown, load_suite, summarise
from kalg.resources import bench_suite_path

ROOT = Path(__file__).resolve().parents[1]
ANCHORS = ROOT / "tests" / "data" / "cain" / "kernels.json"


def table_rows(out: str) -> list[list[str]]:
    """The cells of the table's body rows (a cell may hold an escaped pipe, '\\|')."""
    lines = [line for line in out.splitlines() if line.startswith("| ")][1:]  # no header
    return [[cell.strip() for cell in re.split(r"(?<!\\)\|", line[1:-1])] for line in lines]


def test_smoke_run_prints_the_table_and_writes_markdown_and_json(capsys, tmp_path):
    code, out, err = run(capsys, "bench", "sobel", "box3", "--ops", "all", "--out", str(tmp_path))
    assert code == 0, err
    rows = table_rows(out)
    assert [r[:2] for r in rows] == [["sobel", "all"], ["box3", "all"]]
    for kernel, _ops, kalg, bus, regs, seconds, verified, *_figures, won_by in rows:
        assert int(kalg) > 0 and int(bus) >= int(kalg), kernel
        assert regs.endswith("of 6") and float(seconds) >= 0
        assert verified == "yes" and won_by.split(":")[0] in {"e-graph", "horner"}
    assert [r[7] for r in rows] == ["5", "6"]  # Cain all
    assert [r[9] for r in rows] == ["7", "8"]  # AUKE basic
    assert "op set all: 2 kernels with a figure" in out
    assert "[1/2] sobel all ..." in err and "[2/2] box3 all ..." in err

    assert (tmp_path / "bench.md").read_text().endswith(out)
    data = json.loads((tmp_path / "bench.json").read_text())
    sobel = data["rows"][0]
    assert sobel["kernel"] == "sobel" and sobel["verified"] is True and sobel["error"] is None
    assert sobel["reference"] == "cain_all" and sobel["figures"]["cain_all"] == 5
    assert sobel["ratio"] == pytest.approx(sobel["instructions"] / 5, abs=1e-3)
    assert {"bus_steps", "registers_used", "registers_budget", "compile_s", "candidate",
            "provenance", "stage_seconds"} <= set(sobel)
    totals = data["totals"]["all"]
    assert totals["kalg_sum"] == sum(r["instructions"] for r in data["rows"])
    assert totals["reference_sum"] == 11 and totals["failed"] == 0
    assert totals["max_compile_s"] >= totals["median_compile_s"] > 0


def test_a_failing_kernel_is_a_row_and_the_run_goes_on(capsys, tmp_path):
    (tmp_path / "bad.kalg").write_text("kernel k = [ 1 2\n")
    suite = tmp_path / "suite.json"
    suite.write_text(json.dumps({"source": "test", "kernels": [
        {"name": "missing", "file": "missing.kalg", "outputs": 1, "figures": {"cain_all": 3}},
        {"name": "bad", "file": "bad.kalg", "outputs": 1}]}))
    code, out, err = run(capsys, "bench", "--suite", str(suite), "--ops", "basic",
                         "--out", str(tmp_path / "out"))
    assert code == 1
    rows = table_rows(out)
    assert [(r[0], r[2], r[6]) for r in rows] == [("missing", "—", "no"), ("bad", "—", "no")]
    assert all(r[-1].startswith("error: ") for r in rows)
    assert "2 of 2 compiles failed" in err
    data = json.loads((tmp_path / "out" / "bench.json").read_text())
    assert [r["error"] is not None for r in data["rows"]] == [True, True]
    assert data["totals"]["basic"]["failed"] == 2


def test_a_register_budget_too_small_fails_that_kernel_only(capsys):
    code, out, _ = run(capsys, "bench", "sobel_xy", "--registers", "1", "--ops", "all")
    assert code == 2  # --registers 1 cannot hold the outputs: a usage error
    [row] = table_rows(out)
    assert "must be in the register budget A" in row[-1]


def test_missing_suite_file_is_a_clear_error(capsys, tmp_path):
    code, out, err = run(capsys, "bench", "--suite", str(tmp_path / "nope.json"))
    assert code == 1 and out == ""
    assert "cannot read suite file" in err and "nope.json" in err and "Traceback" not in err


def test_malformed_suite_file_is_a_clear_error(capsys, tmp_path):
    suite = tmp_path / "suite.json"
    suite.write_text(json.dumps({"kernels": [{"name": "x"}]}))
    code, _, err = run(capsys, "bench", "--suite", str(suite))
    assert code == 1 and "kernel #1 needs" in err


def test_unknown_kernel_names_the_known_ones(capsys):
    code, out, err = run(capsys, "bench", "sobel", "nosuch")
    assert code == 1 and out == ""
    assert "unknown kernel(s) nosuch" in err and "gauss5" in err


@pytest.mark.parametrize("bad", ["0", "27", "six"])
def test_register_count_is_checked_by_argparse(capsys, bad):
    code, _, err = run(capsys, "bench", "--registers", bad)
    assert code == 2 and "number of registers" in err


def test_the_default_suite_holds_the_shared_benchmark_and_its_figures():
    assert bench_suite_path() == ROOT / "bench" / "suite.json"
    suite = json.loads(bench_suite_path().read_text())
    assert suite["source"]
    entries = {e.name: e for e in load_suite(bench_suite_path())}
    shared = json.loads(ANCHORS.read_text())["kernels"]
    assert list(entries) == [k["name"] for k in shared]
    for kernel in shared:
        entry = entries[kernel["name"]]
        assert entry.path == ROOT / "examples" / f"{kernel['name']}.kalg"
        assert entry.path.is_file()
        assert entry.outputs == len(kernel["outputs"])
        assert kernel["anchors"].items() <= entry.figures.items()
        assert entry.figures["cain_first"] >= entry.figures["cain_all"]


def _row(kernel: str, ops: str, instructions: int | None, figures: dict, **kw) -> Row:
    return Row(kernel, ops, f"{kernel}.kalg", 1, figures, 1.0, instructions=instructions,
               bus_steps=None if instructions is None else 2 * instructions,
               registers_used=3, registers_budget=6, verified=instructions is not None, **kw)


def test_table_compares_basic_with_cain_basic_else_auke_and_shows_provenance():
    rows = [
        _row("a", "basic", 6, {"cain_basic": 8, "auke_basic": 9}, candidate="e-graph",
             provenance=["ring", "factorisation"]),
        _row("b", "basic", 9, {"auke_basic": 9}, candidate="horner"),
        _row("c", "basic", 4, {}, candidate="e-graph"),
        _row("d", "basic", None, {"auke_basic": 9}, error="no | program"),
    ]
    totals = summarise(rows)["basic"]
    assert (totals["compared"], totals["kalg_sum"], totals["reference_sum"]) == (2, 15, 17)
    assert totals["shorter"] == 1 and totals["failed"] == 1
    assert totals["median_compile_s"] == 1.0
    lines = table_rows(format_markdown(rows, summarise(rows)))
    assert lines[0][10:] == ["0.75", "e-graph: ring, factorisation"]
    assert lines[1][10:] == ["1.00 (AUKE)", "horner"]
    assert lines[2][10] == ""
    assert lines[3][2] == "—" and lines[3][-1] == "error: no \\| program"


def test_more_than_six_registers_need_the_simulated_flag(capsys):
    code, out, err = run(capsys, "bench", "sobel", "--ops", "all", "--registers", "8")
    assert code == 2 and out == ""  # a usage error (issue 14: it exited 1)
    assert "--simulated-registers" in err and "Traceback" not in err


def test_simulated_registers_compile_for_the_wide_target(capsys, tmp_path):
    code, out, err = run(capsys, "bench", "sobel", "--ops", "all", "--registers", "8",
                         "--simulated-registers", "--out", str(tmp_path))
    assert code == 0, err
    assert out.startswith("Target scamp5_wide: a SIMULATED register file")
    data = json.loads((tmp_path / "bench.json").read_text(encoding="utf-8"))
    assert data["target"] == "scamp5_wide" and data["registers"] == "A B C D E F G H"
    assert data["rows"][0]["registers_budget"] == 8


def test_generality_suite_runs_a_couple_of_kernels_with_its_columns(capsys):
    code, out, err = run(capsys, "bench", "--suite", "generality", "roberts_a", "motion_diag",
                         "--ops", "all")
    assert code == 0, err
    header = next(line for line in out.splitlines() if line.startswith("| kernel"))
    for column in ("proven optimum", "best found", "horner", "kalg/best"):
        assert column in header
    rows = table_rows(out)
    assert [r[:2] for r in rows] == [["roberts_a", "all"], ["motion_diag", "all"]]
    for _kernel, _ops, kalg, _opt, best, horner, *_ in rows:
        assert int(kalg) > 0 and int(horner) > 0
        assert best == "" or int(best) > 0
    assert "op set all: 2 kernels" in out


def test_generality_suite_has_40_kernels_none_of_them_in_the_benchmark():
    from kalg.frontend import load_file

    general = load_suite(bench_suite_path("generality"))
    bench = load_suite(bench_suite_path())
    assert len(general) >= 40
    assert not {e.name for e in general} & {e.name for e in bench}

    def kernels(entries):
        return {tuple(sorted(k.trimmed().taps.items()))
                for e in entries for k in load_file(e.path).definition(None).outputs.values()}

    assert not kernels(general) & kernels(bench)


def test_unknown_suite_name_is_a_clear_error(capsys):
    code, out, err = run(capsys, "bench", "--suite", "nosuchsuite")
    assert code == 1 and out == ""
    assert "no suite named 'nosuchsuite'" in err and "generality" in err
