"""Hypothesis strategies for fuzzing kalg's two input languages (issue 14).

* `kalg_sources()`: .kalg texts built from the grammar's constructs (target blocks, semiring and
  approx defaults, kernels and filters over matrices, numbers, x/y, names, operators, powers and
  functions), valid and nearly valid, with random layout;
* `mutated_examples()`: bytes of a shipped example with random byte-level edits (deletions,
  insertions, duplications, replacements);
* `program_texts()`: SCAMP-5 program texts from the macros' spellings, with random registers,
  directions and mistakes.

`run_kalg(argv)` runs the command line in process and returns (exit code, stdout, stderr,
seconds); an exception other than a clean exit is left to propagate (a traceback is a bug).
"""

from __future__ import annotations

import contextlib
import io
import re
import time
from pathlib import Path

from hypothesis import strategies as st

from kalg.cli import main

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = sorted((ROOT / "examples").glob("*.kalg"))

LOCATED = re.compile(r"^(?P<path>[^\n]+?):(?P<line>\d+):(?P<col>\d+): error: ", re.M)
"""An error message that says where: FILE:LINE:COL: error: ..."""

# ----------------------------------------------------------------------------- .kalg sources
NAMES = ("k", "a", "b", "sobel", "x1", "box")
REGISTERS = ("A", "B", "C", "F", "G", "a", "Z")


def _number() -> st.SearchStrategy[str]:
    ints = st.integers(-40, 40).map(str)
    decimals = st.tuples(st.integers(0, 9), st.integers(0, 999)).map(lambda t: f"{t[0]}.{t[1]}")
    fractions = st.tuples(st.integers(-9, 9), st.integers(0, 9)).map(lambda t: f"{t[0]}/{t[1]}")
    return st.one_of(ints, ints, decimals, fractions, st.sampled_from(["inf", "-inf", "."]))


def _matrix() -> st.SearchStrategy[str]:
    cells = st.lists(_number(), min_size=0, max_size=5)
    rows = st.lists(cells.map(" ".join), min_size=1, max_size=5)
    sep = st.sampled_from(["; ", "\n", ";", " ; "])
    origin = st.one_of(st.just(""), st.tuples(st.integers(-1, 5), st.integers(-1, 5)).map(
        lambda t: f" @ ({t[0]}, {t[1]})"))
    return st.tuples(rows, sep, origin).map(lambda t: "[" + t[1].join(t[0]) + "]" + t[2])


def _expr() -> st.SearchStrategy[str]:
    leaves = st.one_of(_matrix(), st.sampled_from(["x", "y", "1", "2", "3/4", "0.5", *NAMES]),
                       st.tuples(st.integers(-3, 3), st.integers(-3, 3)).map(
                           lambda t: f"shift({t[0]}, {t[1]})"))

    def extend(inner):
        binary = st.tuples(inner, st.sampled_from([" + ", " - ", " * ", "*", " / ", "+"]),
                           inner).map("".join)
        power = st.tuples(inner, st.integers(-3, 70)).map(lambda t: f"({t[0]})^{t[1]}")
        call = st.tuples(st.sampled_from(["transpose", "flip", "mirror_x", "mirror_y", "shift",
                                          "nosuch"]), inner).map(lambda t: f"{t[0]}({t[1]})")
        shift3 = st.tuples(inner, st.integers(-4, 4), st.integers(-4, 4)).map(
            lambda t: f"shift({t[0]}, {t[1]}, {t[2]})")
        return st.one_of(binary, power, call, shift3, inner.map(lambda e: f"({e})"),
                         inner.map(lambda e: f"-{e}"))

    return st.recursive(leaves, extend, max_leaves=6)


def _setting() -> st.SearchStrategy[str]:
    semiring = st.sampled_from(["real", "minplus", "maxplus", "boolean", "tropical"]).map(
        lambda s: f"semiring {s}")
    approx = st.tuples(st.sampled_from(["depth", "max_error", "digits"]),
                       st.sampled_from(["6", "0", "-2", "0.01", "1/100", "99"])).map(
        lambda t: f"approx {t[0]} {t[1]}")
    return st.one_of(semiring, approx)


