"""Benchmark the numeric SCAMP-5 simulator against numpy's memory-bound limit.

Simulates one seeded random 100-instruction program (valid, op set `all`, every read of a
defined register) on one 256x256 image and on a batch of 64, and prints a Markdown table:
instructions per second, and the ratio of the time per instruction to the *memory-bound limit*
measured in the same run: the time numpy needs to write one register of that size
(``np.copyto`` of one (N, 256, 256) float64 array into another, both already in memory).

Usage: PYTHONPATH=src python scripts/bench_simulator.py [--instructions 100] [--repeats 15]
"""

from __future__ import annotations

import argparse
import math
import random
import time
from dataclasses import fields

import numpy as np

from kalg.targets.scamp5.machine.isa import OP_SETS, REGISTERS, Dir, Instr
from kalg.targets.scamp5.machine.simulator import simulate


def random_program(length: int, seed: int) -> list[Instr]:
    """`length` valid instructions of op set `all` that read only registers already defined."""
    rng = random.Random(seed)
    macros = sorted(OP_SETS["all"], key=lambda m: m.__name__)
    defined, program = {"A"}, []
    while len(program) < length:
        cls = rng.choice(macros)
        args = [rng.choice(list(Dir)) if f.type in ("Dir", Dir) else rng.choice(REGISTERS)
                for f in fields(cls)]  # type: ignore[arg-type]
        instr = cls(*args)
        if instr.violation() or not set(instr.reads()) <= defined:
            continue
        program.append(instr)
        for dest, form in instr.effects():
            if form is None:  # the source of a 3-argument div is destroyed
                defined.discard(dest)
            elif dest in REGISTERS:
                defined.add(dest)
    return program


def bench(program: list[Instr], batch: int, repeats: int) -> tuple[float, float]:
    """(seconds per instruction in the simulator, seconds numpy needs to write one register).

    The two are timed in alternate rounds and the best of each kept, so that load on the machine
    from other processes hits both alike.
    """
    rng = np.random.default_rng(0)
    shape = (batch, 256, 256) if batch > 1 else (256, 256)
    image, src, dst = rng.random(shape), rng.random(shape), np.empty(shape)
    simulate(program, image)  # compile the program once, outside the timing
    sim, limit = math.inf, math.inf
    for _ in range(repeats):
        start = time.perf_counter()
        simulate(program, image)
        sim = min(sim, (time.perf_counter() - start) / len(program))
        for _ in range(5):  # the limit with both arrays warm, as they are in a tight loop
            start = time.perf_counter()
            np.copyto(dst, src)
            limit = min(limit, time.perf_counter() - start)
    return sim, limit


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--instructions", type=int, default=100,
                        help="program length (default: 100)")
    parser.add_argument("--repeats", type=int, default=15,
                        help="timed rounds, best kept (default: 15)")
    parser.add_argument("--seed", type=int, default=0, help="program seed (default: 0)")
    args = parser.parse_args()
    program = random_program(args.instructions, args.seed)
    print("| images | instructions | instr/s | µs/instr | numpy write µs | ratio to limit |")
    print("|---|---|---|---|---|---|")
    for batch in (1, 64):
        sim, limit = bench(program, batch, args.repeats)
        label = "1 × 256²" if batch == 1 else f"{batch} × 256²"
        print(f"| {label} | {len(program)} | {1 / sim:,.0f} | {sim * 1e6:,.1f} | "
              f"{limit * 1e6:,.1f} | {sim / limit:.2f} |")


if __name__ == "__main__":
    main()
