"""Evaluation: an `ast.Expr` → its exact `Kernel`, in a given semiring.

Every value is a kernel. A number `c` is the kernel holding `c` at offset (0, 0), so `k * 3`
(composition with it) scales, `1 + x` is a Laurent polynomial, and `k / 4` divides by a kernel
that must be such a constant. `x` and `y` are the unit kernels at (1, 0) (east) and (0, 1)
(north). Literals are built in the definition's semiring; kernels from earlier definitions keep
their own, and mixing two semirings is a `SemiringError` at the operator.

Errors are `KalgSemanticError`s located at the offending node.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from fractions import Fraction

from kalg.algebra.channels import Channels
from kalg.algebra.kernel import BOOLEAN, MAXPLUS, MINPLUS, REAL, Kernel, Semiring
from kalg.diagnostics import KalgError, KalgSemanticError, SemiringError, Span
from kalg.frontend import ast

MONOMIALS = {"x": (1, 0), "y": (0, 1)}
"""The built-in names: x^a * y^b is the unit kernel at offset (a, b) (x east, y north)."""

UNARY_FUNCTIONS: dict[str, Callable[[Kernel], Kernel]] = {
    "transpose": Kernel.transpose,
    "flip": Kernel.flip,
    "mirror_x": Kernel.mirror_x,
    "mirror_y": Kernel.mirror_y,
}
"""Built-in functions of one kernel; `shift` (two or three arguments) is handled apart."""

FUNCTION_NAMES = (*sorted(UNARY_FUNCTIONS), "shift")

MAX_POWER = 64
"""Largest n in `k ^ n` for a kernel with several entries (its size grows with n)."""

MAX_REACH = 1024
"""Largest offset any (sub)expression may reach: far beyond any sensor (SCAMP-5's array is 256
wide), and small enough that printing the kernel as a matrix stays instant."""


@dataclass(frozen=True, slots=True)
class Scope:
    """What names mean at one point of the file.

    `kernels`: earlier kernel definitions. `filters`: earlier filter names (not usable as values).
    `later`: names defined further down → their line, for a helpful error. `current`: the name
    being defined (a definition cannot use itself).
    """

    kernels: Mapping[str, Kernel]
    filters: frozenset[str] = frozenset()
    later: Mapping[str, int] | None = None
    current: str | None = None
    channels: frozenset[str] = frozenset()
    """Input registers that name input channels here (a filter over several inputs)."""
    inputs: tuple[str, ...] = ()
    """The file's input registers where it has several (named only in a filter's outputs)."""


def evaluate(expr: ast.Expr, scope: Scope, semiring: Semiring = REAL) -> Kernel:
    """The exact kernel `expr` denotes; literals are built in `semiring`."""
    with located(expr.span):
        kernel = _EVALUATORS[type(expr)](expr, scope, semiring)
    if isinstance(kernel, Channels):
        if any(k.entries and k.radius() > MAX_REACH for _, k in kernel.parts):
            raise KalgSemanticError(f"a kernel on an input reaches more than {MAX_REACH} pixels "
                                    "from its centre", expr.span)
        return kernel
    if kernel.entries and kernel.radius() > MAX_REACH:
        raise KalgSemanticError(
            f"this kernel reaches {kernel.radius()} pixels from its centre: kalg handles at most "
            f"{MAX_REACH} (SCAMP-5's array is 256 pixels wide)", expr.span)
    return kernel


@contextmanager
def located(span: Span) -> Iterator[None]:
    """Give a KalgError raised without a location (e.g. by `kalg.algebra.kernel`) the span
    `span`."""
    try:
        yield
    except KalgError as err:
        if err.span is None:
            err.span = span
        raise


# ----------------------------------------------------------------------- leaves
def _number(node: ast.Number, scope: Scope, semiring: Semiring) -> Kernel:
    return Kernel.unit(value=_coefficient(node.value, semiring), semiring=semiring)


def _name(node: ast.Name, scope: Scope, semiring: Semiring) -> Kernel:
    if node.name in scope.channels:
        return Channels.unit(node.name)
    if node.name in MONOMIALS:
        return Kernel.unit(*MONOMIALS[node.name], semiring=semiring)
    if (kernel := scope.kernels.get(node.name)) is not None:
        return kernel
    raise _unknown_name(node.name, scope)


def _unknown_name(name: str, scope: Scope) -> KalgSemanticError:
    if name == scope.current:
        return KalgSemanticError(f"{name!r} refers to itself: a definition cannot use its own name")
    if name in scope.filters:
        return KalgSemanticError(f"{name!r} is a filter: only kernels can be used in expressions")
    if scope.later and name in scope.later:
        return KalgSemanticError(f"{name!r} is used before its definition on line "
                                 f"{scope.later[name]}")
    if name in scope.inputs and not scope.channels:
        return KalgSemanticError(
            f"{name!r} is an input: inputs are named only in a filter's outputs "
            f"('filter f = [C: k * {name}]'); a kernel definition names no input (kalg "
            f"applies it to the first input, {scope.inputs[0]})")
    known = [*MONOMIALS, *scope.kernels]
    close = difflib.get_close_matches(name, [*known, *sorted(scope.channels)], n=1)
    hint = f"did you mean {close[0]!r}? " if close else ""
    if not scope.channels:
        return KalgSemanticError(f"unknown name {name!r}",
                                 hint=f"{hint}known kernels here: {', '.join(known)}")
    inputs = ", ".join(sorted(scope.channels))
    what = (f"{name!r} is not an input of the target (its inputs are {inputs}, from "
            "'input:' in the target block)" if _register_like(name) else
            f"unknown name {name!r}")
    return KalgSemanticError(what, hint=f"{hint}known kernels here: {', '.join(known)}; "
                                        f"inputs: {inputs}")


def _register_like(name: str) -> bool:
    """Whether `name` looks like a register (one capital letter): in a filter over several
    inputs such a name is most likely an input the target block does not list."""
    return len(name) == 1 and name.isupper()


def _matrix(node: ast.Matrix, scope: Scope, semiring: Semiring) -> Kernel:
    rows = node.rows
    if not rows:
        raise KalgSemanticError("empty matrix: write '[.]' for a kernel with no entries",
                                node.span)
    width = len(rows[0])
    for index, row in enumerate(rows[1:], start=2):
        if len(row) != width:
            raise KalgSemanticError(
                f"ragged matrix: row {index} has {_entries(len(row))} but row 1 has "
                f"{_entries(width)}",
                row[0].span)
    origin = _origin(node, len(rows), width)
    values = [[_cell(cell, semiring) for cell in row] for row in rows]
    return Kernel.from_rows(values, origin=origin, semiring=semiring)


def _entries(count: int) -> str:
    return f"{count} entry" if count == 1 else f"{count} entries"


def _origin(node: ast.Matrix, height: int, width: int) -> tuple[int, int]:
    if node.origin is None:
        if height % 2 == 0 or width % 2 == 0:
            raise KalgSemanticError(
                f"a {height}x{width} matrix has no centre: give the (row, column) of offset "
                "(0, 0), counting from 0, e.g. '[1 1; 1 1] @ (0, 0)'", node.span)
        return (height // 2, width // 2)
    row, col = node.origin
    if row >= height or col >= width:
        raise KalgSemanticError(
            f"origin ({row}, {col}) is outside the {height}x{width} matrix "
            f"(rows 0..{height - 1}, columns 0..{width - 1})", node.origin_span)
    return node.origin


def _cell(cell: ast.Cell, semiring: Semiring) -> object:
    if cell.value is None:
        return None
    with located(cell.span):
        return _coefficient(cell.value, semiring)


def _coefficient(value: Fraction | float, semiring: Semiring) -> object:
    """Check that a literal is a coefficient of `semiring` and convert it."""
    if isinstance(value, float):  # ±inf, from a matrix cell
        if semiring not in (MINPLUS, MAXPLUS):
            raise KalgSemanticError(f"{value} is a coefficient only in the minplus and maxplus "
                                    f"semirings, not in {semiring.name}")
        return value
    if semiring is BOOLEAN and value not in (0, 1):
        raise KalgSemanticError(f"a boolean coefficient is 0 or 1, not {value}")
    return semiring.coerce(value)


# ----------------------------------------------------------------------- operators
def _add(node: ast.Add, scope: Scope, semiring: Semiring) -> Kernel:
    left, right = _operands(node, scope, semiring)
    with located(node.span):
        return _channel_first(left, right) + right


def _sub(node: ast.Sub, scope: Scope, semiring: Semiring) -> Kernel:
    left, right = _operands(node, scope, semiring)
    with located(node.span):
        return _channel_first(left, right) - right


def _channel_first(left, right):
    """`left`, or an error where a kernel meets a channel value in a sum (it names no input)."""
    if isinstance(right, Channels) and not isinstance(left, Channels):
        raise KalgSemanticError(
            "a kernel alone names no input: in a filter over several inputs every term applies "
            "a kernel to an input, e.g. 'k * A'")
    return left


def _mul(node: ast.Mul, scope: Scope, semiring: Semiring) -> Kernel:
    left, right = _operands(node, scope, semiring)
    with located(node.span):
        if isinstance(right, Channels):
            return right.compose(left)  # convolution commutes
        return left.compose(right)


def _div(node: ast.Div, scope: Scope, semiring: Semiring) -> Kernel:
    left = evaluate(node.left, scope, semiring)
    if not isinstance(left, Channels) and left.semiring is not REAL:
        raise SemiringError(f"cannot divide in the {left.semiring.name} semiring", node.span)
    divisor = _constant(evaluate(node.right, scope, semiring), "a divisor", node.span)
    if divisor == 0:
        raise KalgSemanticError("division by zero", node.span)
    return left.scale(Fraction(1) / divisor)


def _neg(node: ast.Neg, scope: Scope, semiring: Semiring) -> Kernel:
    operand = evaluate(node.operand, scope, semiring)
    with located(node.span):
        return -operand


def _pow(node: ast.Pow, scope: Scope, semiring: Semiring) -> Kernel:
    base = evaluate(node.base, scope, semiring)
    if isinstance(base, Channels):
        raise KalgSemanticError("an input cannot be raised to a power", node.span)
    n = node.exponent
    if len(base) == 1 and base.entries[0][1] == base.semiring.one:  # a monomial: x^a y^b
        (dx, dy), _ = base.entries[0]
        return Kernel.unit(dx * n, dy * n, semiring=base.semiring)
    if n < 0:
        raise KalgSemanticError(
            "only a monomial (x, y, shift(dx, dy)) has a negative power: a kernel with more "
            "than one entry has no inverse", node.span)
    if n > MAX_POWER:
        raise KalgSemanticError(f"the power {n} is too large: at most {MAX_POWER} for a "
                                "kernel that is not a monomial", node.span)
    return base.power(n)


def _operands(node: ast.Add | ast.Sub | ast.Mul | ast.Div, scope: Scope, semiring: Semiring,
              ) -> tuple[Kernel, Kernel]:
    return evaluate(node.left, scope, semiring), evaluate(node.right, scope, semiring)


def _constant(kernel: Kernel | Channels, what: str, span: Span) -> Fraction:
    """The value of a kernel that is a single entry at (0, 0) (a plain number)."""
    if isinstance(kernel, Channels):
        names = " + ".join(c for c, _ in kernel.parts)
        raise KalgSemanticError(f"{what} must be a number, not a value of the input(s) "
                                f"{names}", span)
    if kernel.semiring is not REAL:
        raise SemiringError(f"{what} must be a real number, not a {kernel.semiring.name} "
                            "kernel", span)
    if kernel.domain != {(0, 0)}:
        raise KalgSemanticError(f"{what} must be a number, not a kernel with offsets "
                                f"{sorted(kernel.domain)}", span)
    return Fraction(kernel.entries[0][1])


# ----------------------------------------------------------------------- functions
def _call(node: ast.Call, scope: Scope, semiring: Semiring) -> Kernel:
    if node.function == "shift":
        return _shift(node, scope, semiring)
    if (function := UNARY_FUNCTIONS.get(node.function)) is None:
        close = difflib.get_close_matches(node.function, FUNCTION_NAMES, n=1)
        hint = f"did you mean {close[0]!r}? " if close else ""
        raise KalgSemanticError(f"unknown function {node.function!r}", node.span,
                                hint=f"{hint}the functions are: {', '.join(FUNCTION_NAMES)}")
    if len(node.arguments) != 1:
        raise KalgSemanticError(
            f"{node.function} takes 1 kernel, not {len(node.arguments)} arguments", node.span)
    argument = evaluate(node.arguments[0], scope, semiring)
    if isinstance(argument, Channels):
        return argument.map(function)
    return function(argument)


def _shift(node: ast.Call, scope: Scope, semiring: Semiring) -> Kernel:
    """shift(dx, dy): the unit kernel at (dx, dy); shift(k, dx, dy): k moved by (dx, dy)."""
    if len(node.arguments) not in (2, 3):
        raise KalgSemanticError(
            f"shift takes (dx, dy) or (kernel, dx, dy), not {len(node.arguments)} arguments",
            node.span)
    *kernel_arg, dx_arg, dy_arg = node.arguments
    if not kernel_arg and not isinstance(dx_arg, ast.Number | ast.Neg):
        try:  # shift(k, 1): a kernel where dx goes says more than "an offset is a number"
            dx = _integer(dx_arg, scope)
        except KalgSemanticError as err:
            raise KalgSemanticError(err.message, err.span,
                                    "shift takes (dx, dy) or (kernel, dx, dy): shift(k, 1, 0) "
                                    "moves k one pixel east") from None
    dx, dy = (_integer(arg, scope) for arg in (dx_arg, dy_arg))
    if not kernel_arg:
        return Kernel.unit(dx, dy, semiring=semiring)
    return evaluate(kernel_arg[0], scope, semiring).shift(dx, dy)


def _integer(expr: ast.Expr, scope: Scope) -> int:
    """An offset argument: integer arithmetic whatever the definition's semiring."""
    value = _constant(evaluate(expr, scope, REAL), "an offset", expr.span)
    if value.denominator != 1:
        raise KalgSemanticError(f"an offset must be an integer, not {value}", expr.span)
    return int(value)


_EVALUATORS: dict[type, Callable[..., Kernel]] = {
    ast.Number: _number,
    ast.Name: _name,
    ast.Matrix: _matrix,
    ast.Add: _add,
    ast.Sub: _sub,
    ast.Mul: _mul,
    ast.Div: _div,
    ast.Neg: _neg,
    ast.Pow: _pow,
    ast.Call: _call,
}
