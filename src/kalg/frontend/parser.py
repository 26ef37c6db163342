"""Parsing: .kalg text → `ast.Program`, or a `KalgSyntaxError` in plain words.

The only module that imports lark. The grammar (`grammar/kalg.lark`) is loaded once per process
with the LALR parser and position propagation; a Transformer turns the parse tree into
`kalg.frontend.ast` nodes, each carrying a `Span`. Syntax errors are labelled by the examples in
`ERROR_EXAMPLES` (lark's `match_examples`) or, failing that, described from the parser's set of
expected tokens; an unclosed bracket is reported at the bracket that opened it.
"""

from __future__ import annotations

import re
from fractions import Fraction
from functools import cache

from lark import Lark, Token, Transformer, Tree, v_args
from lark.exceptions import UnexpectedCharacters, UnexpectedInput, UnexpectedToken, VisitError

from kalg import resources
from kalg.diagnostics import KalgError, KalgSemanticError, KalgSyntaxError, Span
from kalg.frontend import ast

FRIENDLY_TERMINALS = {
    "NAME": "a name",
    "NUMBER": "a number",
    "ENTRY": "a matrix entry (a number, '.' or inf)",
    "$END": "the end of the file",
}
"""Plain words for the terminals whose grammar pattern is a regular expression."""

_STRAY_SEMICOLON = ("';' ends a row inside a matrix [...]; a statement ends at the line break, "
                    "without ';'")

ERROR_EXAMPLES: dict[str, list[str]] = {
    "a definition needs a name: 'kernel NAME = ...'": [
        "kernel = [1]", "filter = [A: k]",
    ],
    "expected '=' after the definition's name": [
        "kernel k [1]", "kernel k 1", "filter f [A: k]", "kernel k", "filter f",
    ],
    "a definition needs an expression after '='": [
        "kernel k =", "kernel k = kernel j = [1]", "kernel k = filter f = [A: j]",
        "kernel k = target scamp5 {}",
    ],
    "kernels are composed with '*': write (a) * (b)": [
        "kernel k = (x) (y)", "kernel k = (x) y", "kernel k = [1] [1]", "kernel k = x y",
        "kernel k = 2 x", "kernel k = (1 + x)(1 + y)", "kernel k = [1] x", "kernel k = x [1]",
    ],
    "a filter lists its outputs as [REGISTER: expression, ...]": [
        "filter f = k", "filter f = [k]", "filter f = [A k]", "filter f = [A: k B: j]",
        "filter f = [A: k, B]", "filter f = [A: k, B j]", "filter f = [A: k, B: j C]",
        "filter f = [A: k, B: j, C]", "filter f = [A: k, B: j, C i]",
        "filter f = [A: k, B: j, C: i D]", "filter f = []",
    ],
    "a matrix holds only numbers, '.' (no entry) and inf; rows end at ';' or a line break": [
        "kernel k = [x]", "kernel k = [1 x]", "kernel k = [1 2; 1 x]", "kernel k = [1 (2)]",
        "kernel k = [1 2 (3)]", "kernel k = [(1)]", "kernel k = [1 2, 3]", "kernel k = [1, 2]",
        "kernel k = [1 2 3, 4]", "kernel k = [,]",
    ],
    "an exponent is an integer, e.g. x^2 or x^-1": [
        "kernel k = x^y", "kernel k = x^(2)", "kernel k = x^-y", "kernel k = x^-(1)",
        "kernel k = x^[1]",
    ],
    "an approximation setting takes a non-negative number: 'approx depth D' (an integer, "
    "0 or more) and 'max_error E'": [
        "approx depth -2", "kernel k = [1] with approx depth -2",
        "approx max_error -1", "kernel k = [1] with approx max_error -1",
        "approx depth 6 max_error -1", "kernel k = [1] with approx depth 6 max_error -1",
    ],
    _STRAY_SEMICOLON: [
        "kernel k = [1];", "kernel k = x;", "kernel k = (x);", "kernel k = [1] / 4;",
        "kernel k = x + y;", "filter f = [A: k];",
    ],
    "each target field is 'NAME: value'; list registers as A B C, A..F or [A, B, C]": [
        "target scamp5 { registers: A, B }", "target scamp5 { registers: A, B, C }",
        "target scamp5 { registers: A B, C }", "target scamp5 { registers: A..C, D }",
        "target scamp5 { registers: A..C, D E }", "target scamp5 { registers }",
        "target scamp5 { input A }",
    ],
}
"""Labels for common syntax errors, each with example inputs that end in the same parser state.

lark matches an error to an example only when the parser's state *and stack depth* agree, so
each label lists one- and many-item variants (see docs/style.md §1.5)."""

