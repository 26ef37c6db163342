"""A layer: a filter with more outputs than the target's registers, compiled as a sequence of
programs read out in turn (`compile_layer`).

One SCAMP-5 program cannot hold more outputs than registers, so the outputs are split into
groups (`plan_groups`), each group compiled as an ordinary filter (sharing inside the group:
its divisions, multiples and outputs made from each other), and the programs run one after
another with the group's outputs read out after each. The device keeps no image outside its
registers (capturing again reads a new exposure), so the input is *kept*: each input has a
keeper register that no group but the last writes. The first program saves the input there
(`mov`) when some program overwrites the input; each later program that needs it restores it
(`mov`) from the keeper, and the last program reads it from the keeper directly and may write
every register.

The split: as few groups as the group size allows (each input needs its register and its keeper:
`len(registers) - 2·inputs` outputs per program, or `--split N`), balanced in size, outputs
placed greedily - the most expensive first - into the group whose estimated program grows
least (`_estimate`: the group shares its inputs' divisions and the odd multiples of the input
its coefficients need, and pays one accumulation per tap). Deterministic and bounded:
outputs × groups estimates.

Every group's program is verified as it is made (exactly and in the simulator); the sequence is
then checked as a whole: at each readout point the programs so far, run in order from the input,
are executed symbolically and simulated on random images, and each register read out there must
hold its output's exact kernel (`_verify_sequence`; `VerificationError` otherwise).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from kalg.algebra.kernel import Kernel
from kalg.diagnostics import KalgError, UsageError
from kalg.targets.scamp5.machine.isa import Instr, Mov, bus_steps
from kalg.targets.scamp5.machine.text import format_program, parse_program

__all__ = ["Readout", "compile_layer", "group_size", "is_layer", "kernel_text", "layer_text",
           "parse_layer_text", "plan_groups"]

AUTO = "auto"


@dataclass(frozen=True, slots=True)
class Readout:
    """One program of a layer: after instruction `after` (1-based, counted over the whole
    sequence) register → output name is read out."""

    program: int
    after: int
    registers: dict[str, str]
    instructions: int
    bus_steps: int
    writes: tuple[str, ...]
    inputs: tuple[str, ...]
    """Where the program finds its input(s): the input register, or the keeper."""
    candidate: str


def capacity(registers: tuple[str, ...], inputs: tuple[str, ...], channels: bool) -> int:
    """How many outputs one program can hold: every register, less the inputs where the
    outputs cannot take an input's register (a filter over several inputs)."""
    return len(registers) - (len(inputs) if channels else 0)


def is_layer(outputs: int, registers: tuple[str, ...], inputs: tuple[str, ...],
             channels: bool, split: str | None) -> bool:
    """Whether a filter of `outputs` outputs is compiled as a layer: more outputs than one
    program holds, or an explicit group size `split` smaller than the outputs."""
    if split is not None and split != AUTO:
        return outputs > int(split)
    return outputs > capacity(registers, inputs, channels)


def group_size(registers: tuple[str, ...], inputs: tuple[str, ...], split: str | None) -> int:
    """Outputs per program: `split` when a number, else every register but each input's own
    and its keeper's. UsageError when no output would fit."""
    most = len(registers) - 2 * len(inputs)
    if most < 1:
        raise UsageError(f"a layer needs a register per input, a keeper per input and one for "
                         f"an output: {len(registers)} registers ({' '.join(registers)}) are too "
                         f"few for {len(inputs)} input(s)")
    if split is None or split == AUTO:
        return most
    if int(split) > most:
        raise UsageError(f"--split {split}: a program of the layer holds at most {most} outputs "
                         f"on {len(registers)} registers ({len(inputs)} input(s), each with a "
                         "keeper)")
    return int(split)


# ----------------------------------------------------------------------------- the split
Row = dict[tuple[str, tuple[int, int]], Fraction]
"""An output as (input, offset) → coefficient."""


def _depth(c: Fraction) -> int:
    return max(c.denominator.bit_length() - 1, 0)


def _odd_part(n: int) -> int:
    while n and n % 2 == 0:
        n //= 2
    return n


def _naf_weight(n: int) -> int:
    """Non-zero digits of n's non-adjacent form: the fewest signed powers of two summing to n."""
    weight = 0
    while n:
        if n & 1:
            n -= 2 - (n & 3)
            weight += 1
        n >>= 1
    return weight