def _statement() -> st.SearchStrategy[str]:
    name = st.sampled_from(NAMES)
    withs = st.one_of(st.just(""), st.lists(_setting(), min_size=1, max_size=2).map(
        lambda s: " with " + ", ".join(s)))
    kernel = st.tuples(name, _expr(), withs).map(lambda t: f"kernel {t[0]} = {t[1]}{t[2]}")
    outputs = st.lists(st.tuples(st.sampled_from(REGISTERS), _expr()).map(
        lambda t: f"{t[0]}: {t[1]}"), min_size=1, max_size=3)
    filt = st.tuples(name, outputs, withs).map(
        lambda t: f"filter {t[0]} = [{', '.join(t[1])}]{t[2]}")
    fields = st.lists(st.sampled_from(["registers: A..F", "registers: A..C", "registers: B..A",
                                       "registers: A..Z", "input: A", "input: B", "input: Q",
                                       "ops: all", "ops: basic", "ops: fancy", "colour: red"]),
                      max_size=3)
    target = st.tuples(st.sampled_from(["scamp5", "scamp5_wide", "gpu"]), fields).map(
        lambda t: f"target {t[0]} {{ {', '.join(t[1])} }}")
    return st.one_of(kernel, kernel, filt, target, _setting())


def kalg_sources() -> st.SearchStrategy[str]:
    """Grammar-aware .kalg texts: 1-4 statements, comments and blank lines between."""
    gap = st.sampled_from(["\n", "\n\n", "  # note\n", "\n# comment\n", ";\n"])
    return st.lists(st.tuples(_statement(), gap).map("".join), min_size=1, max_size=4).map(
        "".join)


# ----------------------------------------------------------------------------- byte mutations
def _mutate(data: bytes, edits: list[tuple[int, int, int, bytes]]) -> bytes:
    for kind, at, length, insert in edits:
        at = at % (len(data) + 1)
        if kind == 0:
            data = data[:at] + data[at + length:]
        elif kind == 1:
            data = data[:at] + insert + data[at:]
        elif kind == 2:
            data = data[:at] + data[at:at + length] * 2 + data[at + length:]
        else:
            data = data[:at] + insert + data[at + len(insert):]
    return data


def mutated_examples() -> st.SearchStrategy[bytes]:
    """An example file's bytes after 1-4 random edits (may be invalid UTF-8)."""
    edit = st.tuples(st.integers(0, 3), st.integers(0, 4000), st.integers(1, 40),
                     st.binary(min_size=1, max_size=6) | st.sampled_from(
                         [b"(", b")", b"[", b"]", b";", b"^", b"-", b"9" * 30, b"\xff", b"\n",
                          b"with", b"@ (0, 0)", b"kernel", b"\xef\xbb\xbf"]))
    return st.tuples(st.sampled_from(EXAMPLES), st.lists(edit, min_size=1, max_size=4)).map(
        lambda t: _mutate(t[0].read_bytes(), t[1]))


# ----------------------------------------------------------------------------- program texts
_DIRS = ("north", "south", "east", "west", "up", "")
_REGS = ("A", "B", "C", "D", "E", "F", "G", "Z", "a", "")
_MACROS = ("mov", "add", "sub", "neg", "div", "divq", "res", "movx", "mov2x", "addx", "add2x",
           "subx", "sub2x", "add3", "foo")


def program_texts() -> st.SearchStrategy[str]:
    """SCAMP-5 program texts: random macros with random operands, mostly well formed."""
    operand = st.one_of(st.sampled_from(_REGS), st.sampled_from(_DIRS))
    instruction = st.tuples(st.sampled_from(_MACROS), st.lists(operand, min_size=0, max_size=5),
                            st.sampled_from([";", ";", ";", "", ";;", "; // c"])).map(
        lambda t: f"{t[0]}({', '.join(t[1])}){t[2]}")
    body = st.lists(instruction, min_size=0, max_size=8).map("\n".join)
    frame = st.sampled_from([("scamp5_kernel_begin();\n", "\nscamp5_kernel_end();\n"),
                             ("", "\n"), ("scamp5_kernel_begin();\n", "\n")])
    return st.tuples(frame, body).map(lambda t: t[0][0] + t[1] + t[0][1])


# ----------------------------------------------------------------------------- running
def run_kalg(argv: list[str]) -> tuple[int, str, str, float]:
    """Run the command line in process, capturing stdout and stderr."""
    out, err = io.StringIO(), io.StringIO()
    start = time.perf_counter()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(argv)
    return code, out.getvalue(), err.getvalue(), time.perf_counter() - start


def check_outcome(code: int, err: str, path: Path, *, located: bool = True) -> None:
    """Exit 0 or 1; on 1 (and with `located`) the first line says FILE:LINE:COL: error:."""
    assert code in (0, 1), f"exit {code}: {err}"
    assert "Traceback" not in err, err[-1500:]
    if code == 1 and located:
        first = err.splitlines()[0] if err else ""
        match = LOCATED.match(first)
        assert match and match["path"] == str(path), f"error without a location: {first!r}"


