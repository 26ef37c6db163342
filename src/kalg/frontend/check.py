"""Checking: `ast.Program` → `Module`, the exact meaning of a .kalg file.

Walks the statements in file order. `semiring` and `approx` statements set the defaults for
the definitions after them; a definition's own `with` clause overrides them. Each definition is
evaluated (`kalg.frontend.evaluate`), checked against its semiring and the target, and, if it
is real and has a non-dyadic coefficient, approximated (`kalg.algebra.approx`) if a policy is set,
else kept exact with the located error SCAMP-5 will raise (`Definition.unapproximated`). Every
problem is a `KalgSemanticError` located in the source.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from fractions import Fraction

from kalg.algebra import approx
from kalg.algebra.channels import Channels
from kalg.algebra.kernel import REAL, SEMIRINGS, Kernel, Semiring
from kalg.diagnostics import KalgError, KalgSemanticError, Span
from kalg.frontend import ast
from kalg.frontend.evaluate import MONOMIALS, Scope, evaluate, located
from kalg.frontend.module import Definition, Module, Target
from kalg.frontend.structure import Tree, structure
from kalg.frontend.target import target_of
from kalg.targets.cpu.borders import parse_border

APPROX_PARAMS = ("depth", "max_error")


@dataclass(frozen=True, slots=True)
class ApproxPolicy:
    """How to approximate non-dyadic kernels: at `depth`, or at the smallest depth up to
    `depth` that keeps every coefficient within `max_error`."""

    depth: int
    max_error: Fraction | None
    span: Span


@dataclass(frozen=True, slots=True)
class _Settings:
    semiring: Semiring = REAL
    approx: ApproxPolicy | None = None
    border: str | None = None


def check(program: ast.Program) -> Module:
    """Evaluate every definition of `program`; raise KalgSemanticError on the first problem."""
    target = target_of(program)
    lines = {s.name: s.span.line for s in reversed(program.statements)
             if isinstance(s, ast.KernelDef | ast.FilterDef)}
    definitions: dict[str, Definition] = {}
    kernels: dict[str, Kernel] = {}
    trees: dict[str, Tree] = {}
    defaults = _Settings()
    for statement in program.statements:
        if isinstance(statement, ast.SemiringSetting):
            defaults = replace(defaults, semiring=_semiring(statement))
        elif isinstance(statement, ast.ApproxSetting):
            defaults = replace(defaults, approx=_approx_policy(statement))
        elif isinstance(statement, ast.BorderSetting):
            defaults = replace(defaults, border=_border(statement))
        elif isinstance(statement, ast.KernelDef | ast.FilterDef):
            _check_new_name(statement, definitions, target.inputs)
            filters = frozenset(n for n, d in definitions.items() if d.kind == "filter")
            scope = Scope(kernels, filters, lines, statement.name, inputs=target.inputs)
            settings = _own_settings(statement.settings, defaults)
            definition = _define(statement, scope, settings, target, trees)
            definitions[statement.name] = definition
            if definition.kind == "kernel":
                kernels[statement.name] = definition.exact[target.input]
                trees[statement.name] = definition.structure.get(
                    target.input, ("leaf", definition.exact[target.input]))
    if not definitions:
        raise _no_definitions(program)
    return Module(program.path, definitions, target)


# ----------------------------------------------------------------------- names
def _check_new_name(statement: ast.KernelDef | ast.FilterDef,
                    definitions: dict[str, Definition], inputs: tuple[str, ...]) -> None:
    name = statement.name
    if name in MONOMIALS:
        raise KalgSemanticError(f"{name!r} is the built-in monomial {name}: choose another name",
                                statement.name_span)
    if name in inputs:  # several inputs: in a filter's outputs the name denotes the input
        raise KalgSemanticError(
            f"{name!r} names an input of the target (input: {' '.join(inputs)}): in a "
            f"filter's outputs {name} denotes that input, so a definition cannot take its "
            "name; choose another", statement.name_span)
    if (earlier := definitions.get(name)) is not None:
        raise KalgSemanticError(f"{name!r} is already defined on line {earlier.span.line}",
                                statement.name_span)


def _no_definitions(program: ast.Program) -> KalgSemanticError:
    blank = all(not line.split("#", 1)[0].strip() for line in program.source.splitlines())
    what = "empty file" if blank else "no definitions"
    return KalgSemanticError(
        f"{what}: expected at least one 'kernel NAME = ...' or 'filter NAME = [...]'",
        Span(program.path, 1, 1, program.source))


# ----------------------------------------------------------------------- settings
def _semiring(setting: ast.SemiringSetting) -> Semiring:
    if (semiring := SEMIRINGS.get(setting.name)) is None:
        raise KalgSemanticError(f"unknown semiring {setting.name!r}: expected one of "
                                f"{', '.join(sorted(SEMIRINGS))}", setting.name_span)
    return semiring


def _border(setting: ast.BorderSetting) -> str:
    """The border's canonical text ('replicate', 'constant 0.5'); an unknown mode is located."""
    text = setting.mode if setting.value is None else f"{setting.mode} {float(setting.value)}"
    try:
        return str(parse_border(text))
    except KalgError as err:
        raise KalgSemanticError(err.message, setting.mode_span) from None


