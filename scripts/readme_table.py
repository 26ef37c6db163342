"""Print the README's results table from a `kalg bench --ops both --out DIR` run.

    kalg bench --ops both --out results && python scripts/readme_table.py results/bench.json

One line per kernel: kalg's instructions, bus steps and registers used for op sets all and
basic, beside Cain's and AUKE's figures; kalg's count is bold where it is strictly shorter than
the figure it is compared with (Cain all; Cain basic, else AUKE). Then the sum line and the
compile-time sentence the README quotes, from the same run.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

HEAD = ("| kernel | kalg all | bus | regs | Cain all (60 s) | kalg basic | bus | regs | Cain basic "
        "| AUKE basic |\n|---|---|---|---|---|---|---|---|---|---|")


def _cell(value) -> str:
    return "" if value is None else str(int(value)) if float(value).is_integer() else str(value)


def _kalg(row: dict | None) -> list[str]:
    if row is None or row["instructions"] is None:
        return ["—", "", ""]
    n = row["instructions"]
    ref = row["figures"].get(row["reference"]) if row["reference"] else None
    shown = f"**{n}**" if ref is not None and n < ref else str(n)
    return [shown, _cell(row["bus_steps"]), _cell(row["registers_used"])]


def table(data: dict) -> str:
    rows = {(r["kernel"], r["ops"]): r for r in data["rows"]}
    kernels = list(dict.fromkeys(r["kernel"] for r in data["rows"]))
    lines = [HEAD]
    for k in kernels:
        any_row = rows.get((k, "all")) or rows.get((k, "basic"))
        f = any_row["figures"]
        auke = _cell(f.get("auke_basic")) or (f"(paper {_cell(f['auke_paper'])})"
                                              if "auke_paper" in f else "")
        lines.append("| " + " | ".join([k, *_kalg(rows.get((k, "all"))), _cell(f.get("cain_all")),
                                        *_kalg(rows.get((k, "basic"))),
                                        _cell(f.get("cain_basic")), auke]) + " |")
    t = data["totals"]
    sums = [f"{sum(r['instructions'] or 0 for r in data['rows'] if r['ops'] == o)}"
            if o in t else "" for o in ("all", "basic")]
    cain = _cell(t["all"]["reference_sum"]) if "all" in t else ""
    lines.append(f"| **sum** | **{sums[0]}** | | | {cain} | {sums[1]} | | | | |")
    times = "; ".join(f"op set {o}: compile median {v['median_compile_s']:.1f} s, max "
                      f"{v['max_compile_s']:.1f} s" for o, v in t.items())
    return "\n".join(lines) + f"\n\nCompile time (wall time of one compile): {times}.\n"


if __name__ == "__main__":
    path = Path(sys.argv[1] if len(sys.argv) > 1 else "results/bench.json")
    sys.stdout.write(table(json.loads(path.read_text(encoding="utf-8"))))
