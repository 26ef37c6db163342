"""The .kalg abstract syntax tree: immutable dataclasses built by `kalg.frontend.parser`.

Every node carries the `Span` an error about it should point at. Binary and unary operator
nodes are located at their operator (so "cannot subtract in min-plus" points at the `-`); other
nodes at their first character. The tree holds text-level facts only (numbers are exact
`Fraction`s, matrices are rows of cells); what they mean is `kalg.frontend.evaluate`'s business.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

from kalg.diagnostics import Span


# ----------------------------------------------------------------------- expressions
@dataclass(frozen=True, slots=True)
class Number:
    """A non-negative literal such as `16`, `0.5` (read exactly, as Fraction("0.5"))."""

    value: Fraction
    span: Span


@dataclass(frozen=True, slots=True)
class Name:
    """A reference to an earlier definition, or one of the monomials `x` and `y`."""

    name: str
    span: Span


@dataclass(frozen=True, slots=True)
class Cell:
    """One matrix cell: a Fraction, ±inf as a float (min/max-plus only), or None for '.'."""

    value: Fraction | float | None
    span: Span


@dataclass(frozen=True, slots=True)
class Matrix:
    """A north-up matrix literal; `origin` is the (row, column) of offset (0, 0), if given."""

    rows: tuple[tuple[Cell, ...], ...]
    origin: tuple[int, int] | None
    span: Span
    origin_span: Span | None = None


@dataclass(frozen=True, slots=True)
class Add:
    left: Expr
    right: Expr
    span: Span


@dataclass(frozen=True, slots=True)
class Sub:
    left: Expr
    right: Expr
    span: Span


@dataclass(frozen=True, slots=True)
class Mul:
    """`a * b`: composition of kernels (a scalar is a kernel holding one entry at the origin)."""

    left: Expr
    right: Expr
    span: Span


@dataclass(frozen=True, slots=True)
class Div:
    """`a / b`: scaling by the inverse of the scalar `b`."""

    left: Expr
    right: Expr
    span: Span


@dataclass(frozen=True, slots=True)
class Neg:
    operand: Expr
    span: Span


@dataclass(frozen=True, slots=True)
class Pow:
    """`a ^ n`: n-fold composition; negative n only for monomials such as `x^-1`."""

    base: Expr
    exponent: int
    span: Span


@dataclass(frozen=True, slots=True)
class Call:
    """A built-in function applied to arguments, e.g. `transpose(k)` or `shift(1, 0)`."""

    function: str
    arguments: tuple[Expr, ...]
    span: Span


@dataclass(frozen=True, slots=True)
class Compare:
    """`a < b` (or <=, >, >=, ==, !=): a mask of two images, 1 where it holds; pipelines only."""

    op: str
    left: Expr
    right: Expr
    span: Span


Expr = Number | Name | Matrix | Add | Sub | Mul | Div | Neg | Pow | Call | Compare


# ----------------------------------------------------------------------- settings
@dataclass(frozen=True, slots=True)
class BorderSetting:
    """`border MODE [VALUE]`: file-level or in a `with` clause; the cpu target's border."""

    mode: str
    value: object
    span: Span
    mode_span: Span


@dataclass(frozen=True, slots=True)
class SemiringSetting:
    """`semiring NAME`: file-level (a default for later definitions) or in a `with` clause."""

    name: str
    span: Span
    name_span: Span


@dataclass(frozen=True, slots=True)
class ApproxParam:
    """One `NAME VALUE` pair of an approx setting, e.g. `depth 6` or `max_error 1/64`."""

    name: str
    value: Fraction
    span: Span
    value_span: Span


@dataclass(frozen=True, slots=True)
class ApproxSetting:
    """`approx depth D max_error E`: file-level (a default) or in a `with` clause."""

    params: tuple[ApproxParam, ...]
    span: Span


Setting = SemiringSetting | ApproxSetting | BorderSetting


# ----------------------------------------------------------------------- definitions
@dataclass(frozen=True, slots=True)
class KernelDef:
    name: str
    expr: Expr
    settings: tuple[Setting, ...]
    span: Span
    name_span: Span


@dataclass(frozen=True, slots=True)
class Output:
    """`REGISTER: expr` inside a filter."""

    register: str
    expr: Expr
    span: Span


@dataclass(frozen=True, slots=True)
class FilterDef:
    name: str
    outputs: tuple[Output, ...]
    settings: tuple[Setting, ...]
    span: Span
    name_span: Span


@dataclass(frozen=True, slots=True)
class PipelineStage:
    """`let NAME = expr` (a named intermediate image) or `out NAME = expr` (a result)."""

    kind: str
    name: str
    expr: Expr
    span: Span


@dataclass(frozen=True, slots=True)
class PipelineDef:
    """`pipeline NAME(input, ...) { stage ... }`: images computed from the input images."""

    name: str
    parameters: tuple[tuple[str, Span], ...]
    stages: tuple[PipelineStage, ...]
    settings: tuple[Setting, ...]
    span: Span
    name_span: Span


# ----------------------------------------------------------------------- target
@dataclass(frozen=True, slots=True)
class RegisterItem:
    """A register name, or an inclusive range `first..last` of single letters."""

    first: str
    last: str | None
    span: Span


@dataclass(frozen=True, slots=True)
class TargetField:
    """`NAME: value` in a target block; the value is one or more register items."""

    name: str
    items: tuple[RegisterItem, ...]
    span: Span


@dataclass(frozen=True, slots=True)
class TargetBlock:
    name: str
    fields: tuple[TargetField, ...]
    span: Span
    name_span: Span


Statement = (KernelDef | FilterDef | PipelineDef | SemiringSetting | ApproxSetting | BorderSetting
             | TargetBlock)


@dataclass(frozen=True, slots=True)
class Program:
    """A whole .kalg file: its statements in file order."""

    statements: tuple[Statement, ...]
    path: str
    source: str


def dump(node: object, indent: int = 0) -> str:
    """An indented, span-free text form of an AST (what `kalg optimize --emit ast` prints)."""
    pad = "  " * indent
    if isinstance(node, tuple | list):
        return "\n".join(dump(item, indent) for item in node)
    fields = getattr(node, "__dataclass_fields__", None)
    if fields is None:
        return pad + repr(node)
    simple, nested = [], []
    for name in fields:
        if name == "span":
            continue
        value = getattr(node, name)
        if getattr(value, "__dataclass_fields__", None) or (
                isinstance(value, tuple | list) and value
                and getattr(value[0], "__dataclass_fields__", None)):
            nested.append((name, value))
        else:
            simple.append(f"{name}={value!r}")
    lines = [f"{pad}{type(node).__name__}({', '.join(simple)})"]
    for name, value in nested:
        lines.append(f"{pad}  {name}:")
        lines.append(dump(value, indent + 2))
    return "\n".join(lines)