def _estimate(rows: list[Row]) -> int:
    """Estimated instructions of one program for these outputs: each input divided once to the
    group's deepest denominator, each odd multiple of the divided input that a coefficient needs
    made once (NAF weight - 1 additions), and one accumulation per tap."""
    depth: dict[str, int] = {}
    odd: dict[str, set[int]] = {}
    taps = 0
    for row in rows:
        for (channel, _), c in row.items():
            depth[channel] = max(depth.get(channel, 0), _depth(c))
            taps += 1
    for row in rows:
        for (channel, _), c in row.items():
            odd.setdefault(channel, set()).add(_odd_part(abs(int(c * 2 ** depth[channel]))))
    multiples = sum(_naf_weight(o) - 1 for values in odd.values() for o in values)
    return sum(depth.values()) + multiples + taps


def plan_groups(rows: dict[str, Row], size: int) -> list[tuple[str, ...]]:
    """The outputs (name → row) split into ceil(n / size) groups of balanced size: outputs in
    decreasing estimated cost (ties by name) each join the group with room whose estimate grows
    least (ties: the smaller group, then the earlier). Groups in order of their first output's
    name, each sorted.

    >>> rows = {n: {("A", (0, 0)): Fraction(c)} for n, c in zip("PQRS", (3, 1, 3, 1))}
    >>> plan_groups(rows, 2)
    [('P', 'R'), ('Q', 'S')]
    """
    names = sorted(rows)
    count = math.ceil(len(names) / size)
    sizes = [len(names) // count + (i < len(names) % count) for i in range(count)]
    groups: list[list[str]] = [[] for _ in range(count)]
    alone = {n: _estimate([rows[n]]) for n in names}
    for name in sorted(names, key=lambda n: (-alone[n], n)):
        def growth(i: int, name: str = name) -> tuple[int, int, int]:
            members = [rows[m] for m in groups[i]]
            grows = _estimate([*members, rows[name]]) - _estimate(members)
            return (grows, len(groups[i]), i)
        best = min((i for i in range(count) if len(groups[i]) < sizes[i]), key=growth)
        groups[best].append(name)
    return sorted(tuple(sorted(g)) for g in groups)


# ----------------------------------------------------------------------------- compile
@dataclass(frozen=True, slots=True)
class LayerSpec:
    """What `compile_layer` needs of the definition and the target."""

    name: str
    outputs: dict[str, Kernel]
    """Output → kernel (one input), empty for a filter over several inputs."""
    channels: dict[str, dict[str, Kernel]]
    """Output → input → kernel (several inputs), empty for one input."""
    inputs: tuple[str, ...]
    registers: tuple[str, ...]
    ops: str
    target: str


CompileGroup = Callable[[str, tuple[str, ...]], object]
"""(.kalg text of a group, its input registers) → the pipeline's verified `Result`."""


def compile_layer(spec: LayerSpec, size: int, compile_group: CompileGroup,
                  shape: Callable[[dict[str, Kernel]], tuple[int, int]],
                  ) -> tuple[list[Instr], list[Readout], list[str], str | None]:
    """The layer's programs in sequence: (all instructions, one `Readout` per program, the
    warnings of the group compiles, the keeper registers' description or None when no program
    overwrote an input). Each program is compiled by `compile_group` (and so verified); the
    sequence is verified here, on random images of `shape(kernels)`. Raises KalgError naming
    the group whose compile failed."""
    rows = _rows(spec)
    groups = plan_groups(rows, size)
    keepers = _keepers(spec.registers, spec.inputs)
    budget = tuple(r for r in spec.registers if r not in keepers)
    made, warnings = [], []
    for number, names in enumerate(groups[:-1], start=1):
        made.append(_compile_group(spec, names, budget, spec.inputs, compile_group, number,
                                   len(groups), warnings))
    overwritten = any(set(p.writes) & set(spec.inputs) for p in made)
    last_inputs = keepers if overwritten else spec.inputs
    made.append(_compile_group(spec, groups[-1], spec.registers, last_inputs, compile_group,
                               len(groups), len(groups), warnings))
    program, readouts = _sequence(made, spec.inputs, keepers, overwritten)
    _verify_sequence(spec, program, readouts, shape)
    kept = (f"the input ({' '.join(spec.inputs)}) is kept in {' '.join(keepers)}"
            if overwritten else None)
    return program, readouts, warnings, kept


def _rows(spec: LayerSpec) -> dict[str, Row]:
    if spec.channels:
        return {o: {(c, off): Fraction(v) for c, k in parts.items() for off, v in k.taps.items()
                    if v} for o, parts in spec.channels.items()}
    (channel,) = spec.inputs
    return {o: {(channel, off): Fraction(v) for off, v in k.taps.items() if v}
            for o, k in spec.outputs.items()}


def _keepers(registers: tuple[str, ...], inputs: tuple[str, ...]) -> tuple[str, ...]:
    """The last registers of the budget that are no input, one per input (in input order)."""
    free = [r for r in registers if r not in inputs]
    return tuple(free[-len(inputs):])


@dataclass(frozen=True, slots=True)
class _Made:
    names: tuple[str, ...]
    placed: dict[str, str]
    """register → output name"""
    program: list[Instr]
    inputs: tuple[str, ...]
    candidate: str

    @property
    def writes(self) -> tuple[str, ...]:
        return tuple(sorted({r for i in self.program for r in i.writes()}))


def _compile_group(spec: LayerSpec, names: tuple[str, ...], budget: tuple[str, ...],
                   inputs: tuple[str, ...], compile_group: CompileGroup, number: int,
                   count: int, warnings: list[str]) -> _Made:
    """One group's program: its outputs placed in the registers of `budget` that hold no
    input (in order), compiled as a filter with the inputs in `inputs`."""
    places = [r for r in budget if r not in inputs]
    placed = dict(zip(places, names, strict=False))
    text = _group_text(spec, placed, budget, inputs)
    try:
        result = compile_group(text, inputs)
    except KalgError as err:
        raise KalgError(f"program {number} of {count} of the layer '{spec.name}' (outputs "
                        f"{', '.join(names)}) has no program: {err.message}",
                        hint="a smaller group may fit: --split N (outputs per program)",
                        ) from None
    warnings += [f"program {number} of {count}: {w}" for w in result.warnings]
    return _Made(names, placed, list(result.program), inputs,
                 str(result.stats.get("candidate", "")))


def _group_text(spec: LayerSpec, placed: dict[str, str], budget: tuple[str, ...],
                inputs: tuple[str, ...]) -> str:
    """The .kalg text of one group: a target block with the group's registers and inputs, and
    a filter of its outputs in their registers (the kernels exact, approximated already)."""
    rename = dict(zip(spec.inputs, inputs, strict=True))
    parts = []
    for register, name in placed.items():
        if spec.channels:
            terms = [f"{kernel_text(k)} * {rename[c]}"
                     for c, k in sorted(spec.channels[name].items())]
            parts.append(f"{register}: {' + '.join(terms) or '[0] * ' + inputs[0]}")
        else:
            parts.append(f"{register}: {kernel_text(spec.outputs[name])}")
    block = (f"target {spec.target} {{ registers: {' '.join(budget)}, "
             f"input: {' '.join(inputs)}, ops: {spec.ops} }}")
    return f"{block}\nfilter {spec.name} = [{', '.join(parts)}]\n"


def kernel_text(kernel: Kernel) -> str:
    """The kernel as a .kalg matrix, centred, every coefficient exact."""
    rows = kernel.to_rows(centred=True, fill=0)
    return "[" + "; ".join(" ".join(str(c) for c in row) for row in rows) + "]"


def _sequence(made: list[_Made], inputs: tuple[str, ...], keepers: tuple[str, ...],
              overwritten: bool) -> tuple[list[Instr], list[Readout]]:
    """The programs joined: the inputs saved to their keepers before the first when a program
    overwrites an input, restored before each later program (but the last, which reads the
    keepers) whose predecessor overwrote them."""
    program: list[Instr] = []
    readouts = []
    for number, group in enumerate(made, start=1):
        prefix: list[Instr] = []
        if overwritten and number == 1:
            prefix = [Mov(k, i) for i, k in zip(inputs, keepers, strict=True)]
        elif overwritten and number < len(made):
            touched = set(made[number - 2].writes)
            prefix = [Mov(i, k) for i, k in zip(inputs, keepers, strict=True) if i in touched]
        body = prefix + group.program
        program += body
        readouts.append(Readout(number, len(program), dict(sorted(group.placed.items())),
                                len(body), bus_steps(body),
                                tuple(sorted({r for i in body for r in i.writes()})),
                                group.inputs, group.candidate))
    return program, readouts


def _verify_sequence(spec: LayerSpec, program: list[Instr], readouts: list[Readout],
                     shape: Callable[[dict[str, Kernel]], tuple[int, int]]) -> None:
    """Replay the whole sequence from the input, exactly and in the simulator, and check every
    register read out against its output's kernel (VerificationError: a kalg bug)."""
    from kalg.targets.scamp5.machine.simulator import verify_numeric, verify_numeric_channels
    from kalg.targets.scamp5.machine.symbolic import verify_exact, verify_exact_channels

    rng = np.random.default_rng(0)
    kernels = {f"{o} {c}": k for o, parts in spec.channels.items() for c, k in parts.items()}
    side = shape(kernels or spec.outputs)
    images = {c: rng.uniform(-1, 1, side) for c in spec.inputs}
    for readout in readouts:
        prefix = program[:readout.after]
        if spec.channels:
            targets = {r: spec.channels[n] for r, n in readout.registers.items()}
            verify_exact_channels(prefix, targets, spec.inputs)
            verify_numeric_channels(prefix, targets, images)
        else:
            targets = {r: spec.outputs[n] for r, n in readout.registers.items()}
            verify_exact(prefix, targets, spec.inputs[0])
            verify_numeric(prefix, targets, images[spec.inputs[0]], spec.inputs[0])


def layer_text(header: list[str], program: list[Instr], readouts: list[Readout],
               kept: str | None, writes_line: Callable[[list[Instr], tuple[str, ...]], str],
               ) -> str:
    """The layer as program text: the header, then each program with its own header (which
    registers it writes, where its input is) and, after it, a comment naming the registers to
    read out and the outputs they hold."""
    total = len(readouts)
    lines = [f"// {h}" for h in header]
    if kept:
        lines.append(f"// {kept} (saved by program 1, read by program {total})")
    start = 0
    for r in readouts:
        own = [f"program {r.program} of {total}: outputs {' '.join(r.registers.values())}, "
               f"{r.instructions} instructions ({r.candidate})",
               writes_line(program[start:r.after], r.inputs)]
        lines.append(format_program(program[start:r.after], own).rstrip("\n"))
        lines.append(f"// read out {r.program} of {total} (register = output): "
                     + ", ".join(f"{reg} = {name}" for reg, name in r.registers.items()))
        start = r.after
    return "\n".join(lines) + "\n"


_READOUT = re.compile(r"^// read out (\d+) of (\d+) \(register = output\): (.*)$", re.MULTILINE)


def parse_layer_text(text: str, path: str = "<string>", **parse: object,
                     ) -> tuple[list[Instr], list[tuple[int, dict[str, str]]]] | None:
    """A layer's text (as `layer_text` writes it) read back: the instructions of its programs
    in sequence, and per readout comment (after instruction `after`, counted over the whole
    sequence) register → output name. None for a text without readout comments (one
    program). Each program is parsed by `parse_program` (keyword arguments `parse`), its
    errors located in the whole text; a readout comment that does not follow a program is a
    KalgError."""
    marks = list(_READOUT.finditer(text))
    if not marks:
        return None
    program: list[Instr] = []
    readouts: list[tuple[int, dict[str, str]]] = []
    start = 0
    for mark in marks:
        line = text.count("\n", 0, mark.start()) + 1
        block = "\n" * text.count("\n", 0, start) + text[start:mark.start()]
        body = parse_program(block, path, **parse)
        if not body:
            raise KalgError(f"{path}:{line}: a readout comment with no program before it")
        program += body
        pairs = [p.split("=") for p in mark.group(3).split(",")]
        if any(len(p) != 2 for p in pairs):
            raise KalgError(f"{path}:{line}: a readout comment lists 'register = output' "
                            f"pairs separated by commas; got {mark.group(3)!r}")
        readouts.append((len(program), {r.strip(): o.strip() for r, o in pairs}))
        start = mark.end()
    if parse_program("\n" * text.count("\n", 0, start) + text[start:], path, **parse):
        raise KalgError(f"{path}: instructions after the last readout comment are never "
                        "read out")
    return program, readouts
