"""The .kalg frontend: text → parse tree → AST → checked `Module` of exact kernels.

>>> module = load_text("kernel box = [1 1 1] / 4")
>>> d = module.definition()
>>> d.name, d.kind, d.outputs["A"].taps
('box', 'kernel', {(-1, 0): Fraction(1, 4), (0, 0): Fraction(1, 4), (1, 0): Fraction(1, 4)})
"""

from __future__ import annotations

from pathlib import Path

from kalg.diagnostics import KalgError, Span
from kalg.frontend.check import check
from kalg.frontend.module import Definition, Module, TargetSpec
from kalg.frontend.parser import parse

__all__ = ["Definition", "Module", "TargetSpec", "check", "load_file", "load_text", "parse",
           "read_source", "target_name"]


def load_text(text: str, path: str = "<string>", target: str | None = None,
              registers: tuple[str, ...] | None = None) -> Module:
    """Parse and check .kalg `text` (for `target` and `registers` where given, in place of the
    file's target block); errors are KalgError subclasses located in `path`."""
    tree = parse(text.removeprefix("\ufeff"), path)  # a byte-order mark is not text
    return check(tree, target, registers)


def target_name(text: str, path: str = "<string>") -> str:
    """The target the file's target block names (scamp5 without one), after parsing only."""
    from kalg.frontend.target import target_of

    return target_of(parse(text.removeprefix("\ufeff"), path)).name


def read_source(path: str | Path) -> str:
    """The text of a source file; an unreadable file is a KalgError naming it."""
    try:
        return Path(path).read_text(encoding="utf-8-sig")  # drops a byte-order mark
    except UnicodeDecodeError as err:
        raise _not_utf8(str(path), err) from None
    except OSError as err:
        raise KalgError(f"cannot read {str(path)!r}: {getattr(err, 'strerror', None) or err}",
                        ) from None


def _not_utf8(path: str, err: UnicodeDecodeError) -> KalgError:
    """The first byte that is not UTF-8, located at its line and column."""
    before = err.object[: err.start].decode("utf-8-sig", errors="replace")
    line = before.count("\n") + 1
    column = len(before) - (before.rfind("\n") + 1) + 1
    source = err.object.decode("utf-8-sig", errors="replace")
    return KalgError(f"byte 0x{err.object[err.start]:02x} is not UTF-8 text: save the file as "
                     "UTF-8", Span(path, line, column, source))


def load_file(path: str | Path, target: str | None = None) -> Module:
    """Read, parse and check the .kalg file at `path` (for `target`, as `load_text`)."""
    return load_text(read_source(path), str(path), target)
