"""SCAMP-5 program text: print a program in the SCAMP-5d host form and parse it back.

`format_program(instrs) -> str` and `parse_program(text) -> list[Instr]`, inverse of each other on
valid programs. The text is a sequence of statements `name(arg, ...);` with `//` comments; the
`scamp5_kernel_begin();` / `scamp5_kernel_end();` lines are optional, but when present they must
bracket every instruction. Whitespace and line breaks are free, so several macros on one line parse.

Every mistake is reported with the line and column of the offending token: grammar problems
(unexpected character, missing `;`, unknown macro, wrong argument count) as `KalgSyntaxError`,
problems of meaning (unknown register or direction, NEWS named, an instruction constraint, a macro
outside the chosen op set) as `ProgramError`.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, fields

from kalg.diagnostics import KalgSyntaxError, ProgramError, Span
from kalg.targets.scamp5.machine.isa import (
    ALL_MACROS,
    NEWS,
    OP_SETS,
    REGISTERS,
    SIMULATED_REGISTERS,
    Dir,
    Instr,
    op_set_violation,
)

BEGIN = "scamp5_kernel_begin"
END = "scamp5_kernel_end"

_PUNCTUATION = "(),;"
_DIRECTIONS = tuple(d.value for d in Dir)


def _macro_table() -> dict[str, dict[int, type[Instr]]]:
    table: dict[str, dict[int, type[Instr]]] = {}
    for cls in ALL_MACROS:
        table.setdefault(cls.mnemonic, {})[len(fields(cls))] = cls  # type: ignore[arg-type]
    return table


_MACROS = _macro_table()
"""mnemonic → argument count → instruction class (`add` and `div` have two arities)."""


def format_program(instrs: Iterable[Instr], header: Sequence[str] = ()) -> str:
    """The SCAMP-5d host form: optional `// header` lines, begin, one macro per line, end.

    >>> from kalg.targets.scamp5.machine.isa import Movx
    >>> print(format_program([Movx("B", "A", Dir.SOUTH)]), end="")
    scamp5_kernel_begin();
    movx(B, A, south);
    scamp5_kernel_end();
    """
    lines = [f"// {h}" if h else "//" for h in header]
    lines += [f"{BEGIN}();", *(str(i) for i in instrs), f"{END}();"]
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------------------- tokens
@dataclass(frozen=True, slots=True)
class _Token:
    kind: str  # "name", one of "(),;", or "eof"
    text: str
    line: int
    column: int


def _tokenize(text: str, path: str) -> list[_Token]:
    """Names and punctuation with 1-based positions; `//` comments run to the end of the line."""
    tokens = []
    for number, line in enumerate(text.splitlines(), start=1):
        col = 0
        while col < len(line):
            ch = line[col]
            if ch.isspace():
                col += 1
            elif line.startswith("//", col):
                break
            elif ch in _PUNCTUATION:
                tokens.append(_Token(ch, ch, number, col + 1))
                col += 1
            elif ch.isalpha() or ch == "_":
                end = col
                while end < len(line) and (line[end].isalnum() or line[end] == "_"):
                    end += 1
                tokens.append(_Token("name", line[col:end], number, col + 1))
                col = end
            else:
                span = Span(path, number, col + 1, text)
                raise KalgSyntaxError(f"unexpected character {ch!r}", span)
    last_line = max(1, len(text.splitlines()))
    tokens.append(_Token("eof", "", last_line, len(text.splitlines()[-1]) + 1 if text else 1))
    return tokens


# ---------------------------------------------------------------------------- statements
@dataclass(frozen=True, slots=True)
class _Statement:
    name: _Token
    args: tuple[_Token, ...]
    close: _Token  # the ')'


class _Reader:
    """Cursor over the token list; every `expect` failure is a located syntax error."""

    def __init__(self, tokens: list[_Token], path: str, source: str):
        self.tokens, self.pos, self.path, self.source = tokens, 0, path, source

    def peek(self) -> _Token:
        return self.tokens[self.pos]

    def take(self) -> _Token:
        tok = self.tokens[self.pos]
        self.pos += 1
        return tok

    def expect(self, kind: str, what: str) -> _Token:
        if (tok := self.peek()).kind != kind:
            found = "end of file" if tok.kind == "eof" else repr(tok.text)
            raise KalgSyntaxError(f"expected {what}, found {found}", self.span(tok))
        return self.take()

    def span(self, tok: _Token, end: _Token | None = None) -> Span:
        last = end or tok
        return Span(self.path, tok.line, tok.column, self.source,
                    last.column + max(1, len(last.text)) if last.line == tok.line else None)

    def statement(self) -> _Statement:
        name = self.expect("name", "a macro name")
        self.expect("(", f"'(' after {name.text!r}")
        args: list[_Token] = []
        if self.peek().kind != ")":
            args.append(self.expect("name", "an argument"))
            while self.peek().kind == ",":
                self.take()
                args.append(self.expect("name", "an argument after ','"))
        close = self.expect(")", "',' or ')'")
        self.expect(";", "';' after ')'")
        return _Statement(name, tuple(args), close)


def parse_program(text: str, path: str = "<string>", op_set: str | None = None,
                  registers: tuple[str, ...] = REGISTERS) -> list[Instr]:
    """Parse SCAMP-5 program text into instructions, checking every constraint of the ISA.

    `op_set` ("all" or "basic") also rejects macros outside that op set; None accepts every macro.
    `registers` are the names a program may use: SCAMP-5's A..F, or `SIMULATED_REGISTERS` for
    programs made for the simulated wide register file (target scamp5_wide).
    Raises `KalgSyntaxError` or `ProgramError` located at the offending token.

    >>> parse_program("scamp5_kernel_begin();\\nadd(A, B, C); // sum\\nscamp5_kernel_end();")
    [Add(y='A', x0='B', x1='C')]
    """
    if op_set is not None and op_set not in OP_SETS:
        raise ValueError(f"unknown op set {op_set!r}; choose one of {', '.join(sorted(OP_SETS))}")
    reader = _Reader(_tokenize(text, path), path, text)
    program: list[Instr] = []
    begun = ended = None
    while reader.peek().kind != "eof":
        stmt = reader.statement()
        if stmt.name.text in (BEGIN, END):
            begun, ended = _marker(reader, stmt, program, begun, ended)
            continue
        if ended is not None:
            raise KalgSyntaxError(f"instruction after {END}();", reader.span(stmt.name))
        program.append(_instruction(reader, stmt, op_set, registers))
    if begun is not None and ended is None:
        raise KalgSyntaxError(f"{BEGIN}(); is never closed by {END}();", reader.span(begun))
    return program


def _marker(reader: _Reader, stmt: _Statement, program: list[Instr],
            begun: _Token | None, ended: _Token | None) -> tuple[_Token | None, _Token | None]:
    """Check one begin/end line against what came before; return the updated (begun, ended)."""
    name = stmt.name
    if stmt.args:
        raise KalgSyntaxError(f"{name.text} takes no arguments", reader.span(stmt.args[0]))
    if name.text == BEGIN:
        if begun is not None or program or ended is not None:
            raise KalgSyntaxError(f"{BEGIN}(); must come once, before every instruction",
                                  reader.span(name))
        return name, ended
    if begun is None:
        raise KalgSyntaxError(f"{END}(); without {BEGIN}();", reader.span(name))
    if ended is not None:
        raise KalgSyntaxError(f"second {END}();", reader.span(name))
    return begun, name


def _instruction(reader: _Reader, stmt: _Statement, op_set: str | None,
                 registers: tuple[str, ...]) -> Instr:
    """Build the instruction of one statement: arity, operand kinds, constraints, op set."""
    name = stmt.name
    if (arities := _MACROS.get(name.text)) is None:
        raise KalgSyntaxError(f"unknown macro {name.text!r}", reader.span(name),
                              hint=f"macros are {', '.join(sorted(_MACROS))}")
    if (cls := arities.get(len(stmt.args))) is None:
        counts = " or ".join(str(n) for n in sorted(arities))
        where = stmt.args[max(arities)] if len(stmt.args) > max(arities) else stmt.close
        raise KalgSyntaxError(
            f"{name.text} takes {counts} arguments, got {len(stmt.args)}", reader.span(where))
    values = [_operand(reader, tok, _is_direction(f.type), registers)
              for tok, f in zip(stmt.args, fields(cls), strict=True)]  # type: ignore[arg-type]
    instr = cls(*values)
    if problem := instr.violation():
        raise ProgramError(problem, reader.span(name, stmt.close))
    if op_set is not None and (problem := op_set_violation(instr, op_set)):
        raise ProgramError(problem, reader.span(name))
    return instr


def _is_direction(annotation: object) -> bool:
    return annotation in (Dir, "Dir")


def _operand(reader: _Reader, tok: _Token, direction: bool,
             registers: tuple[str, ...]) -> str | Dir:
    """A register name or a direction, as the macro's signature asks; anything else is an error."""
    text, span = tok.text, reader.span(tok)
    if direction:
        if text in _DIRECTIONS:
            return Dir(text)
        if text in registers:
            raise ProgramError(f"expected a direction, found register {text!r}", span)
        raise ProgramError(f"unknown direction {text!r}", span,
                           hint=f"directions are {', '.join(_DIRECTIONS)}")
    if text in registers:
        return text
    if text in SIMULATED_REGISTERS:
        raise ProgramError(f"register {text!r} does not exist on SCAMP-5", span,
                           hint=f"registers are {', '.join(registers)}; G..Z exist only in the "
                                "simulated wide register file (kalg simulate "
                                "--simulated-registers)")
    if text == NEWS:
        raise ProgramError("NEWS cannot be named by a program", span,
                           hint="NEWS is the neighbour-exchange register every macro overwrites")
    if text in _DIRECTIONS:
        raise ProgramError(f"expected a register, found direction {text!r}", span)
    raise ProgramError(f"unknown register {text!r}", span,
                       hint=f"registers are {', '.join(registers)}")

