"""SCAMP-5 program text: printing, parsing, round trips and located errors."""

from __future__ import annotations

from dataclasses import fields

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kalg.diagnostics import KalgError, KalgSyntaxError, ProgramError
from kalg.targets.scamp5.machine.isa import (
    ALL_MACROS,
    OP_SETS,
    REGISTERS,
    Add,
    Add3,
    Addx,
    Dir,
    Div,
    Div4,
    Instr,
    Movx,
    Sub2x,
    op_set_violation,
)
from kalg.targets.scamp5.machine.text import format_program, parse_program

SOBEL_TEXT = """\
scamp5_kernel_begin();
movx(B, A, south);
add(B, B, A);
movx(A, B, north);
addx(B, B, A, east);
sub2x(A, B, west, west, B);
scamp5_kernel_end();
"""
"""Cain's 5-instruction Sobel-x as the spec prints it."""

SOBEL = [Movx("B", "A", Dir.SOUTH), Add("B", "B", "A"), Movx("A", "B", Dir.NORTH),
         Addx("B", "B", "A", Dir.EAST), Sub2x("A", "B", Dir.WEST, Dir.WEST, "B")]


def test_format_prints_the_host_form() -> None:
    assert format_program(SOBEL) == SOBEL_TEXT


def test_format_puts_header_lines_first_as_comments() -> None:
    text = format_program(SOBEL[:1], header=["kernel: sobel", ""])
    assert text.splitlines()[:3] == ["// kernel: sobel", "//", "scamp5_kernel_begin();"]
    assert parse_program(text) == SOBEL[:1]


def test_parse_reads_the_host_form() -> None:
    assert parse_program(SOBEL_TEXT) == SOBEL


def test_parse_skips_comments_blank_lines_and_free_layout() -> None:
    text = ("// Sobel, by hand\n\nscamp5_kernel_begin();  // start\n"
            "  movx(B,A,south); add(B, B,\n A);\n\n"
            "movx(A, B, north);addx(B, B, A, east);\n"
            "sub2x(A, B, west, west, B); // done\nscamp5_kernel_end();\n// trailing comment\n")
    assert parse_program(text) == SOBEL


def test_parse_accepts_a_bare_instruction_list() -> None:
    assert parse_program("movx(B, A, south);\nadd(B, B, A);") == SOBEL[:2]
    assert parse_program("") == []


def test_add_and_div_choose_the_macro_by_argument_count() -> None:
    assert parse_program("add(A, B, C); add(A, B, C, D);") == [Add("A", "B", "C"),
                                                               Add3("A", "B", "C", "D")]
    assert parse_program("div(A, B, C); div(A, B, C, D);") == [Div("A", "B", "C"),
                                                               Div4("A", "B", "C", "D")]


def test_parsed_directions_are_dir_values() -> None:
    (instr,) = parse_program("movx(A, B, west);")
    assert instr.d is Dir.WEST  # type: ignore[attr-defined]


# ---------------------------------------------------------------------------- round trips
def _argument(is_dir: bool) -> st.SearchStrategy:
    return st.sampled_from(list(Dir)) if is_dir else st.sampled_from(REGISTERS)


@st.composite
def _any_instruction(draw: st.DrawFn) -> Instr:
    cls = draw(st.sampled_from(ALL_MACROS))
    kinds = [f.type in ("Dir", Dir) for f in fields(cls)]  # type: ignore[arg-type]
    return cls(*[draw(_argument(is_dir)) for is_dir in kinds])


def instructions() -> st.SearchStrategy[Instr]:
    """Any valid instruction of any macro."""
    return _any_instruction().filter(lambda instr: instr.violation() is None)


@settings(max_examples=200, deadline=None)
@given(st.lists(instructions(), max_size=12))
def test_format_then_parse_is_the_identity(program: list[Instr]) -> None:
    assert parse_program(format_program(program)) == program


@settings(max_examples=100, deadline=None)
@given(st.lists(instructions(), min_size=1, max_size=6), st.sampled_from(sorted(OP_SETS)))
def test_op_set_filter_agrees_with_isa(program: list[Instr], op_set: str) -> None:
    text = format_program(program)
    outside = [i for i, ins in enumerate(program) if op_set_violation(ins, op_set)]
    if not outside:
        assert parse_program(text, op_set=op_set) == program
        return
    with pytest.raises(ProgramError) as err:
        parse_program(text, op_set=op_set)
    assert err.value.span.line == outside[0] + 2  # after the begin line
    assert err.value.span.column == 1