# ----------------------------------------------------------------------------- hostile sizes
def _big_number() -> st.SearchStrategy[str]:
    """Integers, decimals and fractions from 2^31 to about 10^60, of either sign."""
    big = st.integers(2**31, 10**60) | st.integers(-(10**60), -(2**31)) | st.sampled_from(
        [2**31, 2**31 + 1, 2**63, 2**63 + 1, 2**64, -(2**31)])
    decimal = st.tuples(big, st.integers(0, 10**30)).map(lambda t: f"{t[0]}.{t[1]}")
    fraction = st.tuples(big, st.integers(1, 2**70)).map(lambda t: f"{t[0]}/{t[1]}")
    return st.one_of(big.map(str), big.map(str), decimal, fraction, st.integers(-9, 9).map(str))


def large_value_sources() -> st.SearchStrategy[str]:
    """.kalg texts whose kernels hold huge coefficients (2^31 and up), in matrices of up to
    9x9, scaled, divided, raised to powers, in filters, with approximation settings."""
    cells = st.lists(_big_number(), min_size=1, max_size=9)
    rows = st.integers(1, 9).flatmap(lambda n: st.lists(
        st.lists(_big_number(), min_size=n, max_size=n).map(" ".join), min_size=1, max_size=9))
    matrix = st.one_of(cells.map(lambda c: "[" + " ".join(c) + "]"),
                       rows.map(lambda r: "[" + "; ".join(r) + "]"))
    term = st.one_of(matrix, st.tuples(matrix, _big_number()).map(lambda t: f"{t[0]} / {t[1]}"),
                     st.tuples(matrix, _big_number()).map(lambda t: f"{t[0]} * {t[1]}"),
                     st.tuples(st.sampled_from(["(1 + x)", "(x - y)"]), st.integers(0, 70),
                               _big_number()).map(lambda t: f"{t[0]}^{t[1]} * {t[2]}"))
    setting = st.sampled_from(["", " with approx depth 8", " with approx depth 32",
                               " with approx max_error 0.001", " with semiring minplus"])
    kernel = st.tuples(term, setting).map(lambda t: f"kernel k = {t[0]}{t[1]}\n")
    filt = st.tuples(term, term).map(lambda t: f"filter f = [A: {t[0]}, B: {t[1]}]\n")
    return st.one_of(kernel, kernel, filt)


def deeply_nested_sources() -> st.SearchStrategy[str]:
    """.kalg texts with one expression nested 150 to 600 levels deep: parentheses, unary minus,
    functions, long chains of + and *, mixed, around small kernels."""
    level = st.sampled_from(["({})", "-{}", "transpose({})", "flip({})", "shift({}, 1, 0)",
                             "({} + x)", "(y * {})", "{} - 1", "mirror_x({})", "({})^1"])
    leaf = st.sampled_from(["x", "y", "[1 2 1]", "1/3", "k"])

    def nest(t: tuple[list[str], str]) -> str:
        text = t[1]
        for pattern in t[0]:
            text = pattern.format(text)
        return text

    nested = st.tuples(st.integers(150, 600).flatmap(
        lambda n: st.lists(level, min_size=n, max_size=n)), leaf).map(nest)
    chain = st.tuples(st.integers(150, 600), st.sampled_from([" + ", " * ", " - "]), leaf).map(
        lambda t: t[1].join([t[2]] * t[0]))
    return st.tuples(st.one_of(nested, chain), st.sampled_from(["", " with approx depth 6"])).map(
        lambda t: f"kernel k = [1 1 1]\nkernel d = {t[0]}{t[1]}\n")


# ----------------------------------------------------------------------------- layers (issue 27)
def _small_kernel() -> st.SearchStrategy[str]:
    """A 1x1 to 3x3 matrix of small integers, sometimes over a power of two or odd divisor."""
    side = st.sampled_from([3, 1, 3, 3, 3, 2])
    shape = st.tuples(side, side)
    rows = shape.flatmap(lambda s: st.lists(st.lists(st.integers(-4, 4), min_size=s[1],
                                                     max_size=s[1]).map(
        lambda r: " ".join(map(str, r))), min_size=s[0], max_size=s[0]))
    divisor = st.sampled_from(["", "", "", " / 2", " / 8", " / 3", " / 4", " / 16", " / 0"])
    return st.tuples(rows, divisor).map(lambda t: "[" + "; ".join(t[0]) + "]" + t[1])


