"""The generality suite's columns for `kalg bench --suite generality`: the Horner baseline of a
kernel, the totals against the best count found and the proven optimum, and the table.

A generality suite (bench/generality.json) lists kernels outside the benchmark with two
figures that the compiler never reads: "optimum" (the length kalg's exhaustive search proved
shortest, where it finished) and "best" (the fewest instructions any kalg configuration has
found, kept by scripts/generality.py --update).
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from pathlib import Path

from kalg.diagnostics import KalgError

HORNER_VALUES = 400
"""Horner baselines with more live values than this are not compiled (a 31x31 kernel's has
about 2000: the code generator would take minutes); the column says so."""

COLUMNS = ("kernel", "ops", "kalg", "proven optimum", "best found", "horner", "compile s",
           "verified", "kalg/optimum", "kalg/best", "won by")


def horner_count(path: Path, ops: str, registers: tuple[str, ...] | None) -> int | None:
    """Instructions of the Horner baseline (`direct_decomposition`, screening budget, verified
    exactly by the code generator); None when it is too large or does not fit."""
    from kalg import frontend
    from kalg.targets.scamp5 import codegen  # numpy, python-flint: only when compiling
    from kalg.targets.scamp5.optimize import direct_decomposition

    module = frontend.load_file(path)
    definition = module.definition(None)
    decomp = direct_decomposition(definition.outputs)
    if len(decomp.live()) > HORNER_VALUES:
        return None
    try:
        program = codegen.generate(decomp, registers or module.target.registers,
                                   module.target.input, ops, codegen.QUICK)
    except KalgError:
        return None
    return len(program)


def totals(rows: Sequence) -> dict:
    """Over compiled rows: kalg's sum against the best found and against the proven optimum
    (each over the rows that have it), how many rows equal the optimum, the Horner sum."""
    ok = [r for r in rows if r.error is None]
    best = [r for r in ok if "best" in r.figures]
    opt = [r for r in ok if "optimum" in r.figures]
    horner = [r for r in ok if r.horner is not None]
    times = [r.compile_s for r in ok]
    return {
        "best_rows": len(best), "kalg_on_best": sum(r.instructions for r in best),
        "best_sum": sum(int(r.figures["best"]) for r in best),
        "optimum_rows": len(opt), "kalg_on_optimum": sum(r.instructions for r in opt),
        "optimum_sum": sum(int(r.figures["optimum"]) for r in opt),
        "at_optimum": sum(r.instructions == r.figures["optimum"] for r in opt),
        "horner_rows": len(horner), "kalg_on_horner": sum(r.instructions for r in horner),
        "horner_sum": sum(r.horner for r in horner),
        "median_compile_s": round(statistics.median(times), 3) if times else None,
        "max_compile_s": round(max(times), 3) if times else None,
    }


def format_markdown(rows: Sequence, all_totals: dict[str, dict]) -> str:
    lines = ["| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    lines += ["| " + " | ".join(_cells(r)) + " |" for r in rows]
    lines += ["\n" + _summary(ops, t) for ops, t in all_totals.items()]
    return "\n".join(lines) + "\n"


def _cells(r) -> list[str]:
    f = r.figures
    kalg = "—" if r.instructions is None else str(r.instructions)
    opt, best = f.get("optimum"), f.get("best")
    won_by = (r.candidate or "") if r.error is None else "error: " + r.error.replace("|", "\\|")
    horner = "" if r.horner is None else str(r.horner)
    return [r.kernel, r.ops, kalg, _int(opt), _int(best), horner, f"{r.compile_s:.1f}",
            "yes" if r.verified else "no", _ratio(r.instructions, opt),
            _ratio(r.instructions, best), won_by]


def _summary(ops: str, t: dict) -> str:
    parts = [f"op set {ops}: {t['rows']} kernels"]
    if t["best_rows"]:
        parts.append(f"kalg {t['kalg_on_best']} instructions against the best found "
                     f"{t['best_sum']} (ratio {_ratio(t['kalg_on_best'], t['best_sum'])}, "
                     f"{t['best_rows']} kernels)")
    if t["optimum_rows"]:
        parts.append(f"proven optimum known for {t['optimum_rows']}: kalg {t['kalg_on_optimum']}"
                     f" against {t['optimum_sum']}, equal on {t['at_optimum']}")
    else:
        parts.append("no proven optimum known")
    if t["horner_rows"]:
        parts.append(f"Horner baseline {t['horner_sum']} where it compiles "
                     f"({t['horner_rows']} kernels; kalg {t['kalg_on_horner']} there)")
    if t["median_compile_s"] is not None:
        parts.append(f"compile median {t['median_compile_s']:.1f} s, "
                     f"max {t['max_compile_s']:.1f} s")
    if t["failed"]:
        parts.append(f"{t['failed']} failed")
    return "; ".join(parts)


def _int(v: float | None) -> str:
    return "" if v is None else str(int(v))


def _ratio(a: float | None, b: float | None) -> str:
    return "" if a is None or not b else f"{a / b:.2f}"
