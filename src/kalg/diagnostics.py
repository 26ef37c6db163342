"""Diagnostics: source spans, kalg's error hierarchy, and the `file:line:col: error:` renderer.

User mistakes are `KalgError`s: the CLI renders them and exits 1 without a traceback.
Broken internal invariants are plain exceptions (bugs, with a traceback), except a failed
verification of an emitted program, which is `VerificationError` (exit 3).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Span:
    """A place in a source text: 1-based line and column, with the file's name and text."""

    path: str
    line: int
    column: int
    source: str = ""
    end_column: int | None = None

    def source_line(self) -> str:
        lines = self.source.splitlines()
        return lines[self.line - 1] if 0 < self.line <= len(lines) else ""


class KalgError(Exception):
    """A user-facing error; `span` locates it when it comes from a source file."""

    exit_code = 1

    def __init__(self, message: str, span: Span | None = None,
                 hint: str | None = None):
        super().__init__(message)
        self.message = message
        self.span = span
        self.hint = hint

    def render(self) -> str:
        return render(self.message, self.span, self.hint)


class KalgSyntaxError(KalgError):
    """The text does not follow the grammar of its language (.kalg or SCAMP-5 program text)."""


class KalgSemanticError(KalgError):
    """The text parses but means nothing valid (unknown name, ragged matrix, semiring mix...)."""


class SemiringError(KalgSemanticError):
    """An operation that the kernel's semiring does not have (e.g. subtraction in min-plus)."""


class ProgramError(KalgError):
    """A SCAMP-5 program breaks an instruction constraint (operands, registers, op set)."""


class ResourceLimitError(KalgError):
    """A search hit a hard resource limit (memory, nodes, time) and could not produce a result."""


class RegisterPressureError(KalgError):
    """No program within the register budget could be found."""


class UsageError(KalgError):
    """The command line asks for something inconsistent (options that do not go together, a
    malformed option value found after parsing): exit 2, like argparse's own usage errors."""

    exit_code = 2


class ProgramMismatchError(KalgError):
    """A program given to kalg (`kalg simulate`, `kalg.simulate`) does not compute the kernel it
    was checked against: the user's program or the user's choice of kernel, so exit 1."""

    def __init__(self, message: str, hint: str | None = None,
                 details: dict[str, str] | None = None):
        super().__init__(message, None, hint)
        self.details = details or {}
        """Which check failed ("exact", "numeric") → what it found."""


class VerificationError(KalgError):
    """An emitted program does not compute its kernels: a compiler bug. Carries the program text."""

    exit_code = 3

    def __init__(self, message: str, program_text: str = ""):
        super().__init__(message)
        self.program_text = program_text

    def render(self) -> str:
        text = render(f"verification failed (this is a kalg bug): {self.message}", None, None)
        if self.program_text:
            text += "\nprogram:\n" + self.program_text.rstrip("\n")
        return text


def render(message: str, span: Span | None, hint: str | None = None) -> str:
    """Render `path:line:col: error: message`, the source line and a caret under the column."""
    if span is None:
        head = f"kalg: error: {message}"
        return head + (f"\n  hint: {hint}" if hint else "")
    out = [f"{span.path}:{span.line}:{span.column}: error: {message}"]
    line = span.source_line()
    if line:
        out.append(line)
        width = max(1, (span.end_column or span.column + 1) - span.column)
        pad = "".join("\t" if c == "\t" else " " for c in line[:span.column - 1])
        out.append(pad + "^" * width)  # a tab in the line stays a tab: the caret lines up
    if hint:
        out.append(f"  hint: {hint}")
    return "\n".join(out)
