"""Numeric simulation of SCAMP-5 programs with numpy (float64), ideal or with seeded noise.

Input: a program (a sequence of `Instr`), an image (H, W) or a batch (N, H, W) placed in the
input register. Output: register → array of the image's shape, for A–F and NEWS (and any register
G–Z of the simulated wider file, target `scamp5_wide`, that the program names). Any size works;
the device is 256×256. The meaning of every instruction is read from `Instr.effects()`, the data
the exact simulator (`symbolic.py`) executes too, so the two cannot disagree; the one
pointwise macro, `abs`, writes the absolute value of its form (`Instr.pointwise`).

* **Zero fill**: a read outside the array reads 0 (the documented default of the spec). Results
  equal the infinite-array ones only on the *interior* (`footprint`, `interior_mask`).
* **Undefined** registers (never written, or destroyed by a 3-argument `div`) hold NaN, which
  propagates into whatever reads them.
* **NEWS** holds what the last macro left on it (isa.py's effects). No instruction reads NEWS, so
  the simulator computes it only for the last instruction that writes it: the intermediate
  values are dead and would cost one extra register write per instruction.

Speed: a program is compiled once (cached) into writes between a fixed set of buffers, each
padded with a zero border as wide as the farthest single read. A write overwrites its
destination's buffer in place when that is safe (`_in_place`); otherwise it goes to a spare
buffer and the register is re-pointed (no copy). Reads are contiguous flat slices (`_Buffers`),
every numpy call writes into preallocated memory through `out=`, and a batch runs in chunks
that stay in cache (`CHUNK_BYTES`).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from kalg.algebra.kernel import Kernel
from kalg.diagnostics import KalgError, VerificationError
from kalg.targets.scamp5.machine.isa import (
    NEWS,
    REGISTERS,
    SIMULATED_REGISTERS,
    Effect,
    Instr,
    Offset,
    Res,
    Term,
)
from kalg.targets.scamp5.machine.noise import ErrorStats, NoiseModel, Perturbation, error_stats

ALL_REGISTERS = (*REGISTERS, NEWS)
"""The registers `simulate` always reports, in this order (a program for the simulated wider
file also gets the registers beyond F that it names: `register_file`)."""
_INPUT, _UNDEFINED = 0, 1
"""Buffer 0 starts with the image; buffer 1 holds NaN forever and backs every undefined register."""


# ---------------------------------------------------------------------------- compilation
def register_file(program: Sequence[Instr], input_register: str = "A") -> tuple[str, ...]:
    """The registers a run of `program` has: A..F and NEWS, then each register of the simulated
    wider file (G..Z) that the program or its input names, in alphabetical order."""
    named = {r for instr in program for r in instr.registers()} | {input_register}
    extra = tuple(r for r in SIMULATED_REGISTERS if r in named and r not in REGISTERS)
    return (*ALL_REGISTERS, *extra)


@dataclass(frozen=True, slots=True)
class _Write:
    target: int
    """Buffer written."""
    terms: tuple[tuple[float, int, Offset], ...]
    """(coefficient, source buffer, offset read); empty means the value 0."""
    register: str
    bus: int
    horizontal: bool
    """Some term reads east or west (the write then dirties the border gaps)."""
    pointwise: str | None = None
    """"abs": the value written is the form's absolute value (`Instr.pointwise`)."""


@dataclass(frozen=True, slots=True)
class _Plan:
    writes: tuple[_Write, ...]
    buffers: int
    pad: int
    final: tuple[tuple[str, int], ...]
    """(register, buffer) at the end; registers not listed are undefined."""
    reads_undefined: bool
    """Some write reads an undefined register (so the NaN buffer must exist)."""
    registers: tuple[str, ...]
    """The registers of the run (`register_file`)."""


class _Allocator:
    """Assigns buffers to register values so that no write clobbers a value still to be read."""

    def __init__(self, input_register: str, registers: tuple[str, ...]):
        self.loc = dict.fromkeys(registers, _UNDEFINED)
        self.loc[input_register] = _INPUT
        self.free: list[int] = []
        self.count = 2

    def target(self, dest: str, overwrite: bool) -> int:
        """`dest`'s own buffer when it may be overwritten (and is not the NaN one); else a spare."""
        if overwrite and self.loc[dest] != _UNDEFINED:
            return self.loc[dest]
        if self.free:
            return self.free.pop()  # the most recently freed: likeliest still in cache
        self.count += 1
        return self.count - 1

    def assign(self, dest: str, buffer: int) -> None:
        old = self.loc[dest]
        if old not in (_UNDEFINED, buffer):
            self.free.append(old)
        self.loc[dest] = buffer


