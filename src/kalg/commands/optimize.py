"""`kalg optimize FILE.kalg`: compile a kernel or filter to a verified SCAMP-5 program, or (with
`--target cpu`) find and verify its cheapest decomposition in operations per pixel on a CPU."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from kalg.diagnostics import KalgError
from kalg.effort import LEVELS as EFFORTS
from kalg.stages import Stage
from kalg.targets import TARGETS
from kalg.targets.scamp5.registers import SIMULATED_REGISTERS as REGISTERS
from kalg.targets.scamp5.registers import WIDE

DESCRIPTION = """\
Compile the last kernel or filter of FILE (or --name NAME) into the shortest SCAMP-5 program
kalg can find: the kernels are seeded into an e-graph, rewritten by the rule families in rules/,
the cheapest decomposition is extracted, lowered to SCAMP-5 macros within the register budget,
and verified exactly and in the simulator before it is printed.

The program goes to stdout (or -o); statistics and progress go to stderr.

--target cpu instead finds the decomposition with the fewest operations per output pixel on a
CPU (moves are free addressing): separable and factored forms, sliding windows and integral
images (running sums, rules/window.egg), and, for minplus, maxplus and boolean kernels, their own
semiring laws. It prints the decomposition as passes over the image with its cost, after checking
it exactly against the kernel on random bordered images. There is no program: --emit
decomposition (the default for cpu), egraph, kernels or ast. With -o FILE.py it writes instead a
standalone Python module (needs only halide and numpy) that builds the Halide pipeline and runs
it; 'kalg run' applies the filter to an image directly.

On a terminal a status line on stderr shows the stage while kalg works. --timeout S bounds the
whole compile, code generation included: when it expires kalg prints the best verified program
found so far (with a warning), or an error if there is none yet. --json prints one JSON object
(docs/json.md) instead of the program.

