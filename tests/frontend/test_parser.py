"""Parser tests: the grammar loads cleanly and the AST has the expected shape and spans."""

import dataclasses
import logging
from fractions import Fraction

import pytest
from lark import Lark

from kalg import resources
from kalg.frontend import ast
from kalg.frontend.parser import parse


def test_grammar_is_found_and_has_no_lalr_conflicts(caplog):
    path = resources.grammar_path()
    assert path.name == "kalg.lark" and path.is_file()
    with caplog.at_level(logging.DEBUG, logger="lark"):
        Lark.open(str(path), parser="lalr", debug=True)
    conflicts = [r.getMessage() for r in caplog.records if "conflict" in r.getMessage()]
    assert conflicts == []


def _expr(text: str) -> ast.Expr:
    (definition,) = parse(f"kernel k = {text}").statements
    assert isinstance(definition, ast.KernelDef)
    return definition.expr


def _values(matrix: ast.Matrix) -> list[list]:
    return [[cell.value for cell in row] for row in matrix.rows]


def test_matrix_rows_end_at_semicolons_and_line_breaks():
    by_semicolon = _expr("[1 2 1; 2 4 2; 1 2 1]")
    by_line = _expr("[1 2 1\n 2 4 2\n 1 2 1]")
    mixed = _expr("[ 1 2 1 ;\n  2 4 2\n  1 2 1 ; ]")
    assert _values(by_semicolon) == _values(by_line) == _values(mixed) == [
        [1, 2, 1], [2, 4, 2], [1, 2, 1]]


def test_matrix_cells_no_entry_fractions_decimals_and_inf():
    matrix = _expr("[. 0 -1/4; 0.1 +2 -inf; inf 3 .]")
    assert _values(matrix) == [[None, 0, Fraction(-1, 4)],
                               [Fraction(1, 10), 2, float("-inf")],
                               [float("inf"), 3, None]]
    assert matrix.origin is None


def test_matrix_origin():
    matrix = _expr("[1 1; 1 1] @ (0, 1)")
    assert matrix.origin == (0, 1)
    assert (matrix.origin_span.line, matrix.origin_span.column) == (1, 23)


def test_decimals_are_read_exactly():
    assert _expr("0.1") == ast.Number(Fraction(1, 10), _expr("0.1").span)
    assert _expr("0.1").value != Fraction(0.1)


def test_precedence_and_associativity():
    expr = _expr("1 + x * y ^ -1 - -2 / 4")
    assert isinstance(expr, ast.Sub)
    assert isinstance(expr.left, ast.Add)
    product = expr.left.right
    assert isinstance(product, ast.Mul) and isinstance(product.right, ast.Pow)
    assert product.right.exponent == -1
    assert isinstance(expr.right, ast.Div) and isinstance(expr.right.left, ast.Neg)


def test_scalar_factors_are_left_associative():
    expr = _expr("k * 3/4")
    assert isinstance(expr, ast.Div) and isinstance(expr.left, ast.Mul)


def test_operator_nodes_are_located_at_their_operator():
    expr = _expr("[1] *  [2]")
    assert isinstance(expr, ast.Mul)
    assert (expr.span.line, expr.span.column) == (1, 16)
    assert expr.span.path == "<string>"


def test_calls_and_names():
    expr = _expr("shift(transpose(sobel), -1, 2)")
    assert isinstance(expr, ast.Call) and expr.function == "shift"
    assert len(expr.arguments) == 3
    assert expr.arguments[0] == ast.Call("transpose", (ast.Name("sobel", expr.arguments[0]
                                                                 .arguments[0].span),),
                                         expr.arguments[0].span)


def test_settings_target_and_filters():
    program = parse("""
        semiring minplus   # a comment
        approx depth 6 max_error 1/64
        filter f = [A: k, B: j,] with semiring real, approx max_error 0.01
        target scamp5 { registers: A..D F, input: B, ops: basic }
    """, "t.kalg")
    semiring, approx, filt, target = program.statements
    assert semiring.name == "minplus" and semiring.span.line == 2
    assert [(p.name, p.value) for p in approx.params] == [("depth", 6),
                                                          ("max_error", Fraction(1, 64))]
    assert [o.register for o in filt.outputs] == ["A", "B"]
    assert [type(s) for s in filt.settings] == [ast.SemiringSetting, ast.ApproxSetting]
    assert [f.name for f in target.fields] == ["registers", "input", "ops"]
    assert [(i.first, i.last) for i in target.fields[0].items] == [("A", "D"), ("F", None)]
    assert program.path == "t.kalg"


def test_keywords_are_not_names_where_a_statement_can_start():
    program = parse("kernel a = b\nkernel c = d")
    assert [s.name for s in program.statements] == ["a", "c"]


def test_ast_nodes_are_frozen():
    expr = _expr("x")
    with pytest.raises(dataclasses.FrozenInstanceError):
        expr.name = "y"


def test_empty_text_parses_to_no_statements():
    assert parse("  # only a comment\n").statements == ()