def _in_place(dest: str, form: tuple[Term, ...], effects: list[Effect]) -> tuple[Term, ...] | None:
    """`form`, its own term first, when its write may overwrite `dest`'s buffer; else None.

    That is when no other write of the instruction reads `dest` and this one reads it at most once,
    at offset (0, 0): numpy then works element by element in place. Only a 2-term form is
    reordered (exact in IEEE arithmetic), so every value equals the spec-order one bit for bit.
    """
    if any(reg == dest for d, f in effects if d != dest for _, reg, _ in f or ()):
        return None
    own = [i for i, (_, reg, _) in enumerate(form) if reg == dest]
    if not own:
        return form
    if len(own) > 1 or form[own[0]][2] != (0, 0) or (own[0] > 0 and len(form) > 2):
        return None
    return (form[own[0]], *form[:own[0]], *form[own[0] + 1:])


@functools.lru_cache(maxsize=256)
def _compile(program: tuple[Instr, ...], input_register: str) -> _Plan:
    """Static buffer assignment of every write; NEWS only where its value survives."""
    if input_register not in SIMULATED_REGISTERS:
        raise ValueError(f"input register must be one of {', '.join(SIMULATED_REGISTERS)}")
    last_news = max((i for i, ins in enumerate(program)
                     if any(r == NEWS for r, _ in ins.effects())), default=-1)
    alloc, writes, pad = _Allocator(input_register, register_file(program, input_register)), [], 0
    for index, instr in enumerate(program):
        effects = [(r, f) for r, f in instr.effects() if r != NEWS or index == last_news]
        assigned = []
        for dest, form in effects:
            if form is None:  # destroyed: point at the NaN buffer, nothing to compute
                assigned.append((dest, _UNDEFINED))
                continue
            reordered = _in_place(dest, form, effects)
            target = alloc.target(dest, overwrite=reordered is not None)
            terms = tuple((float(c), alloc.loc[reg], off) for c, reg, off in reordered or form)
            pad = max([pad, *(max(abs(dx), abs(dy)) for _, _, (dx, dy) in terms)])
            horizontal = any(dx for _, _, (dx, _) in terms)
            writes.append(_Write(target, terms, dest, instr.bus, horizontal,
                                 instr.pointwise(dest)))
            assigned.append((dest, target))
        for dest, target in assigned:  # only now: every write above read the old buffers
            alloc.assign(dest, target)
    final = tuple((r, b) for r, b in alloc.loc.items() if b != _UNDEFINED)
    reads_undefined = any(b == _UNDEFINED for w in writes for _, b, _ in w.terms)
    return _Plan(tuple(writes), alloc.count, pad, final, reads_undefined, tuple(alloc.loc))


# ---------------------------------------------------------------------------- execution
class _Buffers:
    """The padded buffers of one run, seen flat: one image is one contiguous row of memory.

    A read of a buffer at offset (dx, dy) is the flat window that starts dy padded rows up and
    dx columns east of the first interior PE and spans every interior row, so numpy runs one
    contiguous loop per image instead of one strided loop per row (2-3x faster). The window also
    covers the 2·pad border cells between consecutive interior rows ("gaps"): reading them gives
    the zeros of the border, and a write with a horizontal offset leaves garbage there, which
    `clear_gaps` resets so that later reads still see zero fill.
    """

    def __init__(self, plan: _Plan, shape: tuple[int, int, int]):
        n, h, w = self.shape = shape
        p = self.pad = plan.pad
        self.width = w + 2 * p  # of a padded row
        self.length = (h - 1) * self.width + w  # of a window: first to last interior PE
        self.arrays = [np.zeros((n, h + 2 * p, self.width)) for _ in range(plan.buffers)]
        self.windows: dict[tuple[int, Offset], np.ndarray] = {}
        if plan.reads_undefined:
            self.interior(_UNDEFINED)[...] = np.nan
        else:  # never read: spare the memory traffic
            self.arrays[_UNDEFINED] = np.empty((0, 0, 0))

    def load(self, batch: np.ndarray) -> None:
        """Put the images in the input buffer. Every other buffer is written before it is read,
        and writes keep the borders at zero, so buffers can serve run after run."""
        self.interior(_INPUT)[...] = batch

    def window(self, buffer: int, offset: Offset) -> np.ndarray:
        """(N, length) view of `buffer` read at p + offset (y grows north: up the rows)."""
        if (v := self.windows.get((buffer, offset))) is None:
            (dx, dy), p, arr = offset, self.pad, self.arrays[buffer]
            start = (p - dy) * self.width + p + dx
            flat = arr.reshape(arr.shape[0], -1)
            v = self.windows[(buffer, offset)] = flat[:, start:start + self.length]
        return v

    def interior(self, buffer: int) -> np.ndarray:
        """(N, H, W) view of the PEs of `buffer`."""
        (_, h, w), p = self.shape, self.pad
        return self.arrays[buffer][:, p:p + h, p:p + w]

    def clear_gaps(self, buffer: int) -> None:
        """Zero the border cells between interior rows (each gap: right pad, next left pad)."""
        (_, h, w), p, arr = self.shape, self.pad, self.arrays[buffer]
        if p and h > 1:
            arr[:, p:p + h - 1, p + w:] = 0.0
            arr[:, p + 1:p + h, :p] = 0.0


