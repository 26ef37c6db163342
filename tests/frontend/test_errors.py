"""Every class of user error in a .kalg file: located at line:col, in plain words, with a caret.

One row per error class: (id, source, line, column, message fragment). Each row is checked
through the library (`load_text`) and through the command line (`kalg check`), where it must
exit 1 with the rendered diagnostic on stderr and no traceback.
"""

import pytest

from kalg.cli import main
from kalg.diagnostics import KalgError, KalgSemanticError, KalgSyntaxError, SemiringError
from kalg.frontend import load_file, load_text
from kalg.frontend.parser import ERROR_EXAMPLES

SYNTAX = [
    ("unexpected-token", "kernel k = 1 + * 2", 1, 16, "unexpected '*': expected"),
    ("unexpected-end", "kernel k = [1] +", 1, 17, "unexpected end of file: expected"),
    ("unexpected-character", "kernel k = [1 2 1] $ 2", 1, 20, "unexpected character '$'"),
    ("unclosed-bracket", "kernel k = [1 2 1\n         2 4 2\nkernel j = [1]", 1, 12,
     "unclosed '['"),
    ("unclosed-paren", "kernel k = shift(1, 2\n", 1, 17, "unclosed '('"),
    ("unclosed-brace", "kernel k = [1]\ntarget scamp5 { ops: all", 2, 15, "unclosed '{'"),
    ("stray-closer", "kernel k = [1 2 1]]", 1, 19, "unexpected ']'"),
    ("missing-name", "kernel = [1]", 1, 8, "a definition needs a name"),
    # 'out', 'let' and 'pipeline' became keywords with pipelines: "kernel out = ..." said only
    # "a definition needs a name (found 'out')", not that the word is taken
    ("reserved-word-as-a-name", "kernel out = [1 2 1]", 1, 8, "'out' is a reserved word"),
    ("reserved-word-as-an-operand", "kernel k = [1]\nfilter f = [A: k, B: let]", 2, 22,
     "'let' is a reserved word"),
    # issue 14: a trailing ';' was "kernels are composed with '*'"; a negative depth was
    # "unexpected number -2: expected a number"
    ("trailing-semicolon", "kernel k = [1 2 1];", 1, 19, "';' ends a row inside a matrix"),
    ("trailing-semicolon-after-expression", "kernel k = (1 + x)^2;", 1, 21,
     "a statement ends at the line break, without ';'"),
    ("semicolon-after-a-default-lark-cannot-label", "semiring real\nkernel k = x + x;", 2, 17,
     "';' ends a row inside a matrix"),  # found by tests/fuzz: lark's matcher raised TypeError
    ("negative-approx-depth", "kernel k = [1 2 1] / 3 with approx depth -2", 1, 42,
     "an approximation setting takes a non-negative number"),
    ("missing-equals", "kernel k [1 2 1]", 1, 10, "expected '=' after the definition's name"),
    ("missing-expression", "kernel k =\nkernel j = [1]", 2, 1,
     "a definition needs an expression after '='"),
    ("juxtaposition", "kernel k = (1 + x)(1 + y)", 1, 19, "composed with '*'"),
    ("juxtaposition-after-matrix", "kernel k = [1 2 1\n 2 4 2\n 1 2 1] [1]", 3, 9,
     "composed with '*'"),
    ("bad-filter", "filter f = [A: k B: j]", 1, 18, "[REGISTER: expression, ...]"),
    ("bad-filter-after-statements",
     "kernel k = [1]\nkernel j = [2] filter f = [A: k B: j]", 2, 33,
     "[REGISTER: expression, ...]"),
    ("juxtaposition-third-statement", "kernel k = [1]\nkernel j = [2]\nkernel i = x [1]", 3,
     14, "composed with '*'"),
    ("bad-filter-many", "filter f = [A: k, B: j, C: i D: h]", 1, 30,
     "[REGISTER: expression, ...]"),
    # issue 11 audit: an empty filter said only "unexpected ']': expected a name"
    ("empty-filter", "filter f = []", 1, 13, "[REGISTER: expression, ...]"),
    ("name-in-matrix", "kernel k = [1 2; 3 4; 5 x]", 1, 25, "a matrix holds only numbers"),
    ("comma-in-matrix", "kernel k = [1 2 3 4, 5]", 1, 20, "a matrix holds only numbers"),
    ("bad-exponent", "kernel k = x^y", 1, 14, "an exponent is an integer"),
    ("fractional-exponent", "kernel k = x^1.5", 1, 14, "an exponent is an integer, not 1.5"),
    ("bad-target-list", "target scamp5 { registers: A, B, C }\nkernel k = [1]", 1, 32,
     "list registers as A B C"),
    ("fractional-origin", "kernel k = [1 1] @ (0.5, 0)", 1, 21, "integers, not 0.5"),
]