Exit status: 0 ok, 1 error in the input, 2 usage error, 3 verification failure (a kalg bug)."""


def add_parser(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    p = sub.add_parser("optimize", help="compile a .kalg file to a verified SCAMP-5 program",
                       description=DESCRIPTION,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("file", metavar="FILE", help="the .kalg file to compile")
    p.add_argument("--name", metavar="NAME", help="the kernel or filter to compile "
                   "(default: the last definition in FILE)")
    p.add_argument("--target", choices=list(TARGETS), default=None,
                   help="the machine to compile for: scamp5 (a verified program), "
                        f"{WIDE} (the same for a SIMULATED register file A..Z, for studies: "
                        "its programs cannot run on the device), cpu (the decomposition "
                        "with the fewest operations per pixel, any semiring), or cuda (the "
                        "same plan for a CUDA GPU; -o F.a or F.o writes the compiled library "
                        "or object and F.h, docs/cuda.md); "
                        "default: the file's target block, else scamp5")
    p.add_argument("--ops", choices=["all", "basic"], default=None,
                   help="SCAMP-5 op set: 'all' macros, or AUKE's 'basic' set "
                        "(default: the file's target block, else all)")
    p.add_argument("--registers", metavar="A..F", type=parse_registers, default=None,
                   help="the register budget, as a range 'A..F' or a list 'A,B,C'; it must "
                        "hold the input register and the output register(s) "
                        "(default: the file's target block, else A..F)")
    p.add_argument("--input", metavar="REG", type=_register, default=None,
                   help="the register the image starts in (a kernel's result ends there too; "
                        "default: the file's target block, else A)")
    p.add_argument("--emit", choices=[s.value for s in Stage], default=None,
                   help="stop after this stage and print its result (default: program; "
                        "decomposition for --target cpu)")
    p.add_argument("-o", "--output", metavar="OUT", help="write the result to OUT, not stdout")
    p.add_argument("--time-limit", metavar="S", type=_positive_float, default=None,
                   help="a wall-clock cap in seconds on e-graph saturation (the ILP gets 3x); "
                        "with it the program may depend on the machine's speed (default: "
                        "none, node and iteration counts decide)")
    p.add_argument("--node-limit", metavar="N", type=_positive_int, default=30_000,
                   help="stop saturating once the e-graph has N e-nodes (default: 30000)")
    p.add_argument("--timeout", metavar="S", type=_positive_float, default=None,
                   help="bound the whole compile to S seconds, code generation included; the "
                        "best verified program found by then is printed (default: no bound)")
    p.add_argument("--exhaustive", action="store_true",
                   help="also search every program shorter than the one found (iterative "
                        "deepening, one output only): a shorter program if one exists, and the "
                        "program header says 'proven shortest' only when that is proven")
    p.add_argument("--exhaustive-nodes", metavar="N", type=_positive_int, default=None,
                   help="node budget of the exhaustive search (deterministic; default: "
                        "6000000, up to about 15 s of CPU; ruling out every 5-instruction "
                        "program of a 3x3 kernel takes 0.1 to 5 million)")
    p.add_argument("--effort", choices=list(EFFORTS), default="default",
                   help="how hard the code generator searches (src/kalg/effort.py): default; "
                        "high (wider refine searches of the best 3 candidates); max (wider "
                        "still, the best 5, and a stronger lower bound; 15 s to over two "
                        "minutes of CPU, docs/cain-families.md). Budgets are counts: the "
                        "program never depends on the machine's load, and is never longer "
                        "than default's from the code generator")
    p.add_argument("--noise-slack", metavar="N", type=_count, default=0,
                   help="choose, among the programs within N instructions of the shortest "
                        "kalg finds, the one with the least expected analogue error under "
                        "--noise-model, and report its SNR in the header (default: 0, the "
                        "shortest)")
    p.add_argument("--noise-model", choices=["auke", "cain"], default="auke",
                   help="the noise model of --noise-slack (default: auke)")
    p.add_argument("--split", metavar="auto|N", type=_split, default=None,
                   help="a filter with more outputs than registers (a CNN layer): compile it as "
                        "a sequence of programs read out in turn, the groups chosen by kalg "
                        "('auto') or of at most N outputs each (default: the file's target "
                        "block 'split: auto', else such a filter is an error; docs/layers.md)")
    p.add_argument("--stats", action="store_true",
                   help="print statistics (instructions, bus steps, e-graph size, times) to stderr")
    p.add_argument("--json", action="store_true",
                   help="print one JSON object (program, instructions, bus_steps, registers, "
                        "verified, seconds, stop_reason; docs/json.md) instead of the text")
    return p


def _positive_int(text: str) -> int:
    if not text.isdigit() or int(text) <= 0:
        raise argparse.ArgumentTypeError(f"expected a positive whole number, got {text!r}")
    return int(text)


def _count(text: str) -> int:
    if not text.isdigit():
        raise argparse.ArgumentTypeError(f"expected a whole number >= 0, got {text!r}")
    return int(text)


def _split(text: str) -> str:
    if text != "auto" and not (text.isdigit() and int(text) > 0):
        raise argparse.ArgumentTypeError(f"expected 'auto' or a positive number of outputs per "
                                         f"program, got {text!r}")
    return text


def _register(text: str) -> str:
    if text.strip().upper() not in REGISTERS:
        raise argparse.ArgumentTypeError(f"expected a register name such as A, got {text!r}")
    return text.strip().upper()


def parse_registers(text: str) -> tuple[str, ...]:
    """'A..F' or 'A,B,C' → ('A', ...); an argparse type (`api.parse_registers`, which says what
    is wrong). Letters beyond F parse here and are refused later unless the target is the
    simulated wide one."""
    from kalg.api import parse_registers as parse  # numpy: not at `kalg --version`
    from kalg.diagnostics import UsageError

    try:
        return parse(text)
    except UsageError as err:
        raise argparse.ArgumentTypeError(err.message) from None


def _positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if value <= 0:
        raise argparse.ArgumentTypeError(f"expected a positive number of seconds, got {text!r}")
    return value


def run(args: argparse.Namespace) -> int:
    from kalg.resources import collector_paused

    with collector_paused():  # what an import makes is never garbage (`collector_paused`)
        from kalg import driver, frontend
        from kalg.progress import reporter, warner
        from kalg.settings import Settings

    text = frontend.read_source(args.file)
    target = driver.target(args.target, text, args.file)  # None: the file's target block
    progress, done = reporter(args.stats)
    try:
        settings = Settings(
            name=args.name, target=args.target, ops=args.ops, registers=args.registers,
            input=args.input, emit=Stage(args.emit) if args.emit else target.emit,
            time_limit=args.time_limit, node_limit=args.node_limit, timeout=args.timeout,
            progress=progress, warn=None if args.json else warner(),
            exhaustive=args.exhaustive, split=args.split, noise_slack=args.noise_slack,
            noise_model=args.noise_model, effort=args.effort,
            **({"exhaustive_nodes": args.exhaustive_nodes} if args.exhaustive_nodes else {}))
        result = driver.optimize(text, args.file, settings,
                                 output=args.output)
    finally:
        done()
    text = result.text
    if args.json:
        from kalg.jsonout import base, compile_fields, layer_fields

        text = json.dumps(base("optimize", file=args.file, definition=_name(result))
                          | compile_fields(result) | layer_fields(result), indent=1) + "\n"
    if result.files:  # a binary artefact the target wrote (cuda): say where
        print(f"kalg: wrote {', '.join(result.files)}", file=sys.stderr)
        if args.json:
            sys.stdout.write(text)
    else:
        write_output(text, args.output)
    if args.stats:
        for key, value in result.stats.items():
            print(f"kalg: {key}: {value}", file=sys.stderr)
    return 0


def _name(result) -> str | None:
    return result.definition.name if getattr(result, "definition", None) is not None else None


def write_output(text: str, output: str | None) -> None:
    """`text` to the file `output` (KalgError if it cannot be written), or to stdout."""
    if not output:
        sys.stdout.write(text)
        return
    try:
        Path(output).write_text(text, encoding="utf-8")
    except OSError as err:
        raise KalgError(f"cannot write {output!r}: {err.strerror}") from None