_EARLIER_STATEMENT = "kernel k0 = [1]\n"
"""Prefix for a second copy of every example: after a first statement the parser's stack is one
level deeper, and stays so for every later statement."""

_OPENERS = {"[": "]", "(": ")", "{": "}"}
_CLOSERS = {v: k for k, v in _OPENERS.items()}


MAX_NESTING = 200
"""Deepest expression kalg takes: each operator, parenthesis and call is one level, so a sum of
n terms written a + b + ... is about n levels. The front end and the algebra walk expressions
recursively (Python's stack: 250 levels of `+` ended in RecursionError); a matrix or named
parts hold any size."""


def parse(text: str, path: str = "<string>") -> ast.Program:
    """Parse .kalg `text` (read from `path`) into a Program; raise KalgSyntaxError if it is not,
    and KalgSemanticError if an expression is nested deeper than `MAX_NESTING`."""
    try:
        tree = _lark().parse(text)
    except UnexpectedInput as err:
        raise _syntax_error(err, text, path) from None
    _check_nesting(tree, text, path)
    try:
        statements = _ToAst(path, text).transform(tree)
    except VisitError as err:
        if isinstance(err.orig_exc, KalgError):
            raise err.orig_exc from None
        raise
    return ast.Program(tuple(statements), path, text)


_NOT_LEVELS = frozenset({"start", "kernel_def", "filter_def", "outputs", "output", "arguments"})
"""Parse-tree nodes that are not expression levels (a call is one level, not two)."""


def _check_nesting(tree: Tree, text: str, path: str) -> None:
    """Refuse, at the first place it happens, an expression deeper than `MAX_NESTING` (walked
    with a stack of its own: the tree may be deeper than Python's)."""
    stack = [(tree, 0)]
    while stack:
        node, depth = stack.pop()
        if depth > MAX_NESTING:
            meta = node.meta
            span = Span(path, getattr(meta, "line", 1), getattr(meta, "column", 1), text)
            raise KalgSemanticError(
                f"this expression is nested more than {MAX_NESTING} levels deep (each "
                f"operator, parenthesis and call is a level: a sum of n terms written "
                f"a + b + ... is about n): kalg takes at most {MAX_NESTING}", span,
                "write a long sum as a matrix, or name its parts (kernel a = ..., kernel b = "
                "..., then a + b)")
        step = 0 if node.data in _NOT_LEVELS else 1
        stack.extend((child, depth + step) for child in node.children if isinstance(child, Tree))


@cache
def _lark() -> Lark:
    """The LALR parser. Building its tables from the grammar takes about 0.03 s, every compile;
    lark's own cache (`cache=True`: a pickle in the temporary directory, named by a hash of the
    grammar, the options and lark's version, so an edited grammar or another lark never reads a
    stale one) loads them in a fifth of that. A cache that cannot be read or written is built
    from the grammar as before (lark logs nothing at its default level)."""
    return Lark.open(str(resources.grammar_path()), parser="lalr", propagate_positions=True,
                     maybe_placeholders=False, cache=True)


@cache
def reserved_words() -> frozenset[str]:
    """The words the grammar's NAME terminal excludes (keywords: `kernel`, `out`, ...)."""
    pattern = _lark().get_terminal("NAME").pattern.value
    return frozenset(re.search(r"\(\?!\(([a-z|]+)\)", pattern).group(1).split("|"))


