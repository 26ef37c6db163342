"""`kalg optimize --exhaustive`: the header says "proven shortest" only when it is proven."""

from __future__ import annotations

from pathlib import Path

from cli_run import run
from kalg.cli import main
from kalg.targets.scamp5.machine.text import parse_program

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
FAST = ["--time-limit", "1", "--node-limit", "8000"]


def test_a_tiny_kernel_is_proven_shortest(capsys, tmp_path):
    src = tmp_path / "pair.kalg"
    src.write_text("kernel pair = [1 0 1]\n")
    code, out, err = run(capsys, "optimize", str(src), "--exhaustive", *FAST)
    assert code == 0, err
    assert "length: proven shortest (op set all, 6 registers" in out
    assert len(parse_program(out)) == 2


def test_an_unfinished_search_says_what_it_proved_and_not_more(capsys):
    code, out, err = run(capsys, "optimize", str(EXAMPLES / "sobel.kalg"), "--exhaustive",
                         "--exhaustive-nodes", "2000", *FAST)
    assert code == 0, err
    header = [line for line in out.splitlines() if line.startswith("// length:")]
    assert len(header) == 1
    assert "proven shortest" not in header[0]
    assert "not proven: no program shorter than" in header[0]
    assert "search bound reached (nodes" in header[0]


def test_without_the_option_the_header_claims_nothing_for_a_longer_program(capsys):
    code, out, err = run(capsys, "optimize", str(EXAMPLES / "gauss3.kalg"), *FAST)
    assert code == 0, err
    assert len(parse_program(out)) > 5
    assert "proven" not in out


def test_a_bad_node_budget_is_a_usage_error(capsys):
    code = None
    try:
        code = main(["optimize", str(EXAMPLES / "sobel.kalg"), "--exhaustive-nodes", "0"])
    except SystemExit as stop:
        code = stop.code
    assert code == 2
    assert "expected a positive whole number" in capsys.readouterr().err


def test_a_short_program_is_proven_by_default(capsys, tmp_path):
    """Programs of at most five instructions get the exact search without asking (cheap)."""
    src = tmp_path / "diag.kalg"
    src.write_text("kernel diag = [1 0 0; 0 1 0; 0 0 1]\n")
    code, out, err = run(capsys, "optimize", str(src), *FAST)
    assert code == 0, err
    assert "length: proven shortest (op set all, 6 registers" in out
    assert len(parse_program(out)) == 3


def test_a_five_instruction_program_is_proven_by_default(capsys):
    code, out, err = run(capsys, "optimize", str(EXAMPLES / "sobel.kalg"), *FAST)
    assert code == 0, err
    assert "length: proven shortest (op set all, 6 registers" in out
    assert len(parse_program(out)) == 5


def test_the_length_header_has_no_semicolon_so_counting_semicolons_counts_instructions(
        capsys, tmp_path):
    src = tmp_path / "pair.kalg"
    src.write_text("kernel pair = [1 0 1]\n")
    for extra in ([], ["--exhaustive-nodes", "5"]):
        code, out, err = run(capsys, "optimize", str(src), "--exhaustive", *extra, *FAST)
        assert code == 0, err
        assert "// length:" in out
        assert out.count(";") - 2 == len(parse_program(out))  # begin and end lines


def test_without_the_option_a_six_instruction_program_meets_a_cheap_five(capsys, tmp_path):
    """A random sparse kernel (seed 4242) that the code generator compiles to 6 instructions
    has a 5-instruction program within the default compile's bounded exact search
    (`pipeline.FIND_NODES`): the default compile prints that one, proven shortest."""
    src = tmp_path / "sparse.kalg"
    src.write_text("target scamp5 { registers: A..F, input: A, ops: all }\n"
                   "kernel k = [ 2 2 0; 0 2 0; 0 0 -1 ]\n")
    code, out, err = run(capsys, "optimize", str(src))
    assert code == 0, err
    assert len(parse_program(out)) == 5
    assert "length: proven shortest (op set all, 6 registers" in out


def test_seven_registers_are_not_longer_than_six_when_the_exact_search_shortens(capsys,
                                                                                tmp_path):
    """Regression: the default compile's exact searches ran only for budgets of at most six
    registers, so this kernel was 5 instructions on A..F and 6 on the wider A..G. They now run
    on six of the registers whatever the budget, and say so in the header."""
    src = tmp_path / "sparse.kalg"
    src.write_text("kernel k = [ 2 2 0; 0 2 0; 0 0 -1 ]\n")
    lengths = {}
    for registers in ("A..F", "A..G"):
        code, out, err = run(capsys, "optimize", str(src), "--target", "scamp5_wide",
                             "--registers", registers)
        assert code == 0, err
        lengths[registers] = len(parse_program(out))
        assert "length: proven shortest (op set all, 6 registers" in out
    assert lengths["A..G"] <= lengths["A..F"] == 5