SEMANTIC = [
    ("ragged-rows", "kernel k = [1 2 1\n            2 4\n            1 2 1]", 2, 13,
     "ragged matrix: row 2 has 2 entries but row 1 has 3"),
    ("even-size-without-origin", "kernel k = [1 1; 1 1]", 1, 12, "a 2x2 matrix has no centre"),
    ("origin-outside", "kernel k = [1 1] @ (1, 0)", 1, 18, "outside the 1x2 matrix"),
    ("empty-matrix", "kernel k = []", 1, 12, "empty matrix"),
    ("unknown-name", "kernel sobel = [1]\nkernel k = sobl * 2", 2, 12, "unknown name 'sobl'"),
    ("used-before-definition", "kernel k = j\nkernel j = [1]", 1, 12,
     "'j' is used before its definition on line 2"),
    ("self-reference", "kernel k = k + 1", 1, 12, "refers to itself"),
    ("filter-as-value", "filter f = [A: x]\nkernel k = f", 2, 12, "'f' is a filter"),
    ("duplicate-name", "kernel k = [1]\n\nfilter k = [A: x]", 3, 8,
     "'k' is already defined on line 1"),
    ("monomial-name", "kernel x = [1]", 1, 8, "built-in monomial"),
    ("max-error-unreachable", "kernel k = [1 1 1]/3 with approx depth 3 max_error 0.001", 1, 8,
     "no approximation depth up to 3"),
    ("unknown-approx-param", "approx dept 4\nkernel k = [1]", 1, 8, "unknown approx parameter"),
    ("duplicate-approx-param", "approx depth 4 depth 5\nkernel k = [1]", 1, 16, "given twice"),
    ("fractional-depth", "approx depth 4.5\nkernel k = [1]", 1, 14, "whole number"),
    ("depth-too-deep", "approx depth 40\nkernel k = [1]", 1, 14, "deeper than kalg's limit"),
    ("zero-max-error", "approx max_error 0\nkernel k = [1]", 1, 18, "greater than 0"),
    ("compose-minplus-with-real", "kernel a = [0 1 0] with semiring minplus\nkernel b = a * [1]",
     2, 14, "cannot compose a minplus kernel and a real kernel"),
    ("subtract-in-minplus", "semiring minplus\nkernel k = [0 1] @ (0, 0) - [1]", 2, 27,
     "cannot subtract in the minplus semiring"),
    ("negate-in-maxplus", "kernel k = -[1] with semiring maxplus", 1, 12,
     "cannot negate in the maxplus semiring"),
    ("divide-in-boolean", "kernel k = [1 0 1] / 2 with semiring boolean", 1, 20,
     "cannot divide in the boolean semiring"),
    ("declared-semiring-mismatch", "kernel a = [1] with semiring minplus\nkernel b = a", 2, 8,
     "declared real but its value is a minplus kernel"),
    ("unknown-semiring", "semiring tropical\nkernel k = [1]", 1, 10, "unknown semiring 'tropical'"),
    ("setting-twice", "kernel k = [1] with semiring real, semiring minplus", 1, 36,
     "already given"),
    ("boolean-coefficient", "kernel k = [1 2] @ (0, 0) with semiring boolean", 1, 15,
     "a boolean coefficient is 0 or 1"),
    ("inf-in-real", "kernel k = [1 inf 1]", 1, 15, "only in the minplus and maxplus"),
    ("divide-by-kernel", "kernel k = [1] / x", 1, 16, "a divisor must be a number"),
    ("divide-by-zero", "kernel k = [1] / (1 - 1)", 1, 16, "division by zero"),
    ("negative-power", "kernel k = (1 + x)^-1", 1, 19, "only a monomial"),
    ("power-too-large", "kernel k = (1 + x)^100", 1, 19, "the power 100 is too large"),
    ("unknown-function", "kernel k = transpos([1])", 1, 12, "unknown function 'transpos'"),
    ("wrong-arity", "kernel k = flip([1], [2])", 1, 12, "flip takes 1 kernel, not 2"),
    ("shift-arity", "kernel k = shift(1)", 1, 12, "shift takes (dx, dy)"),
    ("shift-offset-not-integer", "kernel k = shift(1/2, 0)", 1, 19,
     "an offset must be an integer"),
    ("shift-offset-kernel", "kernel k = shift(x, 0)", 1, 18, "an offset must be a number"),
    ("register-not-in-target", "filter f = [A: x, G: y]", 1, 19, "'G' is not a register"),
    ("register-twice", "filter f = [A: x, A: y]", 1, 19, "register 'A' is given two outputs"),
    ("unknown-target", "target fpga { }\nkernel k = [1]", 1, 8, "unknown target 'fpga'"),
    ("cpu-target-has-no-registers", "target cpu { registers: A..F }\nkernel k = [1]", 1, 14,
     "the cpu target has no registers"),
    ("second-target", "target scamp5 { }\ntarget scamp5 { }\nkernel k = [1]", 2, 1,
     "a second target block"),
    ("unknown-target-field", "target scamp5 { regs: A..F }\nkernel k = [1]", 1, 17,
     "unknown target field 'regs'"),
    ("input-not-a-register", "target scamp5 { registers: A..C, input: D }\nkernel k = [1]", 1,
     34, "the input register 'D' is not one of the registers A, B, C"),
    ("bad-register-range", "target scamp5 { registers: F..A }\nkernel k = [1]", 1, 28,
     "the register range F..A is empty"),
    ("unknown-op-set", "target scamp5 { ops: fancy }\nkernel k = [1]", 1, 22,
     "unknown op set 'fancy'"),
    ("empty-file", "", 1, 1, "empty file"),
    ("comments-only", "# just a comment\n\n", 1, 1, "empty file"),
    ("no-definitions", "target scamp5 { }\n", 1, 1, "no definitions"),
]