_OUTPUT_NAMES = (*"ABCDEFGHIJKLMNOP", "out", "map1", "q", "A", "_x")


def _name(kind: str, i: int) -> str:
    """Output i's name: a register letter (from B) or 'm' + i."""
    return f"m{i}" if kind == "m" else kind[i]


def layer_sources() -> st.SearchStrategy[str]:
    """Filters with more outputs than registers (5-20 outputs of small kernels), single- or
    multi-channel (inputs A, B, C), with or without `split` in the target block (auto, a
    number, nonsense), register ranges and inputs that clash with the outputs."""
    split = st.sampled_from(["", "", ", split: auto", ", split: auto", ", split: auto",
                             ", split: auto", ", split: 2", ", split: 0", ", split: fast"])
    registers = st.sampled_from(["A..F", "A..F", "A..H", "A..C", "A..P", "B..A"])
    inputs = st.sampled_from([["A"], ["A"], ["A", "B"], ["A", "B", "C"], ["Q"]])
    target = st.tuples(st.sampled_from(["scamp5", "scamp5", "scamp5_wide"]), registers,
                       inputs, split).map(
        lambda t: f"target {t[0]} {{ registers: {t[1]}, input: {' '.join(t[2])}{t[3]} }}\n")

    def output(t: tuple[str, list[str], list[str]]) -> str:
        name, kernels, channels = t
        terms = [f"{k} * {c}" for k, c in zip(kernels, channels, strict=False)] or kernels
        return f"{name}: {' + '.join(terms)}"

    body = st.tuples(st.lists(_small_kernel(), min_size=1, max_size=3),
                     st.lists(st.sampled_from(["A", "A", "B", "C", "Z"]), max_size=3))
    kind = st.sampled_from(["BCDEFGHIJKLMNOPQRSTU", "BCDEFGHIJKLMNOPQRSTU", "m"])
    named = st.tuples(kind, st.lists(body, min_size=5, max_size=20)).map(
        lambda t: [output((_name(t[0], i), *b)) for i, b in enumerate(t[1])])
    clash = st.tuples(named, st.sampled_from(_OUTPUT_NAMES)).map(
        lambda t: [*t[0], f"{t[1]}: [1]"])
    filt = st.one_of(named, named, named, clash).map(
        lambda o: "filter layer = [\n  " + ",\n  ".join(o) + ",\n]\n")
    return st.tuples(st.one_of(st.just(""), target), filt).map("".join)


def small_layer_sources() -> st.SearchStrategy[str]:
    """Layers cheap enough to compile in a campaign: 7-9 outputs (B, C, ... in order) of 1x1 or
    1x3 kernels of small integers, sometimes over 2 or 4, on one input with `split: auto`;
    one in ten has a mistake to refuse (a repeated output, a bad split)."""
    cell = st.integers(-3, 3)
    kernel = st.tuples(st.one_of(st.lists(cell, min_size=3, max_size=3), st.lists(
        cell, min_size=1, max_size=1)), st.sampled_from(["", "", " / 2", " / 4"])).map(
        lambda t: "[" + " ".join(map(str, t[0])) + "]" + t[1])
    outputs = st.lists(kernel, min_size=7, max_size=9).map(
        lambda ks: [f"{'BCDEFGHIJ'[i]}: {k}" for i, k in enumerate(ks)])
    mistake = st.sampled_from(["", "", "", "", "", "", "", "", "B: [1]", "split"])

    def text(t: tuple[list[str], str]) -> str:
        outs, wrong = t
        split = "nonsense" if wrong == "split" else "auto"
        outs = [*outs, wrong] if wrong and wrong != "split" else outs
        return (f"target scamp5 {{ registers: A..F, input: A, split: {split} }}\n"
                f"filter layer = [{', '.join(outs)}]\n")

    return st.tuples(outputs, mistake).map(text)


