"""Structure: an `ast.Expr` → the algebra the user wrote, as a small tree over exact kernels.

Evaluation (`evaluate`) reduces a definition to one matrix; the optimizer also wants *how* it was
written (`2 - g5`, `g5 - g3`, `cross * cross`, binomial products), so that what the user wrote is
a candidate the rewrite rules can improve. A tree is a tuple:

* ("leaf", Kernel)       a matrix, number, `x`/`y`/`shift(dx, dy)`, or a subexpression that has
                         no structure worth keeping (an unknown function);
* ("add", a, b), ("sub", a, b), ("neg", a), ("mul", a, b) (composition);
* ("scale", a, Fraction) division by a number.

Names of earlier kernels stand for their own trees, so a named sub-kernel used twice is the same
subtree twice (the e-graph shares it). `transpose`, `flip`, `mirror_x` and `mirror_y` are ring
automorphisms, so they are pushed to the leaves. Pure Python, no eqsat here.
"""

from __future__ import annotations

from collections.abc import Mapping
from fractions import Fraction

from kalg.algebra.kernel import REAL, Kernel, Semiring
from kalg.frontend import ast
from kalg.frontend.evaluate import MONOMIALS, UNARY_FUNCTIONS, Scope, evaluate

Tree = tuple

MAX_LEAVES = 64
"""Trees with more leaves than this are not kept (a power like (1 + x)^40 written out)."""


def structure(expr: ast.Expr, scope: Scope, trees: Mapping[str, Tree],
              semiring: Semiring = REAL) -> Tree | None:
    """The tree of `expr` (already checked by `evaluate` in `semiring`), or None when it is a
    single leaf, negated or scaled (nothing beyond the matrix), or too large. In min-plus,
    max-plus and Boolean kernels only ⊕ ("add") and ⊗ ("mul") occur."""
    tree = _tree(expr, scope, trees, semiring)
    if _bare(tree) or _leaves(tree) > MAX_LEAVES:
        return None
    return tree


def _bare(tree: Tree) -> bool:
    """Whether the tree is one leaf, negated or scaled (a matrix over a number): nothing that
    the literal and its canonical scale do not already say."""
    while tree[0] in ("neg", "scale"):
        tree = tree[1]
    return tree[0] == "leaf"


def value(tree: Tree) -> Kernel:
    """The exact kernel a tree denotes."""
    match tree:
        case ("leaf", k):
            return k
        case ("add", a, b):
            return value(a) + value(b)
        case ("sub", a, b):
            return value(a) - value(b)
        case ("neg", a):
            return -value(a)
        case ("mul", a, b):
            return value(a).compose(value(b))
        case ("scale", a, c):
            return value(a).scale(c)
    raise ValueError(f"not a structure tree: {tree[0]}")


def _tree(expr: ast.Expr, scope: Scope, trees: Mapping[str, Tree],
          semiring: Semiring = REAL) -> Tree:
    def go(e: ast.Expr) -> Tree:
        return _tree(e, scope, trees, semiring)

    match expr:
        case ast.Name(name=name) if name not in MONOMIALS and name in trees:
            return trees[name]
        case ast.Add(left=a, right=b):
            return ("add", go(a), go(b))
        case ast.Sub(left=a, right=b):
            return ("sub", go(a), go(b))
        case ast.Mul(left=a, right=b):
            return ("mul", go(a), go(b))
        case ast.Neg(operand=a):
            return ("neg", go(a))
        case ast.Div(left=a, right=b):
            return ("scale", go(a), 1 / Fraction(evaluate(b, scope, REAL).entries[0][1]))
        case ast.Pow(base=b, exponent=n) if n >= 1 and len(evaluate(b, scope, semiring)) > 1:
            return _power(go(b), n)
        case ast.Call(function=f, arguments=(a,)) if f in UNARY_FUNCTIONS:
            return _mapped(go(a), UNARY_FUNCTIONS[f])
        case ast.Call(function="shift", arguments=(a, _, _)):
            inner = go(a)
            offset = _offset(value(inner), evaluate(expr, scope, semiring))
            return inner if offset is None else ("mul", ("leaf", offset), inner)
    return ("leaf", evaluate(expr, scope, semiring))


def _power(base: Tree, n: int) -> Tree:
    out = base
    for _ in range(n - 1):
        out = ("mul", out, base)
    return out


def _offset(before: Kernel, after: Kernel) -> Kernel | None:
    """The unit kernel u with u·before == after (a shift), or None if `before` is zero."""
    if not before.trimmed().entries:
        return None
    (bx, by), _ = before.trimmed().entries[0]
    (ax, ay), _ = after.trimmed().entries[0]
    return Kernel.unit(ax - bx, ay - by, semiring=after.semiring)


def _mapped(tree: Tree, f) -> Tree:
    """The tree of f(tree) for a ring automorphism f (transpose, flip, mirrors)."""
    if tree[0] == "leaf":
        return ("leaf", f(tree[1]))
    if tree[0] == "scale":
        return ("scale", _mapped(tree[1], f), tree[2])
    return (tree[0], *(_mapped(t, f) for t in tree[1:]))


def _leaves(tree: Tree) -> int:
    if tree[0] == "leaf":
        return 1
    return sum(_leaves(t) for t in tree[1:] if isinstance(t, tuple))