def _execute(write: _Write, bufs: _Buffers, scratch: list[np.ndarray]) -> None:
    """Evaluate one linear form into its target buffer, keeping the border at zero."""
    dst = bufs.window(write.target, (0, 0))
    terms = write.terms
    if not terms:
        dst.fill(0.0)
        return
    (c0, b0, o0), rest = terms[0], terms[1:]
    if rest and c0 == 1.0 and rest[0][0] in (1.0, -1.0):  # the common case: one fused call
        c1, b1, o1 = rest[0]
        (np.add if c1 == 1.0 else np.subtract)(bufs.window(b0, o0), bufs.window(b1, o1), out=dst)
        rest = rest[1:]
    elif c0 == 1.0:
        if (b0, o0) != (write.target, (0, 0)):  # else: in place, already there
            np.copyto(dst, bufs.window(b0, o0))
    else:
        np.multiply(bufs.window(b0, o0), c0, out=dst)
    for c, b, o in rest:
        src = bufs.window(b, o)
        if c == 1.0:
            np.add(dst, src, out=dst)
        elif c == -1.0:
            np.subtract(dst, src, out=dst)
        else:
            if not scratch:
                scratch.append(np.empty(dst.shape))
            np.multiply(src, c, out=scratch[0])
            np.add(dst, scratch[0], out=dst)
    if write.pointwise == "abs":  # the only pointwise macro (isa.Abs); zeros stay zero
        np.abs(dst, out=dst)
    if write.horizontal:
        bufs.clear_gaps(write.target)


CHUNK_BYTES = 4 << 20
"""Batches run in chunks of images whose buffers fit in about this many bytes (one core's L2
on the project's machines): the instructions are memory-bound, and a chunk that stays in cache
runs about twice as fast as a whole batch streaming through DRAM."""


