"""`kalg batch PATH...`: compile many definitions (a network's layers, a sweep of approximation
settings) as one batch, on a local process pool or a Dask cluster, into one JSON report."""

from __future__ import annotations

import argparse
import json
import sys

from kalg.commands.optimize import (
    _positive_float,
    _positive_int,
    _split,
    parse_registers,
    write_output,
)
from kalg.diagnostics import KalgError
from kalg.targets import TARGETS

DESCRIPTION = """\
Compile every definition of the given files (PATH: a .kalg file, FILE:NAME for one definition,
or a directory for each of its .kalg files) as independent jobs, and print one JSON report
(docs/json.md, "batch"): each job's entry is what 'kalg optimize --json' prints for it, less
the wall times, or its error - a failed compile does not stop the batch.

The jobs run on a local process pool (--workers, default: the cores, at most 2), or on a Dask
cluster with --scheduler ADDRESS (e.g. tcp://10.0.0.5:8786; needs dask[distributed], which kalg
installs). The report is byte-identical whichever runs it. On a terminal a counter on stderr
shows the jobs done; a final summary line is always printed there.

Exit status: 0 every job compiled, else the worst job's (1 error in the input, 3 a kalg bug);
2 usage error."""


def add_parser(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    p = sub.add_parser("batch", help="compile many definitions (a network) into one JSON report",
                       description=DESCRIPTION,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("paths", nargs="+", metavar="PATH",
                   help="a .kalg file (each definition), FILE:NAME, or a directory")
    p.add_argument("--scheduler", metavar="ADDRESS", default=None,
                   help="run the jobs on the Dask cluster at ADDRESS (default: a local pool)")
    p.add_argument("--workers", metavar="N", type=_positive_int, default=None,
                   help="processes of the local pool (default: the cores, at most 2)")
    p.add_argument("-o", "--output", metavar="OUT", help="write the report to OUT, not stdout")
    p.add_argument("--target", choices=list(TARGETS), default=None,
                   help="the target of every job (default: each file's target block)")
    p.add_argument("--ops", choices=["all", "basic"], default=None, help="SCAMP-5 op set")
    p.add_argument("--registers", metavar="A..F", type=parse_registers, default=None,
                   help="the register budget of every job")
    p.add_argument("--split", metavar="auto|N", type=_split, default=None,
                   help="compile filters with more outputs than registers as layers")
    p.add_argument("--timeout", metavar="S", type=_positive_float, default=None,
                   help="bound each job's compile to S seconds (its program may then depend "
                        "on the machine's speed)")
    return p


def run(args: argparse.Namespace) -> int:
    from kalg import batch, workers

    options = {k: v for k, v in (("target", args.target), ("ops", args.ops),
                                 ("registers", args.registers), ("split", args.split),
                                 ("timeout", args.timeout)) if v is not None}
    jobs = batch.jobs_of(args.paths, options)
    if not jobs:
        raise KalgError("no definitions to compile: the paths hold no .kalg definitions")
    counter = _Counter(len(jobs))
    results = batch.run_batch(jobs, scheduler=args.scheduler,
                              workers=args.workers or workers.workers(), progress=counter)
    counter.close()
    report = batch.report(results)
    text = json.dumps(report, indent=1) + "\n"
    write_output(text, args.output)
    totals = report["totals"]
    print(f"kalg batch: {totals['jobs']} definitions, {totals['compiled']} compiled, "
          f"{totals['failed']} failed", file=sys.stderr)
    for error in report["errors"]:
        print(f"kalg: error: {error['message']}", file=sys.stderr)
    return report["exit_code"]


class _Counter:
    """'kalg batch: 3/7 done' rewritten in place on a terminal; nothing otherwise."""

    def __init__(self, total: int, stream=None):
        self.stream = stream or sys.stderr
        self.tty = self.stream.isatty()
        self.total = total

    def __call__(self, done: int, total: int) -> None:
        if self.tty:
            self.stream.write(f"\r\033[Kkalg batch: {done}/{total} done")
            self.stream.flush()

    def close(self) -> None:
        if self.tty:
            self.stream.write("\r\033[K")
            self.stream.flush()