def _row_ids(rows):
    return [row[0] for row in rows]


@pytest.mark.parametrize(("name", "source", "line", "column", "fragment"),
                         SYNTAX + SEMANTIC, ids=_row_ids(SYNTAX + SEMANTIC))
def test_error_is_located_and_worded(name, source, line, column, fragment):
    with pytest.raises(KalgError) as caught:
        load_text(source, "bad.kalg")
    err = caught.value
    assert fragment in err.message
    assert (err.span.path, err.span.line, err.span.column) == ("bad.kalg", line, column)
    rendered = err.render()
    assert rendered.startswith(f"bad.kalg:{line}:{column}: error: ")
    source_line = source.splitlines()[line - 1] if source.strip() else ""
    if source_line:
        assert rendered.splitlines()[1:3] == [source_line, " " * (column - 1) + "^" *
                                              len(rendered.splitlines()[2].strip())]


@pytest.mark.parametrize(("name", "source", "line", "column", "fragment"), SYNTAX,
                         ids=_row_ids(SYNTAX))
def test_syntax_errors_are_syntax_errors(name, source, line, column, fragment):
    with pytest.raises(KalgSyntaxError):
        load_text(source)


@pytest.mark.parametrize(("name", "source", "line", "column", "fragment"), SEMANTIC,
                         ids=_row_ids(SEMANTIC))
def test_semantic_errors_are_semantic_errors(name, source, line, column, fragment):
    with pytest.raises(KalgSemanticError):
        load_text(source)


def test_semiring_errors_have_their_own_class():
    with pytest.raises(SemiringError):
        load_text("semiring minplus\nkernel k = [1] - [1]")


@pytest.mark.parametrize(("name", "source", "line", "column", "fragment"),
                         SYNTAX + SEMANTIC, ids=_row_ids(SYNTAX + SEMANTIC))
def test_cli_reports_errors_without_traceback(name, source, line, column, fragment, tmp_path,
                                              capsys):
    path = tmp_path / "bad.kalg"
    path.write_text(source)
    assert main(["check", str(path)]) == 1
    out, err = capsys.readouterr()
    assert out == ""
    assert err.startswith(f"{path}:{line}:{column}: error: ")
    assert fragment in err
    assert "Traceback" not in err
    if source.strip():
        assert "^" in err