# ----------------------------------------------------------------------- syntax errors
def _syntax_error(err: UnexpectedInput, text: str, path: str) -> KalgSyntaxError:
    """The most helpful diagnostic for a failed parse."""
    if (unclosed := _unclosed_bracket(text, path, err.line, err.column)) is not None:
        return unclosed
    span = Span(path, max(err.line, 1), max(err.column, 1), text)
    if isinstance(err, UnexpectedToken):
        found = _describe_token(err.token)
        label = _label(err)
        if _names_a_reserved_word(err, label):
            return KalgSyntaxError(
                f"{str(err.token)!r} is a reserved word of .kalg and cannot name anything "
                f"(reserved: {', '.join(sorted(reserved_words()))}): choose another name",
                _token_span(err.token, span))
        if label:
            return KalgSyntaxError(f"{label} (found {found})", _token_span(err.token, span))
        if err.token.type == "SEMICOLON":  # outside a matrix, in any parser state
            return KalgSyntaxError(f"{_STRAY_SEMICOLON} (found ';')", _token_span(err.token, span))
        expected = _describe_expected(err.accepts or err.expected)
        return KalgSyntaxError(f"unexpected {found}: expected {expected}",
                               _token_span(err.token, span))
    assert isinstance(err, UnexpectedCharacters)
    char = text[err.pos_in_stream] if err.pos_in_stream < len(text) else ""
    return KalgSyntaxError(f"unexpected character {char!r}", span, hint=_lookalike(char))


_LOOKALIKES = {"\u2212": "-", "\u2013": "-", "\u2014": "-", "\u00d7": "*", "\u22c5": "*",
               "\u00b7": "*", "\u2215": "/", "\u00f7": "/", "\u2044": "/", "\uff08": "(",
               "\uff09": ")", "\uff3b": "[", "\uff3d": "]", "\uff1b": ";", "\uff0c": ","}
"""Characters a word processor or a paper puts where .kalg has an ASCII operator."""


def _lookalike(char: str) -> str:
    """What to write instead of `char`: its ASCII operator, a plain space for other white
    space, or the characters names and numbers are made of."""
    if char in _LOOKALIKES:
        return f"write '{_LOOKALIKES[char]}' (ASCII) instead of {char!r}"
    if char.isspace():
        return f"{char!r} is white space .kalg does not take: write a plain space"
    if not char.isprintable():
        return "a control character: .kalg files are text"
    return ("names are ASCII letters, digits and '_' (not starting with a digit); operators "
            "are + - * / ^ and numbers ASCII digits")


def _names_a_reserved_word(err: UnexpectedToken, label: str | None) -> bool:
    """Whether `err` is a keyword written where a name belongs (`kernel out = ...`), not a
    missing expression before a keyword (`kernel k = kernel j = ...`, which has its label)."""
    return (str(err.token) in reserved_words() and "NAME" in (err.accepts or err.expected)
            and (label is None or label.startswith("a definition needs a name")))


def _label(err: UnexpectedToken) -> str | None:
    """The ERROR_EXAMPLES label whose parser state matches `err`, if any. lark's matcher itself
    fails on some states (a TypeError formatting its own debug message: found by fuzzing
    'semiring real\nkernel k = x + x;'); that only means no label."""
    try:
        return err.match_examples(_lark().parse, _examples(), use_accepts=True)
    except (TypeError, ValueError, AssertionError):
        return None


@cache
def _examples() -> dict[str, list[str]]:
    return {label: examples + [_EARLIER_STATEMENT + e for e in examples]
            for label, examples in ERROR_EXAMPLES.items()}


def _token_span(token: Token, fallback: Span) -> Span:
    if token.type == "$END" or token.line is None:
        return _end_span(fallback)
    return Span(fallback.path, token.line, token.column, fallback.source,
                token.end_column if token.end_line == token.line else None)


def _end_span(fallback: Span) -> Span:
    """Point at the end of the last non-blank line (where the missing text belongs)."""
    lines = fallback.source.splitlines()
    for number in range(len(lines), 0, -1):
        stripped = lines[number - 1].split("#", 1)[0].rstrip()
        if stripped:
            return Span(fallback.path, number, len(stripped) + 1, fallback.source)
    return Span(fallback.path, 1, 1, fallback.source)


def _describe_token(token: Token) -> str:
    if token.type == "$END":
        return "end of file"
    if token.type == "NAME":
        return f"name {str(token)!r}"
    if token.type in ("NUMBER", "ENTRY"):
        return f"number {token!s}"
    return repr(str(token))


def _describe_expected(names: set[str]) -> str:
    """'a name, '[' or '('' from a set of terminal names, in a fixed order."""
    words = sorted({_terminal_words(n) for n in names})
    if not words:
        return "nothing more"
    return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " or " + words[-1]