def simulate(program: Sequence[Instr], image: np.ndarray, input_register: str = "A",
             noise: NoiseModel | None = None) -> dict[str, np.ndarray]:
    """Run `program` on `image` ((H, W) or a batch (N, H, W)) in `input_register`.

    Returns every register of `register_file` as a float64 array of the image's shape; an
    undefined register is a read-only all-NaN array. With `noise`, each written value is
    perturbed as `NoiseModel` describes (deterministic for one seed, program and image).
    The input array is not modified.
    """
    img = np.asarray(image, dtype=np.float64)
    if img.ndim not in (2, 3) or 0 in img.shape:
        raise ValueError(f"expected a non-empty (H, W) image or (N, H, W) batch, got {img.shape}")
    batch = img if img.ndim == 3 else img[None]
    plan = _compile(tuple(program), input_register)
    n, h, w = batch.shape
    per_image = plan.buffers * (h + 2 * plan.pad) * (w + 2 * plan.pad) * 8
    chunk = max(1, min(n, CHUNK_BYTES // per_image))
    bufs = _Buffers(plan, (chunk, h, w))
    names = register_file(tuple(program), input_register)
    perturb = None if noise is None or noise.is_ideal else noise.start(bufs.shape, names)
    if chunk == n:  # one run: hand out the buffers themselves, no copy
        out = _run(plan, bufs, batch, perturb)
    else:
        out = {r: np.empty(batch.shape) for r in names}
        for first in range(0, n, chunk):
            part = batch[first:first + chunk]
            if len(part) < chunk:
                bufs = _Buffers(plan, part.shape)
            for r, value in _run(plan, bufs, part, perturb).items():
                out[r][first:first + len(part)] = value
    return out if img.ndim == 3 else {r: v[0] for r, v in out.items()}


def _run(plan: _Plan, bufs: _Buffers, batch: np.ndarray,
         perturb: Perturbation | None) -> dict[str, np.ndarray]:
    """Execute the plan on one chunk; the result views `bufs` (valid until its next run)."""
    bufs.load(batch)
    scratch: list[np.ndarray] = []
    for write in plan.writes:
        _execute(write, bufs, scratch)
        if perturb is not None:
            perturb.apply(bufs.interior(write.target), write.register, write.bus)
    final = dict(plan.final)
    undefined = np.broadcast_to(np.float64(np.nan), batch.shape)  # read-only, no memory
    return {r: bufs.interior(final[r]) if r in final else undefined for r in plan.registers}


# ---------------------------------------------------------------------------- footprint
_Box = tuple[int, int, int, int]
"""(min x, max x, min y, max y) of the PEs a value depends on; always holds the origin."""
_ORIGIN: _Box = (0, 0, 0, 0)


@dataclass(frozen=True, slots=True)
class Footprint:
    """How far (in PEs, each ≥ 0) a program's values reach from the PE that holds them."""

    west: int
    east: int
    south: int
    north: int

    @property
    def radius(self) -> int:
        return max(self.west, self.east, self.south, self.north)

    def interior(self, shape: tuple[int, ...]) -> tuple[slice, slice]:
        """Row and column slices of the PEs whose whole footprint lies inside an (…, H, W) array."""
        h, w = shape[-2:]
        return slice(self.north, max(self.north, h - self.south)), \
            slice(self.west, max(self.west, w - self.east))

    def mask(self, shape: tuple[int, ...]) -> np.ndarray:
        """Boolean (H, W) mask of the interior."""
        m = np.zeros(shape[-2:], dtype=bool)
        m[self.interior(shape)] = True
        return m


def footprint(program: Sequence[Instr]) -> Footprint:
    """The union of every offset the program reads, accumulated through the program.

    A value at PE p is right when every PE it depends on exists: p itself, and for a read of
    register R at offset d, the PE p + d and every PE that R's value there depends on. Each
    register carries that set as a box of offsets (the array is a rectangle, so the box is
    exact), and the footprint is the union over every value the program computes, dead ones
    included: zero fill can change nothing on the PEs where it lies inside the array.

    >>> from kalg.targets.scamp5.machine.isa import Dir, Movx
    >>> footprint([Movx("B", "A", Dir.NORTH), Movx("C", "B", Dir.EAST)])
    Footprint(west=0, east=1, south=0, north=1)
    """
    reach: dict[str, _Box] = dict.fromkeys(register_file(program), _ORIGIN)
    total = _ORIGIN
    for instr in program:
        new = {dest: _reach(form, reach) for dest, form in instr.effects()}
        reach.update(new)
        for box in new.values():
            total = _union(total, box)
    x0, x1, y0, y1 = total
    return Footprint(west=-x0, east=x1, south=-y0, north=y1)


def _reach(form: tuple[Term, ...] | None, reach: Mapping[str, _Box]) -> _Box:
    """The box of a linear form: the origin, and each term's register box moved by its offset."""
    box = _ORIGIN
    for _, reg, (dx, dy) in form or ():
        b = reach[reg]
        box = _union(box, (b[0] + dx, b[1] + dx, b[2] + dy, b[3] + dy))
    return box


def _union(a: _Box, b: _Box) -> _Box:
    return (min(a[0], b[0]), max(a[1], b[1]), min(a[2], b[2]), max(a[3], b[3]))


def interior_mask(program: Sequence[Instr], shape: tuple[int, ...]) -> np.ndarray:
    """(H, W) mask of the PEs where zero fill cannot change the program's result."""
    return footprint(program).mask(shape)


# ---------------------------------------------------------------------------- verification
def verify_numeric(program: Sequence[Instr], targets: Mapping[str, Kernel], image: np.ndarray,
                   input_register: str = "A") -> dict[str, float]:
    """Simulate on `image` and compare each target register with `Kernel.apply` on the interior.

    Returns register → largest absolute difference (within float tolerance). Raises
    `VerificationError` naming the register, how many PEs differ and the worst one.
    """
    img = np.asarray(image, dtype=np.float64)
    rows, cols = _interior_or_fail(program, img.shape)
    result = simulate(program, img, input_register)
    problems, worst = [], {}
    for reg, kernel in sorted(targets.items()):
        got, want = result[reg][..., rows, cols], kernel.apply(img)[..., rows, cols]
        worst[reg] = _max_abs(got, want)
        if problem := _compare(reg, got, want, (rows.start, cols.start)):
            problems.append(problem)
    if problems:
        raise VerificationError("; ".join(problems), program_text="\n".join(map(str, program)))
    return worst


def verify_numeric_channels(program: Sequence[Instr],
                            targets: Mapping[str, Mapping[str, Kernel]],
                            images: Mapping[str, np.ndarray]) -> dict[str, float]:
    """`verify_numeric` for a program over several inputs (`images`: input register → image;
    `targets`: output register → input register → kernel). The simulator holds one input, so
    the program runs once per input with the other inputs cleared (`res`), and the runs are
    summed: every instruction is linear, so the sum is the program's output on all inputs."""
    inputs = sorted(images)
    first = np.asarray(images[inputs[0]], dtype=np.float64)
    rows, cols = _interior_or_fail(program, first.shape)
    total: dict[str, np.ndarray] = {}
    for channel in inputs:
        cleared = [Res(other) for other in inputs if other != channel]
        result = simulate([*cleared, *program], images[channel], channel)
        for reg in targets:
            total[reg] = total.get(reg, 0) + result[reg]
    problems, worst = [], {}
    for reg, parts in sorted(targets.items()):
        want = sum(k.apply(np.asarray(images[c], dtype=np.float64)) for c, k in parts.items())
        got, want = total[reg][..., rows, cols], want[..., rows, cols]
        worst[reg] = _max_abs(got, want)
        if problem := _compare(reg, got, want, (rows.start, cols.start)):
            problems.append(problem)
    if problems:
        raise VerificationError("; ".join(problems), program_text="\n".join(map(str, program)))
    return worst


def _interior_or_fail(program: Sequence[Instr], shape: tuple[int, ...]) -> tuple[slice, slice]:
    fp = footprint(program)
    rows, cols = fp.interior(shape)
    if rows.stop <= rows.start or cols.stop <= cols.start:
        raise KalgError(f"a {shape[-2]}x{shape[-1]} image has no interior for this program: "
                        f"it reads {fp.radius} PEs away")
    return rows, cols


def _max_abs(got: np.ndarray, want: np.ndarray) -> float:
    return float(np.max(np.abs(got - want))) if not np.isnan(got).any() else float("nan")


def _compare(reg: str, got: np.ndarray, want: np.ndarray, origin: tuple[int, int]) -> str | None:
    """None when equal within tolerance; else a sentence naming the register and the worst PE."""
    tolerance = 1e-9 * (1.0 + float(np.max(np.abs(want))))
    bad = ~(np.abs(got - want) <= tolerance)  # NaN counts as bad
    if not bad.any():
        return None
    err = np.where(np.isnan(got), np.inf, np.abs(got - want))
    at = np.unravel_index(int(np.argmax(err)), err.shape)
    row, col = at[-2] + origin[0], at[-1] + origin[1]
    image = f"image {at[0]}, " if got.ndim == 3 else ""
    what = "holds no defined value (NaN)" if np.isnan(got).all() else "differs from its kernel"
    return (f"register {reg} {what} on {int(bad.sum())} of {bad.size} interior PEs; worst at "
            f"{image}row {row}, column {col}: got {got[at]:.6g}, want {want[at]:.6g}")


def noise_statistics(program: Sequence[Instr], image: np.ndarray, noise: NoiseModel,
                     registers: Sequence[str], input_register: str = "A") -> dict[str, ErrorStats]:
    """Error of the noisy result against the ideal one, per register, over the interior."""
    img = np.asarray(image, dtype=np.float64)
    rows, cols = _interior_or_fail(program, img.shape)
    ideal = simulate(program, img, input_register)
    noisy = simulate(program, img, input_register, noise)
    return {r: error_stats(noisy[r][..., rows, cols], ideal[r][..., rows, cols])
            for r in registers}
