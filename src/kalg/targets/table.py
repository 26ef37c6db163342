"""The Markdown table of a throughput bench (`kalg bench --target cpu|cuda`): one row per
measured dict, columns in order; None reads n/a, speed-ups as 1.23x, MP/s whole, differences in
scientific notation, other floats with two decimals. Light (no numpy): the cuda bench's GPU
side imports it where kalg's search is not installed."""

from __future__ import annotations

from collections.abc import Sequence


def markdown_table(results: list[dict], columns: Sequence[str]) -> str:
    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    for r in results:
        lines.append("| " + " | ".join(_cell(h, r.get(h)) for h in columns) + " |")
    return "\n".join(lines) + "\n"


def _cell(column: str, v: object) -> str:
    if v is None:
        return "n/a"
    if column.startswith("vs"):
        return f"{v:.2f}x"
    if column == "max diff":
        return f"{v:.1e}"
    if isinstance(v, float):
        return f"{v:.0f}" if column.endswith("MP/s") else f"{v:.2f}"
    return str(v)


__all__ = ["markdown_table"]