# ----------------------------------------------------------------------------- batches
def batch_inputs() -> st.SearchStrategy[tuple[str, list[str]]]:
    """(a .kalg text of 3-12 definitions, the batch's path arguments): tiny kernels that
    compile, definitions that fail to compile (too many outputs, a semiring the target lacks,
    an empty kernel), and arguments naming a missing definition or file. The path arguments
    use '{f}' for the file."""
    good = st.one_of(st.lists(st.integers(-3, 3), min_size=3, max_size=3),
                     st.lists(st.integers(-3, 3), min_size=1, max_size=1)).map(
        lambda c: "[" + " ".join(map(str, c)) + "]")
    failing = st.sampled_from([
        "[1 2 1] with semiring minplus", "[0 0 0]", "[1 2 1] / 0", "nosuch * [1 1]",
        "[1 1 1; 1 1 1; 1 1 1] ^ 40", "[1 2 1] with approx depth 0"])
    kernel = st.one_of(good, good, good, good, good, good, good, good, failing)
    filt = st.lists(good, min_size=7, max_size=8).map(
        lambda ks: "[" + ", ".join(f"{r}: {k}" for r, k in zip("ABCDEFGH", ks,
                                                                 strict=False)) + "]")
    definition = st.one_of(kernel.map(lambda k: ("kernel", k)), filt.map(lambda f: ("filter",
                                                                                     f)))
    defs = st.lists(definition, min_size=3, max_size=12)

    def text(ds: list[tuple[str, str]]) -> str:
        return "".join(f"{kind} d{i} = {body}\n" for i, (kind, body) in enumerate(ds))

    args = st.lists(st.sampled_from(["{f}", "{f}", "{f}", "{f}:d0", "{f}:d2", "{f}:nosuch",
                                     "{f}x", "{f}:"]), min_size=1, max_size=3)
    return st.tuples(defs.map(text), args)


# ----------------------------------------------------------------------------- pipelines
def pipeline_sources() -> st.SearchStrategy[str]:
    """Pipeline blocks (issue 28's language): pointwise stages (+ - * / ^, abs, sqrt, min, max,
    clamp, select, comparisons), convolutions of small kernels, stages used before they are
    defined or by themselves (cycles), unknown names, kernels used as images, on the cpu or
    SCAMP-5 target."""
    stage_names = ["img", "s0", "s1", "img", "img", "img", "img", "img", "s3", "img2", "k",
                   "nosuch"]
    leaf = st.one_of(st.sampled_from(stage_names), st.sampled_from(["0.5", "2", "-1", "1/3"]),
                     st.tuples(st.sampled_from(["k", "transpose(k)", "k * k", "[1 2 1]", "img",
                                                "[1; 0; -1] / 2"]),
                               st.sampled_from(stage_names)).map(
                         lambda t: f"conv({t[0]}, {t[1]})"))

    def extend(inner):
        binary = st.tuples(inner, st.sampled_from([" + ", " - ", " * ", " / ", " < ", " >= ",
                                                   " == ", " != ", " ^ "]), inner).map("".join)
        unary = st.tuples(st.sampled_from(["abs", "sqrt", "-", ""]), inner).map(
            lambda t: f"{t[0]}({t[1]})")
        two = st.tuples(st.sampled_from(["min", "max", "min", "max", "abs"]), inner, inner).map(
            lambda t: f"{t[0]}({t[1]}, {t[2]})")
        three = st.tuples(st.sampled_from(["select", "clamp"]), inner, inner, inner).map(
            lambda t: f"{t[0]}({t[1]}, {t[2]}, {t[3]})")
        return st.one_of(binary, unary, two, three)

    expr = st.recursive(leaf, extend, max_leaves=6)
    keyword = st.sampled_from(["let"] * 20 + ["out", "val"])
    stages = st.lists(st.tuples(keyword, expr), min_size=1, max_size=5).map(
        lambda ss: [f"  {k} s{i} = {e}" for i, (k, e) in enumerate(ss)] + [
            f"  out r = {ss[-1][1]}"])
    clash = st.sampled_from(["  let img = img", "  out out = img", "  let s0 = s0",
                             "  let k = img", "  out s0 = 1"])
    stage_or_clash = st.one_of(stages, stages, stages, stages, stages, st.tuples(
        stages, clash).map(lambda t: [*t[0], t[1]]))
    params = st.sampled_from(["img"] * 12 + ["img, img2", "", "img, img"])
    border = st.sampled_from(["", "", "", " with border replicate", " with border constant 0",
                              " with border wrap", " with border nonsense"])
    target = st.sampled_from(["", "target cpu { input: A }\n", "target scamp5 { input: A }\n",
                              "target scamp5 { registers: A..F, input: A }\n"])
    block = st.tuples(target, params, stage_or_clash, border).map(
        lambda t: f"{t[0]}kernel k = [1 2 1; 0 0 0; -1 -2 -1]\n"
                  f"pipeline p({t[1]}) {{\n" + "\n".join(t[2]) + f"\n}}{t[3]}\n")
    return block