# ---------------------------------------------------------------------------- errors
ERRORS = [
    # text, op set, error type, line, column, words in the message
    ("neg(A, A);", None, ProgramError, 1, 1, "neg needs y != x0"),
    ("add(A, B, B);", None, ProgramError, 1, 1, "two different operands"),
    ("add(A, B, C, B);", None, ProgramError, 1, 1, "pairwise different"),
    ("sub(B, A, B);", None, ProgramError, 1, 1, "sub needs y != x1"),
    ("subx(B, A, east, B);", None, ProgramError, 1, 1, "subx needs y != x1"),
    ("divq(A, A);", None, ProgramError, 1, 1, "divq needs y != x0"),
    ("div(A, B, A);", None, ProgramError, 1, 1, "all different"),
    ("div(A, B, C, A);", None, ProgramError, 1, 1, "all different"),
    ("diva(A, B, A);", None, ProgramError, 1, 1, "all different"),
    ("addx(A, B, B, east);", None, ProgramError, 1, 1, "x0 != x1"),
    ("mov2x(A, B, north, south);", None, ProgramError, 1, 1, "perpendicular"),
    ("mov2x(A, B, east, west);", None, ProgramError, 1, 1, "perpendicular"),
    ("movx(A, G, north);", None, ProgramError, 1, 9, "register 'G' does not exist on SCAMP-5"),
    ("movx(A, R7, north);", None, ProgramError, 1, 9, "unknown register 'R7'"),
    ("mov(a, B);", None, ProgramError, 1, 5, "unknown register 'a'"),
    ("movx(A, NEWS, north);", None, ProgramError, 1, 9, "NEWS cannot be named"),
    ("movx(A, B, up);", None, ProgramError, 1, 12, "unknown direction 'up'"),
    ("movx(A, B, North);", None, ProgramError, 1, 12, "unknown direction 'North'"),
    ("movx(A, B, C);", None, ProgramError, 1, 12, "expected a direction, found register 'C'"),
    ("mov(north, A);", None, ProgramError, 1, 5, "expected a register, found direction"),
    ("divq(B, A);", "all", ProgramError, 1, 1, "divq is not in op set 'all'"),
    ("addx(B, A, C, east);", "basic", ProgramError, 1, 1, "addx is not in op set 'basic'"),
    ("add(A, B, C, D);", "basic", ProgramError, 1, 1, "add with 4 arguments is not in op set"),
    ("div(A, B, C);", "basic", ProgramError, 1, 1, "div with 3 arguments is not in op set"),
    ("frob(A, B);", None, KalgSyntaxError, 1, 1, "unknown macro 'frob'"),
    ("add(A, B);", None, KalgSyntaxError, 1, 9, "add takes 3 or 4 arguments, got 2"),
    ("mov(A, B, C);", None, KalgSyntaxError, 1, 11, "mov takes 2 arguments, got 3"),
    ("res();", None, KalgSyntaxError, 1, 5, "res takes 1 arguments, got 0"),
    ("mov(A, B)", None, KalgSyntaxError, 1, 10, "expected ';' after ')', found end of file"),
    ("mov(A B);", None, KalgSyntaxError, 1, 7, "expected ',' or ')', found 'B'"),
    ("mov A, B;", None, KalgSyntaxError, 1, 5, "expected '(' after 'mov'"),
    ("mov(A, 2);", None, KalgSyntaxError, 1, 8, "unexpected character '2'"),
    ("mov(A, B); # comment", None, KalgSyntaxError, 1, 12, "unexpected character '#'"),
    ("mov(A, B);\nscamp5_kernel_begin();", None, KalgSyntaxError, 2, 1, "before every instr"),
    ("scamp5_kernel_begin();\nmov(A, B);", None, KalgSyntaxError, 1, 1, "never closed"),
    ("scamp5_kernel_end();", None, KalgSyntaxError, 1, 1, "without scamp5_kernel_begin"),
    ("scamp5_kernel_begin(A);", None, KalgSyntaxError, 1, 21, "takes no arguments"),
    ("scamp5_kernel_begin();\nscamp5_kernel_end();\nmov(A, B);", None, KalgSyntaxError, 3, 1,
     "instruction after scamp5_kernel_end"),
    ("scamp5_kernel_begin();\n  movx(B, A, south);\n  add(A, B, B);\nscamp5_kernel_end();",
     None, ProgramError, 3, 3, "two different operands"),
]


@pytest.mark.parametrize(("text", "op_set", "kind", "line", "column", "words"), ERRORS,
                         ids=[e[0].replace("\n", "|") for e in ERRORS])
def test_errors_are_located(text: str, op_set: str | None, kind: type, line: int, column: int,
                            words: str) -> None:
    with pytest.raises(KalgError) as err:
        parse_program(text, "prog.scamp5", op_set=op_set)
    assert type(err.value) is kind
    assert words in err.value.message
    assert (err.value.span.path, err.value.span.line, err.value.span.column) == \
        ("prog.scamp5", line, column)


def test_error_renders_file_line_column_and_caret() -> None:
    with pytest.raises(ProgramError) as err:
        parse_program("scamp5_kernel_begin();\n  neg(C, C);\nscamp5_kernel_end();", "p.scamp5")
    assert err.value.render().splitlines() == [
        "p.scamp5:2:3: error: neg needs y != x0", "  neg(C, C);", "  ^^^^^^^^^"]


def test_unknown_register_error_lists_the_registers() -> None:
    with pytest.raises(ProgramError) as err:
        parse_program("mov(A, R7);")
    assert err.value.hint == "registers are A, B, C, D, E, F"
    with pytest.raises(ProgramError) as err:
        parse_program("mov(A, G);")
    assert err.value.hint.startswith("registers are A, B, C, D, E, F; G..Z exist only in the "
                                     "simulated wide register file")


def test_unknown_op_set_is_a_programming_error() -> None:
    with pytest.raises(ValueError, match="unknown op set 'most'"):
        parse_program("mov(A, B);", op_set="most")