def _approx_policy(setting: ast.ApproxSetting) -> ApproxPolicy:
    values: dict[str, ast.ApproxParam] = {}
    for param in setting.params:
        if param.name not in APPROX_PARAMS:
            raise KalgSemanticError(f"unknown approx parameter {param.name!r}: expected "
                                    f"{' or '.join(APPROX_PARAMS)}", param.span)
        if param.name in values:
            raise KalgSemanticError(f"approx parameter {param.name!r} is given twice",
                                    param.span)
        values[param.name] = param
    depth = approx.DEFAULT_MAX_DEPTH
    if (param := values.get("depth")) is not None:
        if param.value.denominator != 1:
            raise KalgSemanticError(f"depth is a whole number of halvings, not {param.value}",
                                    param.value_span)
        depth = int(param.value)
        if depth > approx.MAX_DEPTH:
            raise KalgSemanticError(f"depth {depth} is deeper than kalg's limit of "
                                    f"{approx.MAX_DEPTH}", param.value_span)
    max_error = values["max_error"].value if "max_error" in values else None
    if max_error is not None and max_error <= 0:
        raise KalgSemanticError("max_error must be greater than 0", values["max_error"].value_span)
    return ApproxPolicy(depth, max_error, setting.span)


def _own_settings(settings: tuple[ast.Setting, ...], defaults: _Settings) -> _Settings:
    """The defaults, overridden by a definition's `with` clause (each setting at most once)."""
    seen: set[type] = set()
    own = defaults
    for setting in settings:
        if type(setting) in seen:
            raise KalgSemanticError("this setting is already given for this definition",
                                    setting.span)
        seen.add(type(setting))
        if isinstance(setting, ast.SemiringSetting):
            own = replace(own, semiring=_semiring(setting))
        elif isinstance(setting, ast.BorderSetting):
            own = replace(own, border=_border(setting))
        else:
            own = replace(own, approx=_approx_policy(setting))
    return own


# ----------------------------------------------------------------------- definitions
def _define(statement: ast.KernelDef | ast.FilterDef, scope: Scope, settings: _Settings,
            target: Target, trees: dict[str, Tree]) -> Definition:
    if isinstance(statement, ast.KernelDef):
        kind = "kernel"
        places = {target.input: (statement.expr, statement.name_span)}
    else:
        kind = "filter"
        places = _filter_outputs(statement, target)
        if target.inputs:
            return _channel_filter(statement, places, scope, target, settings)
    what = f"{kind} {statement.name!r}"
    exact = {register: _value(expr, span, scope, settings.semiring, what)
             for register, (expr, span) in places.items()}
    outputs, errors, depths, unapproximated = {}, {}, {}, {}
    for register, kernel in exact.items():
        outputs[register] = kernel
        if (err := _unapproximated(kernel, settings.approx, places[register][1], what)):
            unapproximated[register] = err
        elif _needs_approximation(kernel, settings.approx):
            assert settings.approx is not None
            with located(places[register][1]):
                depth = approx.choose_depth(kernel, settings.approx.depth,
                                            settings.approx.max_error)
            outputs[register], errors[register] = approx.approximate(kernel, depth)
            depths[register] = depth
    written = {}
    for register, (expr, _) in places.items():  # every semiring (the cpu target's too)
        tree = structure(expr, scope, trees, settings.semiring)
        if tree is not None and register not in errors | unapproximated.keys():
            written[register] = tree
    return Definition(statement.name, kind, outputs, settings.semiring, statement.span,
                      approx_error=errors, approx_depth=depths, exact=exact,
                      unapproximated=unapproximated, border=settings.border,
                      structure=written)