def _terminal_words(name: str) -> str:
    if name in FRIENDLY_TERMINALS:
        return FRIENDLY_TERMINALS[name]
    pattern = _lark().get_terminal(name).pattern
    return repr(pattern.value) if pattern.type == "str" else name.lower()


def _unclosed_bracket(text: str, path: str, line: int, column: int) -> KalgSyntaxError | None:
    """An opening bracket before (line, column) that is never closed, if there is one."""
    stack: list[tuple[str, int, int]] = []
    for number, content in enumerate(text.splitlines(), start=1):
        for col, char in enumerate(content.split("#", 1)[0], start=1):
            if char in _OPENERS:
                stack.append((char, number, col))
            elif char in _CLOSERS:
                if not stack or stack[-1][0] != _CLOSERS[char]:
                    return None  # a stray closer: the parser's own message says it best
                stack.pop()
    if not stack:
        return None
    char, number, col = stack[-1]
    if (number, col) > (line, column):
        return None
    return KalgSyntaxError(f"unclosed {char!r}: no matching {_OPENERS[char]!r}",
                           Span(path, number, col, text))


# ----------------------------------------------------------------------- parse tree → AST
def _number(text: str) -> Fraction:
    """Exact value of a literal: '0.1' is 1/10, never the float nearest to it."""
    return Fraction(text)