@pytest.mark.parametrize("label", sorted(ERROR_EXAMPLES))
def test_every_syntax_label_is_reachable(label):
    """Each label in the parser's example table is produced by at least one row above."""
    assert any(label in _message(row[1]) for row in SYNTAX)


def _message(source: str) -> str:
    try:
        load_text(source)
    except KalgError as err:
        return err.message
    return ""


def test_unknown_name_suggests_a_close_one():
    with pytest.raises(KalgError) as caught:
        load_text("kernel sobel_x = [1]\nkernel k = sobelx")
    assert "did you mean 'sobel_x'?" in caught.value.hint
    assert "did you mean 'sobel_x'?" in caught.value.render()


@pytest.mark.parametrize(("source", "hint"), [
    ("kernel k = [1 2 1] \u2212 1", "write '-' (ASCII) instead of '\u2212'"),
    ("kernel k = [1 2 1] \u00d7 2", "write '*' (ASCII) instead of '\u00d7'"),
    ("kernel k = [1\u00a02 1]", "white space .kalg does not take: write a plain space"),
    ("kernel gr\u00f6\u00dfe = [1]", "names are ASCII letters, digits and '_'"),
])
def test_an_unexpected_character_says_what_to_write_instead(source, hint):
    # Regression (issue 11 audit): a minus sign, a times sign or a no-break space pasted from
    # a paper got "unexpected character" and nothing about what would be right
    with pytest.raises(KalgSyntaxError) as caught:
        load_text(source)
    assert hint in caught.value.hint


def test_the_caret_under_a_line_with_a_tab_keeps_the_tab():
    # Regression (issue 11 audit): the caret line was spaces only, so under a line with a tab
    # the caret stood columns to the left of the error
    with pytest.raises(KalgError) as caught:
        load_text("kernel a = [1 2 1]\t+ b")
    line, caret = caught.value.render().splitlines()[1:3]
    assert caret == "\t".join([" " * 18, "  ^"]) and line.index("b") == caret.index("^")


def test_shift_of_a_kernel_by_one_offset_says_the_two_forms():
    # Regression (issue 11 audit): shift([1 2 1], 1) said "an offset must be a number, not a
    # kernel ..." and not that shift takes (dx, dy) or (kernel, dx, dy)
    with pytest.raises(KalgSemanticError) as caught:
        load_text("kernel a = shift([1 2 1], 1)")
    assert "(kernel, dx, dy)" in caught.value.hint and caught.value.span.column == 18


def test_non_dyadic_error_says_how_to_approximate():
    err = load_text("kernel k = [1 1 1]/3").definition().unapproximated["A"]
    assert "approx" in err.hint and "--target cpu" in err.hint


def test_unreadable_file_is_a_kalg_error(tmp_path):
    with pytest.raises(KalgError, match="cannot read"):
        load_file(tmp_path / "missing.kalg")
    assert main(["check", str(tmp_path / "missing.kalg")]) == 1


@pytest.mark.parametrize(("label", "example"),
                         [(label, e) for label, examples in sorted(ERROR_EXAMPLES.items())
                          for e in examples])
def test_every_example_gets_its_own_label(label, example):
    with pytest.raises(KalgSyntaxError) as caught:
        load_text(example)
    assert caught.value.message.startswith(label)


NON_DYADIC = [
    ("non-dyadic", "kernel k = [1 1 1]/3", 1, 8,
     "non-dyadic coefficient 1/3 at offset (-1, 0)"),
    ("non-dyadic-decimal", "filter f = [A: x, B: 0.1 * y]", 1, 19, "non-dyadic coefficient 1/10"),
]


@pytest.mark.parametrize(("name", "source", "line", "column", "fragment"), NON_DYADIC,
                         ids=_row_ids(NON_DYADIC))
def test_non_dyadic_is_a_located_scamp5_error_only(name, source, line, column, fragment,
                                                   tmp_path, capsys):
    # the frontend keeps the exact kernel (a CPU multiplies); SCAMP-5 can only halve
    path = tmp_path / "bad.kalg"
    path.write_text(source)
    assert load_text(source).definition().outputs  # no error in the language itself
    assert main(["optimize", str(path)]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"{path}:{line}:{column}: error: ") and fragment in err
    assert main(["optimize", str(path), "--target", "cpu"]) == 0