def _channel_filter(statement: ast.FilterDef, places: dict[str, tuple[ast.Expr, Span]],
                    scope: Scope, target: Target, settings: _Settings) -> Definition:
    """A filter over several inputs: each output a kernel per input channel. Non-dyadic
    kernels are approximated as ordinary kernels are (`_channel_approximation`), or kept exact
    with the located error SCAMP-5 raises when no approx setting applies."""
    scope = replace(scope, channels=frozenset(target.inputs))
    what = f"filter {statement.name!r}"
    if settings.semiring is not REAL:
        own = next((s.span for s in statement.settings if isinstance(s, ast.SemiringSetting)),
                   None)
        raise KalgSemanticError(
            f"{what} reads several inputs: its outputs are real sums of kernels applied to "
            f"the inputs, so it cannot be {settings.semiring.name}", own or statement.name_span,
            hint=f"remove 'semiring {settings.semiring.name}' from this filter" if own else
            f"the line 'semiring {settings.semiring.name}' before it sets its semiring: add "
            "'with semiring real' to the filter, or move that line after it")
    exact: dict[str, dict[str, Kernel]] = {}
    channels: dict[str, dict[str, Kernel]] = {}
    errors, depths, unapproximated = {}, {}, {}
    for register, (expr, span) in places.items():
        value = evaluate(expr, scope, REAL)
        if not isinstance(value, Channels):
            raise KalgSemanticError(
                f"output {register} names no input: the target reads the inputs "
                f"{', '.join(target.inputs)}, so every term applies a kernel to one of them, "
                f"e.g. 'k * {target.inputs[0]}'", span)
        exact[register] = channels[register] = value.as_dict()
        if not any(not k.is_dyadic() for k in value.as_dict().values()):
            continue
        if settings.approx is None:
            channel, kernel = next((c, k) for c, k in value.parts if not k.is_dyadic())
            unapproximated[register] = _unapproximated(
                kernel, None, span, f"{what}: output {register} on input {channel}")
            continue
        with located(span):
            channels[register], errors[register], depths[register] = _channel_approximation(
                value.as_dict(), settings.approx)
    return Definition(statement.name, "filter", {}, REAL, statement.span, channels=channels,
                      inputs=target.inputs, exact_channels=exact, approx_error=errors,
                      approx_depth=depths, unapproximated=unapproximated,
                      border=settings.border)


def _channel_approximation(parts: dict[str, Kernel], policy: ApproxPolicy,
                           ) -> tuple[dict[str, Kernel], Fraction, int]:
    """An output's kernels, one per input, approximated at ONE depth (so that each input is
    divided once for all of them): the deepest that any non-dyadic kernel needs under the
    policy (rounding to a finer grid never increases an error, so every kernel stays within
    max_error). Returns the kernels, the largest coefficient error and the depth."""
    rough = [k for k in parts.values() if not k.is_dyadic()]
    depth = max(approx.choose_depth(k, policy.depth, policy.max_error) for k in rough)
    out, error = {}, Fraction(0)
    for channel, kernel in parts.items():
        if kernel.is_dyadic():
            out[channel] = kernel
            continue
        out[channel], e = approx.approximate(kernel, depth)
        error = max(error, e)
    return out, error, depth


def _filter_outputs(statement: ast.FilterDef, target: Target,
                    ) -> dict[str, tuple[ast.Expr, Span]]:
    """Output name → (expression, span). The names are target registers, except in a filter
    with more outputs than the target has registers (a layer, `kalg.targets.scamp5.layers`):
    one program cannot hold it, so its outputs are labels that the layer's programs place in
    registers (the pipeline refuses it unless a split is asked for)."""
    places: dict[str, tuple[ast.Expr, Span]] = {}
    layer = len(statement.outputs) + len(target.inputs) > len(target.registers)
    for output in statement.outputs:
        if output.register not in target.registers and not layer:
            raise KalgSemanticError(
                f"{output.register!r} is not a register of the target: expected one of "
                f"{', '.join(target.registers)}", output.span)
        if output.register in places:
            raise KalgSemanticError(f"register {output.register!r} is given two outputs",
                                    output.span)
        places[output.register] = (output.expr, output.span)
    return places


def _value(expr: ast.Expr, span: Span, scope: Scope, semiring: Semiring, what: str) -> Kernel:
    kernel = evaluate(expr, scope, semiring)
    if kernel.semiring is not semiring:
        raise KalgSemanticError(
            f"{what} is declared {semiring.name} but its value is a {kernel.semiring.name} "
            f"kernel", span, hint=f"add 'with semiring {kernel.semiring.name}' to it")
    return kernel


def _needs_approximation(kernel: Kernel, policy: ApproxPolicy | None) -> bool:
    """Whether `kernel` is to be approximated: real, non-dyadic, and a policy is set."""
    return kernel.semiring is REAL and not kernel.is_dyadic() and policy is not None


def _unapproximated(kernel: Kernel, policy: ApproxPolicy | None, span: Span,
                    what: str) -> KalgSemanticError | None:
    """The error SCAMP-5 reports for a non-dyadic real kernel without an approx policy (kept
    exact: the cpu target multiplies, so it needs no approximation), or None."""
    if kernel.semiring is not REAL or kernel.is_dyadic() or policy is not None:
        return None
    offset, coefficient = next((o, c) for o, c in kernel.entries if not _dyadic(c))
    return KalgSemanticError(
        f"{what} has the non-dyadic coefficient {coefficient} at offset {offset}: SCAMP-5 "
        "can only halve, so it must be approximated", span,
        hint="add 'with approx depth 6' to the definition, or a line 'approx max_error 0.01' "
             "before it (the cpu target, '--target cpu', takes it exactly)")


def _dyadic(coefficient: object) -> bool:
    return Kernel.of({(0, 0): coefficient}).is_dyadic()
