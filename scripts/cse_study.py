"""Program lengths of seeded random 2- and 3-output 3x3 filters (integers 0..8 over 8, outputs in
A, B, C, input A, registers A..F) in both op sets: the full compile's length, which candidate
won, and the shared-shifted-sums program (`codegen.cse_filter`) alone.

    PYTHONPATH=src python scripts/cse_study.py --seeds 5200 5210 --outputs 2 3 --out FILE.json

Run it against two checkouts (PYTHONPATH) to compare before and after a change. Filter j of k
outputs is `random_kernels(k, seed)` for the seed j (`kalg.algebra.random_kernels`)."""

from __future__ import annotations

import argparse
import json
import resource
import time

from kalg.algebra.random_kernels import random_kernels
from kalg.targets.scamp5 import codegen
from kalg.targets.scamp5.pipeline import Settings, compile_text


def _text(kernels, name: str, ops: str) -> str:
    rows = [" ; ".join(" ".join(str(int(v)) for v in row) for row in k) for k in kernels]
    body = ", ".join(f"{'ABC'[i]}: [{r}] / 8" for i, r in enumerate(rows))
    return f"target scamp5 {{ registers: A..F, input: A, ops: {ops} }}\nfilter {name} = [{body}]\n"


def _cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seeds", type=int, nargs=2, default=(5200, 5210))
    parser.add_argument("--outputs", type=int, nargs="+", default=(2, 3))
    parser.add_argument("--ops", nargs="+", default=("basic", "all"))
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    rows = []
    for k in args.outputs:
        for seed in range(*args.seeds):
            kernels = random_kernels(k, seed)
            for ops in args.ops:
                name = f"r{k}_{seed}"
                start = _cpu()
                t0 = time.perf_counter()
                result = compile_text(_text(kernels, name, ops), f"{name}.kalg", Settings())
                cpu = _cpu() - start
                row = {"name": name, "ops": ops, "length": len(result.program),
                       "winner": result.stats.get("candidate"), "cpu": round(cpu, 2),
                       "wall": round(time.perf_counter() - t0, 2)}
                cse = getattr(codegen, "cse_filter", None)
                if cse is not None:
                    start = _cpu()
                    program = cse(result.definition.outputs, tuple("ABCDEF"), "A", ops)
                    row["cse"] = program and len(program)
                    row["cse_cpu"] = round(_cpu() - start, 3)
                rows.append(row)
                print(json.dumps(row), flush=True)
    with open(args.out, "w") as f:
        json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
