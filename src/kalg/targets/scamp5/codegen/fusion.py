"""Two instructions of virtual code made one: op set all's macros from the steps that make them.

The goal-bag search (`codegen.goalbag`) builds a goal one instruction at a time, so a value
made only to be read once by the next step costs an instruction of its own: t = a + b read
only by g = t + c, or by a move g = S^v t. Op set all does each pair in one instruction, and
`fuse` writes it so, wherever the value t is read exactly once:

* t = a + b,  g = t + c      ->  g = a + b + c            (three-operand ``add``)
* t = a + b,  g = S^v t      ->  g = S^v (a + b)          (``addx`` / ``add2x``)
* t = S^d a,  g = S^e t      ->  g = S^{d+e} a            (``mov2x``; never opposite steps)
* t = S^v a,  g = t - b      ->  g = S^v a - b            (``subx`` / ``sub2x``)
* t = -a,     g = b + t      ->  g = b - a;   g = b - t  ->  g = b + a

The fused instruction takes the consumer's place, so the producer's operands are read later:
that can need more registers, which is why each fusion is kept only where `accept` (the
caller's allocation) still takes the code. Code is SSA (each value written once), as the
goal-bag search makes it. Same values, one instruction fewer per fusion; deterministic (the
pairs are tried in program order). The caller verifies the program, as for any.
"""

from __future__ import annotations

from collections.abc import Callable

from kalg.targets.scamp5.codegen.virtual import TwoSteps

_KEEP = {("in",)}


def fuse(code: list[tuple], accept: Callable[[list[tuple]], bool]) -> list[tuple]:
    """`code` with every pair of instructions above made one where `accept` takes the result,
    repeated until no pair is left; `code` itself where none is."""
    tried: set = set()
    while True:
        for i, j, merged in _pairs(code):
            if (i, j, merged) in tried:
                continue
            tried.add((i, j, merged))
            shorter = code[:i] + code[i + 1:j] + [merged] + code[j + 1:]
            if accept(shorter):
                code = shorter
                tried.clear()
                break
        else:
            return code


def _pairs(code: list[tuple]):
    """(producer index, consumer index, the fused instruction) of each pair, in order."""
    reads: dict = {}
    for j, (_, _, srcs, extra) in enumerate(code):
        for s in srcs:
            reads.setdefault(s, []).append(j)
        if isinstance(extra, tuple):
            reads.setdefault(extra, []).extend((j, j))  # div's scratch: never fused
    for i, producer in enumerate(code):
        t = producer[1]
        if t in _KEEP or t[0] == "out" or len(reads.get(t, ())) != 1:
            continue
        j = reads[t][0]
        merged = _merged(producer, code[j])
        if merged is not None:
            yield i, j, merged


def _merged(producer: tuple, consumer: tuple) -> tuple | None:
    """The one instruction that does `producer` then `consumer` (which reads the producer's
    value once), or None."""
    op, t, srcs, extra = producer
    cop, g, csrcs, cextra = consumer
    others = tuple(s for s in csrcs if s != t)
    if op == "add" and len(srcs) == 2:
        if cop == "add" and len(csrcs) == 2 and others[0] not in srcs:
            return "add", g, (*srcs, others[0]), None
        if cop in ("movx", "mov2x"):
            return ("addx" if cop == "movx" else "add2x"), g, srcs, cextra
    if op == "movx" and cop == "movx" and cextra != extra.opposite():
        return "mov2x", g, srcs, TwoSteps(extra, cextra)
    if op in ("movx", "mov2x") and cop == "sub" and csrcs[0] == t and csrcs[1] != srcs[0]:
        return ("subx" if op == "movx" else "sub2x"), g, (srcs[0], csrcs[1]), extra
    if op == "neg" and others and others[0] != srcs[0] and len(csrcs) == 2:
        if cop == "add":
            return "sub", g, (others[0], srcs[0]), None
        if cop == "sub" and csrcs[1] == t:
            return "add", g, (others[0], srcs[0]), None
    return None