@v_args(meta=True)
class _ToAst(Transformer):
    """Maps each grammar rule to the AST class of the same name (snake_case ↔ CamelCase)."""

    def __init__(self, path: str, source: str):
        super().__init__()
        self._path = path
        self._source = source

    # -- spans
    def _span(self, item: Token | object) -> Span:
        if isinstance(item, Token):
            end = item.end_column if item.end_line == item.line else None
            return Span(self._path, item.line, item.column, self._source, end)
        return Span(self._path, item.line, item.column, self._source)  # a Meta

    # -- statements
    def start(self, meta, children):
        return children

    def kernel_def(self, meta, children):
        _, name, _, expr, *settings = children
        return ast.KernelDef(str(name), expr, _settings(settings), self._span(meta),
                             self._span(name))

    def filter_def(self, meta, children):
        _, name, _, _, outputs, _, *settings = children
        return ast.FilterDef(str(name), outputs, _settings(settings), self._span(meta),
                             self._span(name))

    def pipeline_def(self, meta, children):
        _, name, _, parameters, _, _, *rest = children
        settings = rest.pop() if rest and isinstance(rest[-1], tuple) else ()
        stages = tuple(c for c in rest if isinstance(c, ast.PipelineStage))
        return ast.PipelineDef(str(name), parameters, stages, settings, self._span(meta),
                               self._span(name))

    def parameters(self, meta, children):
        return tuple((str(c), self._span(c)) for c in children if c.type == "NAME")

    def let_stage(self, meta, children):
        _, name, _, expr = children
        return ast.PipelineStage("let", str(name), expr, self._span(name))

    def out_stage(self, meta, children):
        _, name, _, expr = children
        return ast.PipelineStage("out", str(name), expr, self._span(name))

    def compare(self, meta, children):
        left, op, right = children
        return ast.Compare(str(op), left, right, self._span(op))

    def outputs(self, meta, children):
        return tuple(c for c in children if isinstance(c, ast.Output))

    def output(self, meta, children):
        register, _, expr = children
        return ast.Output(str(register), expr, self._span(register))

    def settings(self, meta, children):
        return tuple(c for c in children if not isinstance(c, Token))

    def semiring_setting(self, meta, children):
        keyword, name = children
        return ast.SemiringSetting(str(name), self._span(keyword), self._span(name))

    def border_setting(self, meta, children):
        keyword, mode, *value = children
        return ast.BorderSetting(str(mode), value[0][0] if value else None, self._span(keyword),
                                 self._span(mode))

    def approx_setting(self, meta, children):
        keyword, *params = children
        return ast.ApproxSetting(tuple(params), self._span(keyword))

    def approx_param(self, meta, children):
        name, (value, value_span) = children
        return ast.ApproxParam(str(name), value, self._span(name), value_span)

    def scalar(self, meta, children):
        numbers = [_number(c) for c in children if c.type == "NUMBER"]
        value = numbers[0] if len(numbers) == 1 else _ratio(numbers, self._span(children[1]))
        return value, self._span(meta)

    # -- target
    def target_block(self, meta, children):
        _, name, _, *rest = children
        fields = rest[0] if len(rest) == 2 else ()
        return ast.TargetBlock(str(name), fields, self._span(meta), self._span(name))

    def target_fields(self, meta, children):
        return tuple(c for c in children if isinstance(c, ast.TargetField))

    def target_field(self, meta, children):
        name, _, items = children
        return ast.TargetField(str(name), items, self._span(name))

    def target_value(self, meta, children):
        return tuple(c for c in children if isinstance(c, ast.RegisterItem))

    def register_item(self, meta, children):
        last = str(children[2]) if len(children) == 3 else None
        return ast.RegisterItem(str(children[0]), last, self._span(meta))

    # -- expressions
    def add(self, meta, children):
        left, op, right = children
        return ast.Add(left, right, self._span(op))

    def sub(self, meta, children):
        left, op, right = children
        return ast.Sub(left, right, self._span(op))

    def mul(self, meta, children):
        left, op, right = children
        return ast.Mul(left, right, self._span(op))

    def div(self, meta, children):
        left, op, right = children
        return ast.Div(left, right, self._span(op))

    def neg(self, meta, children):
        op, operand = children
        return ast.Neg(operand, self._span(op))

    def pow(self, meta, children):
        base, op, exponent = children
        return ast.Pow(base, exponent, self._span(op))

    def exponent(self, meta, children):
        value = _number(children[-1])
        if value.denominator != 1:
            raise KalgSyntaxError(f"an exponent is an integer, not {children[-1]}",
                                  self._span(children[-1]))
        return -int(value) if len(children) == 2 else int(value)

    def number(self, meta, children):
        (token,) = children
        return ast.Number(_number(token), self._span(token))

    def name(self, meta, children):
        (token,) = children
        return ast.Name(str(token), self._span(token))

    def call(self, meta, children):
        function, _, arguments, _ = children
        return ast.Call(str(function), arguments, self._span(function))

    def arguments(self, meta, children):
        return tuple(c for c in children if not isinstance(c, Token))

    def paren(self, meta, children):
        return children[1]

    def matrix(self, meta, children):
        origin, origin_span = None, None
        if children and isinstance(children[-1], tuple):
            (origin, origin_span) = children.pop()
        rows = _rows([self._cell(t) for t in children[1:-1]], children[1:-1])
        return ast.Matrix(rows, origin, self._span(children[0]), origin_span)

    def origin(self, meta, children):
        _, _, row, _, col, _ = children
        for token in (row, col):
            if _number(token).denominator != 1:
                raise KalgSyntaxError(f"an origin is a (row, column) of integers, not {token}",
                                      self._span(token))
        return (int(row), int(col)), self._span(meta)

    def _cell(self, token: Token) -> ast.Cell | None:
        if token.type == "SEMICOLON":
            return None
        if token.type == "DOT":
            return ast.Cell(None, self._span(token))
        text = str(token).lstrip("+")
        if text.lstrip("-") == "inf":
            return ast.Cell(-float("inf") if text.startswith("-") else float("inf"),
                            self._span(token))
        if text.endswith("/0"):
            raise KalgSyntaxError(f"division by zero in {text}", self._span(token))
        return ast.Cell(_number(text), self._span(token))


def _settings(children: list) -> tuple:
    return children[0] if children else ()


def _ratio(numbers: list[Fraction], span: Span) -> Fraction:
    if numbers[1] == 0:
        raise KalgSyntaxError("division by zero", span)
    return numbers[0] / numbers[1]


def _rows(cells: list[ast.Cell | None], tokens: list[Token]) -> tuple[tuple[ast.Cell, ...], ...]:
    """Split cells into rows at ';' (None here) and at line breaks; empty rows are dropped."""
    rows: list[list[ast.Cell]] = [[]]
    last_line = None
    for cell, token in zip(cells, tokens, strict=True):
        if cell is None or (last_line is not None and token.line != last_line):
            rows.append([])
        last_line = token.line
        if cell is not None:
            rows[-1].append(cell)
    return tuple(tuple(row) for row in rows if row)
