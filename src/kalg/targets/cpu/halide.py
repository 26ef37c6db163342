"""Lowering a cpu plan to a Halide pipeline: the only module that imports Halide.

`compile_plan(plan, border)` returns a `Compiled` function `run(images, outs)` over numpy arrays
(one image per input channel: one for a kernel or a bank). The cuda target lowers the same plans
with the same algorithm (`Lowering.algorithm`) under a GPU schedule (`gpu_pipeline`), compiled
for CUDA ahead of time (`compile_cuda`, `link_cuda`; see the section "cuda" below).

Lowering (`_Lowering`): the input is wrapped in the border's boundary condition (Halide's
`BoundaryConditions`, whose loop partitioning keeps the clamps out of the steady state); every
pass is a Func over (x = column, y = row); a move (dx, dy) is an index offset (x + dx, y - dy:
kalg's y is north). Passes shared by outputs are one Func, and all outputs are one Tuple-valued
Func, so a filter bank computes its shared values once per strip. Semirings: ⊕ is +, min, max or
`or` (max on 0/1 bytes), a min/max-plus weight is an addition.

Running sums: a difference of one running sum at two offsets n·d apart is a window of n taps
along d. A window along a column (d = ±y) is a recurrence down the rows, w(y) = w(y-1) + v(y+n-1)
- v(y-1), restarted every `WINDOW_STRIP` rows (one direct n-tap sum per restart, so float32 rounding
never accumulates over more than a strip), its blocks computed per strip of the output (rows in
sequence, columns vectorised: they stay in cache); a window along any other direction of at most
`DIRECT_WINDOW_UPTO` taps is n reads of its operand computed once per strip (from 16 taps on,
reads of blocks of isqrt(n) taps, themselves computed per strip), a longer one a
log-time doubling ((1 + x^d)(1 + x^2d)...: ceil(log2 n) + popcount(n) - 1 adds). Any other
use of a running sum is a truncated scan in float64 over exactly the region its readers need
(`Passes.regions`).

Schedule (deterministic, chosen from the plan): outputs in strips of `STRIP` rows (doubled while
the rows the passes read around a strip exceed half of it, up to 4·STRIP), strips in parallel,
columns vectorised at the machine's natural width; every value read at a move, or by more than
one pass, is computed per strip (`compute_at`), the rest inlined.

Compiled pipelines are cached on disk (`cache_dir()`): ahead-of-time object code linked into a
shared library named by a SHA-256 of the plan's text, the border, the schedule, the Halide target
and versions and of this module's own source (a changed lowering never meets an old library),
and called through ctypes with `halide_buffer_t`s. A missing C compiler, a failed
link or an unreadable cache falls back to the JIT (`compile_to_callable`), which always works;
`KALG_CACHE=0` turns the disk cache off.
"""

from __future__ import annotations

import ctypes
import hashlib
import math
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

import halide as hl
import numpy as np

from kalg import __version__
from kalg.dataflow.graph import compare
from kalg.targets.cpu.abi import Buffer, host_buffer
from kalg.targets.cpu.borders import Border
from kalg.targets.cpu.plan import (
    STRIP,
    WINDOW_STRIP,
    CpuPlan,
    direct_taps,
    plan_data,
    reads_input_in_place,
)

CACHE_FORMAT = 1
"""Bump when the lowering or the calling convention changes (it is part of the cache key)."""


@dataclass
class Compiled:
    """A compiled pipeline: `run(images, outs)` fills the arrays `outs` (one per output, in the
    plan's output order) from `images` (one per input channel, of one shape: float32, or uint8
    0/1 for Boolean plans, C-contiguous)."""

    run: Callable[[list[np.ndarray], list[np.ndarray]], None]
    source: str
    """'disk cache', 'compiled (cached on disk)' or 'JIT' - how it was obtained."""
    seconds: float = 0.0


def compile_plan(plan: CpuPlan, border: Border, form: str = "plan",
                 schedule: tuple | None = None) -> Compiled:
    """The plan as a compiled Halide pipeline with `border`, its outputs computed in `form`
    (`plan.FORMS`) under `schedule` (`Lowering.schedule_cpu`; None: the fixed rule); from the
    disk cache when there."""
    start = time.perf_counter()
    target = hl.get_host_target()
    key = _key(plan, border, target, f"form {form} schedule {schedule}")
    path = cache_dir() / f"kalg_{key[:32]}.so" if cache_dir() else None
    arity = len(plan.inputs or (None,)) + len(plan.outputs)
    if path is not None and path.exists():
        run = _load(path, arity)
        if run is not None:
            return Compiled(run, "disk cache", time.perf_counter() - start)
    pipeline, params = Lowering(plan_data(plan, form), border.mode, border.value, target,
                                schedule).pipeline()
    if path is not None and (run := _aot(pipeline, params, target, path, arity)):
        return Compiled(run, "compiled (cached on disk)", time.perf_counter() - start)
    jit = pipeline.compile_to_callable(params, target)
    return Compiled(lambda images, outs: jit(*images, *outs), "JIT",
                    time.perf_counter() - start)


def halide_version() -> str:
    try:
        return metadata.version("halide")
    except metadata.PackageNotFoundError:  # pragma: no cover - a source build of Halide
        return "unknown"


def host_target() -> str:
    """Halide's host target, as text (what a cached schedule choice is keyed by)."""
    return str(hl.get_host_target())


def cache_dir() -> Path | None:
    """Where compiled pipelines are kept: $KALG_CACHE_DIR, else $XDG_CACHE_HOME/kalg/cpu (default
    ~/.cache/kalg/cpu); None when KALG_CACHE=0."""
    if os.environ.get("KALG_CACHE", "1") == "0":
        return None
    if env := os.environ.get("KALG_CACHE_DIR"):
        return Path(env)
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "kalg" / "cpu"


def _key(plan: CpuPlan, border: Border, target: hl.Target, variant: str = "") -> str:
    lowering = hashlib.sha256(Path(__file__).read_bytes()).hexdigest()  # this module's code
    text = "\n".join([f"kalg {__version__} format {CACHE_FORMAT} halide {halide_version()}",
                      f"lowering {lowering} {variant}",
                      f"target {target}", f"border {border.mode} {border.value!r}",
                      f"strip {STRIP} window {WINDOW_STRIP}",
                      f"direct {sorted(direct_taps(plan) or ())}", plan.describe()])
    return hashlib.sha256(text.encode()).hexdigest()


# ---------------------------------------------------------------------------- lowering
# STANDALONE BEGIN: this section (to STANDALONE END) is copied into the modules that
# `kalg optimize --target cpu -o FILE.py` writes; it uses only `hl` (halide) and the constants.
COLUMN_WINDOW_OVER = 8
"""Column windows longer than this run as a recurrence over the image; shorter ones by doubling
per strip (no trip through memory: cheaper for a few adds)."""

DIRECT_WINDOW_UPTO = 32
"""Other windows of at most this many taps are n reads of their operand, computed once per strip
(loads from cache are cheaper than doubling's materialised levels); longer ones by doubling."""


class _Value:
    def __init__(self, op: str, args: list, param: list) -> None:
        self.op, self.args, self.param = op, tuple(args), tuple(param)


class Lowering:
    """A plan (`plan_data`) and a border as one Halide pipeline (see the module docstring)."""

    def __init__(self, data: dict, border_mode: str, border_value: float,
                 target: hl.Target, schedule: tuple | None = None) -> None:
        self.values = {int(i): _Value(*v) for i, v in data["values"].items()}
        self.outputs = data["outputs"]
        self.data_direct = data.get("direct", {})  # output -> taps [dx, dy, w] (plan.direct_taps)
        self.data_separable = data.get("separable") or {}  # output -> rows, cols (separable_taps)
        self.cpu_schedule = schedule  # (rows, columns, lanes, sliding[, in place]); None: fixed
        self.direct_source: hl.Func | None = None
        self.row_passes: dict[tuple, hl.Func] = {}
        self.semiring = data["semiring"]
        self.border_mode, self.border_value, self.target = border_mode, border_value, target
        self.boolean = self.semiring == "boolean"
        self.type = hl.UInt(8) if self.boolean else hl.Float(32)
        self.vec = target.natural_vector_size(self.type)
        self.x, self.y = hl.Var("x"), hl.Var("y")
        # one image per input channel (`input` pass c reads the c-th), all of one size
        names = data.get("inputs")
        self.params = ([hl.ImageParam(self.type, 2, f"image_{n}") for n in names] if names
                       else [hl.ImageParam(self.type, 2, "image")])
        self.param = self.params[0]
        self.funcs: dict[int, hl.Func] = {}
        self.roots: list[hl.Func] = []       # computed over the image before the strips
        self.at_strip: list[hl.Func] = []    # computed per strip of the output
        self.windows: dict[tuple, hl.Func] = {}
        self.column_at: list[tuple[hl.Func, hl.RDom, hl.Var]] = []  # (recurrence, rows, block)
        live = [int(i) for i in data["live"]]
        self.regions = {int(i): tuple(m) for i, m in data["regions"].items()}
        self.readers: dict[int, int] = {}
        self.moved: set[int] = set()
        for i in live:
            p = self.values[i]
            for a in p.args:
                base, dx, dy = self._operand(a)
                self.readers[base] = self.readers.get(base, 0) + 1
                if (dx, dy) != (0, 0):
                    self.moved.add(base)

    def pipeline(self) -> tuple[hl.Pipeline, list[hl.ImageParam]]:
        """The cpu pipeline: `algorithm()` placed by the strip schedule (`schedule_cpu`)."""
        out = self.algorithm()
        self.schedule_cpu(out)
        return hl.Pipeline(out), self.params

    def algorithm(self) -> hl.Func:
        """The output Func (a Tuple for several outputs) and every Func it reads: the same for
        every schedule. Only scans place themselves (over their region, before the rest);
        `at_strip` (values read at a move or by several passes) and `column_at` (the column
        windows' recurrences) are left to the schedule (`schedule_cpu`, the cuda one)."""
        direct, separable = self.data_direct, self.data_separable
        outs = [self._separable(separable[name]) if name in separable
                else self._direct(name, direct[name]) if name in direct else self.expr(v)
                for name, v in self.outputs.items()]
        out = hl.Func("out")
        if self.boolean:  # any non-zero byte is true; outputs are exactly 0 or 1
            outs = [hl.select(e != 0, hl.u8(1), hl.u8(0)) for e in outs]
        values = [hl.cast(self.type, e) for e in outs]
        out[self.x, self.y] = values[0] if len(values) == 1 else hl.Tuple(values)
        return out

    def schedule_cpu(self, out: hl.Func) -> None:
        """Strips of rows in parallel, columns vectorised; `at_strip` and the column windows'
        blocks computed per strip (their rows in sequence, columns vectorised). The schedule
        given (`cpu_schedule`: rows per strip or 0 for `strip()`, columns per tile or 0 for
        whole rows, vectors of that many times the natural width, whether `at_strip` is
        stored per strip but computed row by row as a sliding window, and optionally whether
        the direct and separable forms read the bordered input in place) varies this rule."""
        rows, cols, lanes, sliding, *_ = self.cpu_schedule or (0, 0, 1, False)
        x, y, vec = self.x, self.y, self.vec * lanes
        yo, yi, xo, xi = hl.Var("yo"), hl.Var("yi"), hl.Var("xo"), hl.Var("xi")
        out.split(y, yo, yi, rows or self.strip(), hl.TailStrategy.GuardWithIf).parallel(yo)
        at = yo
        if cols:
            out.split(x, xo, xi, cols, hl.TailStrategy.GuardWithIf).reorder(xi, yi, xo, yo)
            out.vectorize(xi, vec, hl.TailStrategy.GuardWithIf)
            at = xo
        else:
            out.vectorize(x, vec, hl.TailStrategy.GuardWithIf)
        for f in self.at_strip:
            if sliding:
                f.store_at(out, at).compute_at(out, yi).vectorize(x, vec)
            else:
                f.compute_at(out, at).vectorize(x, vec)
        for f in self.roots:
            f.compute_root()
        for w3, r, block in self.column_at:
            w3.compute_at(out, at)
            w3.update(0).vectorize(x, vec)
            w3.update(1).reorder(x, r.x, block).vectorize(x, vec)

    def strip(self) -> int:
        """Rows per strip: STRIP, or the power of two at least twice the rows the passes read
        above and below a strip (at most 4·STRIP), so recomputed halo rows stay under half."""
        reach = max((m[0] + m[1] for m in self.regions.values()), default=0)
        rows = STRIP
        while rows < 2 * reach and rows < 4 * STRIP:
            rows *= 2
        return rows

    # -- values
    def _operand(self, v: int) -> tuple[int, int, int]:
        p = self.values[v]
        if p.op == "shift":
            return p.args[0], p.param[0], p.param[1]
        return v, 0, 0

    def read(self, v: int, dx: int = 0, dy: int = 0) -> hl.Expr:
        """Value v at offset (dx, dy) from the current pixel, as a Halide expression."""
        base, ex, ey = self._operand(v)
        return self.func(base)[self.x + (dx + ex), self.y - (dy + ey)]

    def func(self, v: int) -> hl.Func:
        if v not in self.funcs:
            f = hl.Func(f"v{v}")
            self.funcs[v] = f
            p = self.values[v]
            if p.op == "input":
                channel = p.param[0] if p.param else 0
                f[self.x, self.y] = self._bordered(self.params[channel])[self.x, self.y]
            else:
                f[self.x, self.y] = self.expr(v)
                if p.op != "prefix" and (v in self.moved or self.readers.get(v, 0) > 1):
                    self.at_strip.append(f)
        return self.funcs[v]

    def expr(self, v: int) -> hl.Expr:
        p = self.values[v]
        if p.op in ("input", "shift"):
            return self.read(v)
        a = p.args
        match p.op:
            case "plus":
                return self._plus(self.read(a[0]), self.read(a[1]))
            case "sub":
                return self._window(a[0], a[1]) or self.read(a[0]) - self.read(a[1])
            case "neg":
                return -self.read(a[0])
            case "half":
                return self.read(a[0]) * hl.f32(0.5)
            case "weight":
                return self.read(a[0]) + hl.f32(float(p.param[0]))
            case "scale":
                return self.read(a[0]) * hl.f32(float(p.param[0]))
            case "prefix":
                return self._scan(v)
        raise ValueError(f"cannot lower pass {p.op}")

    def _direct(self, name: str, form: dict) -> hl.Expr:
        """The output as the direct correlation of its kernel, scale · ⊕ over taps [dx, dy, w]
        of w ⊗ input(p + (dx, dy)): one Func per row of taps (each a balanced ⊕ of its terms,
        the rows balanced again), the bordered input computed once per strip. Compiles in
        about the time of one pass, where a Func per pass grows faster than the passes."""
        x, y = self.x, self.y
        taps, scale = form["taps"], form["scale"]
        src = self._direct_input()
        rows: dict[int, list[hl.Expr]] = {}
        for dx, dy, w in taps:
            rows.setdefault(dy, []).append(self._weighted(src[x + dx, y - dy], w))
        terms = []
        for dy, row in sorted(rows.items()):
            f = hl.Func(f"direct_{name}_{dy}".replace("-", "m"))
            f[x, y] = self._balanced(row)
            terms.append(f[x, y])
        total = self._balanced(terms)
        return total if scale == 1 else total * hl.f32(float(scale))

    def _direct_input(self) -> hl.Func:
        """The bordered input of every direct or separable output (a bank's outputs read it in
        one loop): computed once per strip, or read in place where the schedule says so (the
        boundary condition inlined; Halide's loop partitioning gives the interior loads without
        clamps, and a small kernel saves the extra pass of the copy)."""
        if self.direct_source is None:
            source = next(i for i, p in self.values.items() if p.op == "input")
            src = self.direct_source = hl.Func("direct_in")
            src[self.x, self.y] = self.func(source)[self.x, self.y]
            if not reads_input_in_place(self.cpu_schedule):
                self.at_strip.append(src)
        return self.direct_source

    def _separable(self, form: dict) -> hl.Expr:
        """scale · Σ_dy cols(dy) · R(x, y - dy), R(x, y) = Σ_dx rows(dx) · input(x + dx, y): a
        pass along the row computed per strip (one per distinct row of taps), then the column."""
        x, y = self.x, self.y
        key = tuple(tuple(t) for t in form["rows"])
        if key not in self.row_passes:
            src = self._direct_input()
            f = self.row_passes[key] = hl.Func(f"row{len(self.row_passes)}")
            f[x, y] = self._balanced([self._weighted(src[x + dx, y], w) for dx, w in key])
            self.at_strip.append(f)
        f = self.row_passes[key]
        total = self._balanced([self._weighted(f[x, y - dy], w) for dy, w in form["cols"]])
        scale = form["scale"]
        return total if scale == 1 else total * hl.f32(float(scale))

    def _weighted(self, a: hl.Expr, w) -> hl.Expr:
        """w ⊗ a: a product (real), an addition (min/max-plus), a itself (Boolean)."""
        if self.semiring == "real":
            return a if w == 1 else -a if w == -1 else a * hl.f32(float(w))
        if self.semiring in ("minplus", "maxplus") and w != 0:
            return a + hl.f32(float(w))
        return a

    def _balanced(self, terms: list[hl.Expr]) -> hl.Expr:
        """⊕ of the terms as a balanced tree (a depth of log n, not n)."""
        while len(terms) > 1:
            pairs = [self._plus(terms[i], terms[i + 1]) for i in range(0, len(terms) - 1, 2)]
            terms = pairs + ([terms[-1]] if len(terms) % 2 else [])
        return terms[0]

    def _plus(self, a: hl.Expr, b: hl.Expr) -> hl.Expr:
        name = self.semiring
        if name == "real":
            return a + b
        return hl.min(a, b) if name == "minplus" else hl.max(a, b)

    def _bordered(self, p: hl.ImageParam) -> hl.Func:
        mode = self.border_mode
        match mode:
            case "constant":
                value = (1 if self.border_value else 0) if self.boolean else self.border_value
                return hl.BoundaryConditions.constant_exterior(p, hl.cast(self.type, value))
            case "replicate":
                return hl.BoundaryConditions.repeat_edge(p)
            case "reflect":
                return hl.BoundaryConditions.mirror_image(p)
            case "reflect101":
                return _reflect101(p)
            case "wrap":
                return hl.BoundaryConditions.repeat_image(p)
        raise ValueError(f"unknown border {mode}")

    # -- running sums
    def _window(self, a: int, b: int) -> hl.Expr | None:
        """sub(P@s, P@t) with P a running sum along d and t = s + n·d (n > 0): the n-tap window
        of P's operand along d, read at s; None if the operands are not of that form."""
        pa, sx, sy = self._operand(a)
        pb, tx, ty = self._operand(b)
        p = self.values[pa]
        if pa != pb or p.op != "prefix":
            return None
        dx, dy = p.param
        n = _multiple(tx - sx, ty - sy, dx, dy)
        if n is None or n <= 0:
            return None
        w = self._window_func(p.args[0], dx, dy, n)
        return w[self.x + sx, self.y - sy]

    def _window_func(self, v: int, dx: int, dy: int, n: int) -> hl.Func:
        key = (v, dx, dy, n)
        if key not in self.windows:
            if dx == 0 and abs(dy) == 1 and n > COLUMN_WINDOW_OVER:
                self.windows[key] = self._column_window(v, -dy, n)
            elif n <= DIRECT_WINDOW_UPTO:
                self.windows[key] = self._blocked_window(v, dx, -dy, n)
            else:
                self.windows[key] = self._doubling_window(v, dx, -dy, n)
        return self.windows[key]

    def _doubling_window(self, v: int, hx: int, hy: int, n: int) -> hl.Func:
        """w(p) = Σ_{k<n} v(p + k·h) by doubling: D_2m(p) = D_m(p) + D_m(p + m·h)."""
        x, y = self.x, self.y
        levels = [self.func(v)]
        size = 1
        while size * 2 <= n:
            f = hl.Func(f"d{v}_{hx}_{hy}_{size * 2}")
            g = levels[-1]
            f[x, y] = g[x, y] + g[x + size * hx, y + size * hy]
            self.at_strip.append(f)
            levels.append(f)
            size *= 2
        acc, pos = None, 0
        for level in range(len(levels) - 1, -1, -1):
            if n & (1 << level):
                term = levels[level][x + pos * hx, y + pos * hy]
                acc = term if acc is None else acc + term
                pos += 1 << level
        w = hl.Func(f"win{v}_{hx}_{hy}_{n}")
        w[x, y] = acc
        return w

    def _blocked_window(self, v: int, hx: int, hy: int, n: int) -> hl.Func:
        """w(p) = Σ_{k<n} v(p + k·h); from 16 taps on, from blocks of b = isqrt(n) taps (a direct
        window computed once per strip): n // b reads of the blocks and n % b of v, about
        2·sqrt(n) adds instead of n."""
        b = math.isqrt(n)
        if b < 4:  # 15 taps or fewer: n direct reads measured as fast
            return self._direct_window(v, hx, hy, n)
        x, y = self.x, self.y
        block = self._direct_window(v, hx, hy, b)
        self.at_strip.append(block)
        src = self.func(v)
        whole = n // b * b
        terms = [block[x + j * hx, y + j * hy] for j in range(0, whole, b)]
        terms += [src[x + k * hx, y + k * hy] for k in range(whole, n)]
        w = hl.Func(f"bwin{v}_{hx}_{hy}_{n}")
        w[x, y] = sum(terms[1:], terms[0])
        return w

    def _direct_window(self, v: int, hx: int, hy: int, n: int) -> hl.Func:
        """w(p) = Σ_{k<n} v(p + k·h) as n reads of v computed once per strip."""
        x, y = self.x, self.y
        src = self.func(v)
        if src not in self.at_strip and self.values[v].op != "input":
            self.at_strip.append(src)
        w = hl.Func(f"win{v}_{hx}_{hy}_{n}")
        w[x, y] = sum((src[x + k * hx, y + k * hy] for k in range(1, n)), src[x, y])
        return w

    def _column_window(self, v: int, hy: int, n: int) -> hl.Func:
        """w(x, y) = Σ_{k<n} v(x, y + k·hy) (hy = ±1) by a recurrence down the rows,
        w(y) = w(y-1) + v(y+n-1) - v(y-1) over base rows, restarted every WINDOW_STRIP rows
        from a direct sum; the blocks a strip of the output reads are computed per strip."""
        x, y, s = self.x, self.y, WINDOW_STRIP
        first = 0 if hy > 0 else -(n - 1)
        tag = f"{v}_{hy}_{n}"
        base = hl.Func(f"cb{tag}")
        base[x, y] = self.read(v, 0, -first)  # row y + first
        yi, yo = hl.Var("yi"), hl.Var("yo")
        w3 = hl.Func(f"cw{tag}")
        w3[x, yi, yo] = hl.undef(self.type)  # every row is defined by the updates below
        k = hl.RDom([(0, n)], "k")
        w3[x, 0, yo] = hl.sum(base[x, yo * s + k.x])
        r = hl.RDom([(1, s - 1)], "r")
        row = yo * s + r.x
        w3[x, r.x, yo] = w3[x, r.x - 1, yo] + (base[x, row + n - 1] - base[x, row - 1])
        w = hl.Func(f"cwin{tag}")
        w[x, y] = w3[x, y % s, y // s]
        self.column_at.append((w3, r, yo))  # placed by the schedule
        return w

    def _scan(self, v: int) -> hl.Expr:
        """A running sum used other than as a window: S(p) = v(p) + S(p + d) in float64 over the
        region its readers need, truncated at that region's far edge (see Passes.regions)."""
        p = self.values[v]
        dx, dy = p.param
        hx, hy = dx, -dy
        top, bottom, left, right = self.regions[v]
        x, y = self.x, self.y
        s = hl.Func(f"scan{v}")
        s[x, y] = hl.cast(hl.Float(64), self.read(p.args[0]))
        x0, y0 = hl.Expr(-left), hl.Expr(-top)
        w = self.param.width() + left + right
        h = self.param.height() + top + bottom
        r = hl.RDom([(0, w), (0, h)] if hy != 0 else [(0, h), (0, w)], "r")
        cols, rows = (r.x, r.y) if hy != 0 else (r.y, r.x)
        cx = (x0 + w - 1 - cols) if hx > 0 else (x0 + cols)
        cy = (y0 + h - 1 - rows) if hy > 0 else (y0 + rows)
        nx, ny = cx + hx, cy + hy
        inside = (nx >= x0) & (nx < x0 + w) & (ny >= y0) & (ny < y0 + h)
        s[cx, cy] = s[cx, cy] + hl.select(
            inside, s[hl.clamp(nx, x0, x0 + w - 1), hl.clamp(ny, y0, y0 + h - 1)], hl.f64(0))
        s.compute_root()
        self.funcs[v] = s
        return s[x, y]


def _reflect101(p: hl.ImageParam) -> hl.Func:
    """BORDER_REFLECT_101 for any image size: a one-pixel axis repeats its pixel (Halide's
    mirror_interior divides by 2·(extent - 1))."""
    x, y = hl.Var("bx"), hl.Var("by")
    f = hl.Func("reflect101")

    def coord(c: hl.Var, extent: hl.Expr) -> hl.Expr:
        period = hl.max(2 * (extent - 1), 1)
        m = c % period  # Halide's % is Euclidean: 0 <= m < period
        mirrored = hl.clamp(hl.select(m < extent, m, period - m), 0, extent - 1)
        return hl.select(hl.likely((c >= 0) & (c < extent)), hl.clamp(c, 0, extent - 1),
                         mirrored)

    f[x, y] = p[coord(x, p.width()), coord(y, p.height())]
    return f


def _multiple(ex: int, ey: int, dx: int, dy: int) -> int | None:
    """n with (ex, ey) = n·(dx, dy), or None."""
    n = ex // dx if dx else ey // dy
    return n if (n * dx, n * dy) == (ex, ey) else None


# STANDALONE END


# ---------------------------------------------------------------------------- pipelines
SCHEDULES = {"fused": (32, 0), "fused-8": (8, 0), "fused-16": (16, 0), "fused-64": (64, 0),
             "tiled": (32, 512), "tiled-256": (64, 256),
             "sliding": (32, 0), "sliding-128": (128, 0), "lean": (32, 0), "lean-16": (16, 0),
             "lean-64": (64, 0), "root": (32, 0)}
"""Schedules of a pipeline graph: name -> (rows per strip, columns per tile or 0 for whole rows).

* `fused`, `fused-8`, `fused-16`, `fused-64`: every stored stage (an image a conv reads, and
  the passes the plan stores) computed per strip of the output, strips in parallel (Forma's
  fusion through tiling, with strips as tiles);
* `tiled`, `tiled-256`: the same per tile of a strip;
* `sliding`, `sliding-128`: stored per strip, computed row by row as the output's rows need
  them (Halide's sliding window: line buffers);
* `lean`, `lean-16`, `lean-64`: as `fused-*`, but only the stages convs read are stored: the
  plan's own stored passes are inlined (more arithmetic, less memory traffic);
* `root`: no fusion - every stage and pass stored over the whole image, stage by stage (each
  parallel over strips and vectorised): the unfused baseline."""


def compile_graph(gplan, border: Border, schedule: str) -> Compiled:
    """A planned pipeline graph (`graph_plan.GraphPlan`) as one Halide pipeline with
    `border` around every conv's operand and the named schedule (`SCHEDULES`); from the disk
    cache when there. `run(images, outs)`: one float32 image per graph input, one array per
    output (in the graph's output order)."""
    start = time.perf_counter()
    target = hl.get_host_target()
    key = _graph_key(gplan, border, schedule, target)
    path = cache_dir() / f"kalg_graph_{key[:32]}.so" if cache_dir() else None
    arity = len(gplan.graph.inputs) + len(gplan.graph.outputs)
    if path is not None and path.exists():
        run = _load(path, arity)
        if run is not None:
            return Compiled(run, "disk cache", time.perf_counter() - start)
    pipeline, params = GraphLowering(gplan, border, target, schedule).pipeline()
    if path is not None and (run := _aot(pipeline, params, target, path, arity)):
        return Compiled(run, "compiled (cached on disk)", time.perf_counter() - start)
    jit = pipeline.compile_to_callable(params, target)
    return Compiled(lambda images, outs: jit(*images, *outs), "JIT",
                    time.perf_counter() - start)


def _graph_key(gplan, border: Border, schedule: str, target: hl.Target) -> str:
    lowering = hashlib.sha256(Path(__file__).read_bytes()).hexdigest()
    text = "\n".join([f"kalg {__version__} format {CACHE_FORMAT} halide {halide_version()}",
                      f"lowering {lowering}", f"target {target}",
                      f"border {border.mode} {border.value!r}", f"schedule {schedule}",
                      gplan.describe()])
    return hashlib.sha256(text.encode()).hexdigest()


class _SourcedLowering(Lowering):
    """A plan's passes whose `input` pass c reads the Func `sources[c]` (a stage of the
    pipeline, already extended by its border) instead of an image parameter."""

    def __init__(self, data: dict, target: hl.Target, sources: dict[int, hl.Func],
                 extent: hl.ImageParam) -> None:
        super().__init__(data, "replicate", 0.0, target)
        self.sources = sources
        self.param = extent  # running-sum scans read the image's size from it

    def func(self, v: int) -> hl.Func:
        p = self.values[v]
        if v not in self.funcs and p.op == "input":
            f = hl.Func(f"v{v}")
            f[self.x, self.y] = self.sources[p.param[0] if p.param else 0][self.x, self.y]
            self.funcs[v] = f
        return super().func(v)


class GraphLowering:
    """A pipeline graph as Halide Funcs, one per stage: the conv nodes from the plan's passes
    (`_SourcedLowering`), the pointwise nodes as expressions of their operands; then the
    schedule (`SCHEDULES`) in one place, apart from the algorithm."""

    def __init__(self, gplan, border: Border, target: hl.Target, schedule: str) -> None:
        from kalg.targets.cpu.graph_plan import conv_name
        from kalg.targets.cpu.plan import plan_data
        self.graph, self.border, self.target = gplan.graph, border, target
        self.schedule = schedule
        self.x, self.y = hl.Var("x"), hl.Var("y")
        self.vec = target.natural_vector_size(hl.Float(32))
        self.params = [hl.ImageParam(hl.Float(32), 2, f"image_{n}") for n in self.graph.inputs]
        self.funcs: dict[int, hl.Func] = {}
        self.stored: list[hl.Func] = []
        self.conv_name = conv_name
        self.operands = gplan.operands
        channel = {o: c for c, o in enumerate(gplan.operands)}
        sources: dict[int, hl.Func] = {}  # filled as the operands are defined, in order
        self.linear = _SourcedLowering(plan_data(gplan.linear), target, sources, self.params[0])
        for group in self._levels():
            shared = [i for i in group if i in channel
                      and self.graph.nodes[i].op not in ("input", "shift")]
            if len(shared) > 1:  # images that convs read, one level: one loop, one Tuple
                self._define_together(shared)
            for i in group:
                if i not in self.funcs:
                    self._define(i)
            for i in shared[:1] if len(shared) == 1 else ():
                self.stored.append(self.funcs[i])
            for i in group:
                if i in channel:
                    sources[channel[i]] = self._bordered(i)

    def _levels(self) -> list[list[int]]:
        """The live nodes by depth (the longest path from an input): a node depends only on
        nodes of lower depth."""
        depth: dict[int, int] = {}
        for i in self.graph.live():
            depth[i] = 1 + max((depth[a] for a in self.graph.nodes[i].args), default=-1)
        return [[i for i in depth if depth[i] == d] for d in range(max(depth.values()) + 1)]

    def _define_together(self, nodes: list[int]) -> None:
        """Pointwise stages of one depth that convs read, as ONE stored Tuple-valued Func
        (their common operands are computed once per pixel, in one loop); each stage is an
        element of it."""
        t = hl.Func(f"t{nodes[0]}")
        t[self.x, self.y] = hl.Tuple([self._pointwise(self.graph.nodes[i]) for i in nodes])
        self.stored.append(t)
        for k, i in enumerate(nodes):
            f = self.funcs[i] = hl.Func(f"s{i}")
            f[self.x, self.y] = t[self.x, self.y][k]

    def _define(self, i: int) -> None:
        n = self.graph.nodes[i]
        if n.op == "const":
            return
        f = self.funcs[i] = hl.Func(f"s{i}")
        if n.op == "input":
            f[self.x, self.y] = self.params[n.param][self.x, self.y]
        elif n.op == "conv":  # its passes read only operands defined before it; inlined
            # unless another conv reads it (`_bordered`): Halide's CSE computes it once per pixel
            f[self.x, self.y] = self.linear.expr(self.linear.outputs[self.conv_name(i)])
        elif n.op == "shift":  # the operand read at an offset, 0 outside the image
            f[self.x, self.y] = self._shifted(n)
        else:
            f[self.x, self.y] = self._pointwise(n)

    def _shifted(self, n) -> hl.Expr:
        """shift(a, dx, dy): a at (x + dx, y - dy) (dy rows north: up the rows), 0 outside."""
        bounds = [hl.Range(0, self.params[0].width()), hl.Range(0, self.params[0].height())]
        outside = hl.BoundaryConditions.constant_exterior(self.funcs[n.args[0]], hl.f32(0),
                                                          bounds)
        dx, dy = n.param
        return outside[self.x + dx, self.y - dy]

    def _value(self, i: int) -> hl.Expr:
        n = self.graph.nodes[i]
        if n.op == "const":
            return hl.f32(float(n.param))
        return self.funcs[i][self.x, self.y]

    def _pointwise(self, n) -> hl.Expr:
        args = [self._value(i) for i in n.args]
        if n.op == "compare":
            return hl.select(compare(str(n.param), *args), hl.f32(1), hl.f32(0))
        return _POINTWISE[n.op](*args)

    def _bordered(self, i: int) -> hl.Func:
        """Stage i extended beyond the image by the border (what a conv reads)."""
        n = self.graph.nodes[i]
        if n.op == "input":
            source = self.params[n.param]
            bounds = None
        else:
            source = self.funcs[i]
            bounds = [hl.Range(0, self.params[0].width()), hl.Range(0, self.params[0].height())]
        mode, bc = self.border.mode, hl.BoundaryConditions
        extra = [] if bounds is None else [bounds]
        match mode:
            case "constant":
                return bc.constant_exterior(source, hl.f32(self.border.value), *extra)
            case "replicate":
                return bc.repeat_edge(source, *extra)
            case "reflect":
                return bc.mirror_image(source, *extra)
            case "reflect101":
                return bc.mirror_interior(source, *extra)
            case "wrap":
                return bc.repeat_image(source, *extra)
        raise ValueError(f"unknown border {mode}")

    def pipeline(self) -> tuple[hl.Pipeline, list[hl.ImageParam]]:
        """The cpu pipeline: `algorithm()` placed by the named schedule (`schedule_cpu`)."""
        out = self.algorithm()
        self.schedule_cpu(out)
        return hl.Pipeline(out), self.params

    def algorithm(self) -> hl.Func:
        """The output Func (a Tuple for several outputs) over the stages defined in
        `__init__`: the same for every schedule (the cpu's `SCHEDULES`, the GPU's
        `gpu_graph_pipeline`)."""
        values = [self._value(v) for v in self.graph.outputs.values()]
        out = hl.Func("out")
        out[self.x, self.y] = values[0] if len(values) == 1 else hl.Tuple(values)
        return out

    def schedule_cpu(self, out: hl.Func) -> None:
        """The named cpu schedule (`SCHEDULES`) of `out` and the stages it reads."""
        x, y = self.x, self.y
        rows, cols = SCHEDULES[self.schedule]
        yo, yi, xo, xi = hl.Var("yo"), hl.Var("yi"), hl.Var("xo"), hl.Var("xi")
        out.split(y, yo, yi, rows, hl.TailStrategy.GuardWithIf).parallel(yo)
        at = yo
        if cols:
            out.split(x, xo, xi, cols, hl.TailStrategy.GuardWithIf).reorder(xi, yi, xo, yo)
            out.vectorize(xi, self.vec, hl.TailStrategy.GuardWithIf)
            at = xo
        else:
            out.vectorize(x, self.vec, hl.TailStrategy.GuardWithIf)
        inner = [f for f in self.linear.at_strip if f not in self.stored]
        guard = hl.TailStrategy.GuardWithIf  # a stage of an input reads it unbordered: no
        # vector may reach past the image (ShiftInwards would, on an image narrower than one)
        if self.schedule.startswith("lean"):
            inner = []  # inlined: each pass recomputed where it is read
        if self.schedule == "root":
            for f in [*self.stored, *inner]:
                self._root(f, rows)
        elif self.schedule.startswith("sliding") and not self.linear.column_at:  # (a window's
            # recurrence runs per strip: what it reads cannot slide row by row inside it)
            for f in [*self.stored, *inner]:
                f.store_at(out, yo).compute_at(out, yi).vectorize(x, self.vec, guard)
        else:
            for f in [*self.stored, *inner]:
                f.compute_at(out, at).vectorize(x, self.vec, guard)
        for f in self.linear.roots:
            f.compute_root()
        for w3, r, block in self.linear.column_at:  # a recurrence: its rows in sequence
            w3.compute_root() if self.schedule == "root" else w3.compute_at(out, at)
            w3.update(0).vectorize(self.linear.x, self.vec, guard)
            w3.update(1).reorder(self.linear.x, r.x, block).vectorize(self.linear.x, self.vec,
                                                                       guard)

    def schedule_gpu(self, out: hl.Func, device: bool) -> str:
        """The GPU schedule (Halide's apps' for stencil pipelines): the output in tiles of
        GPU_TILE threads; the stored stages (images convs read), the passes the plan stores and
        the graph's inputs that passes read at moves, all computed per tile in shared memory
        (fusion through tiling: each block computes its tile's halo of every stage), where they
        fit (`_staged_fits`, with the halo the whole chain reads: `reach`); else over the image
        in tiles of their own, every other stage inlined. Returns the note."""
        linear = self.linear
        inner = [f for f in linear.at_strip if f not in self.stored]
        graph_inputs = {c for c, i in enumerate(self.operands)
                        if self.graph.nodes[i].op == "input"}
        inputs = [f for v, f in linear.funcs.items() if v in linear.moved
                  and linear.values[v].op == "input"
                  and (linear.values[v].param or (0,))[0] in graph_inputs]
        staged = [*self.stored, *inner, *inputs]
        values = sum(f.outputs() for f in staged)
        rows, cols = self.reach()
        shared = _staged_fits(linear, values, rows, cols, 4)
        place = _GpuPlacement(self.x, self.y, out, device)
        place.stages(staged if shared else [*self.stored, *inner], shared)
        where = (f"{values} value(s) of {len(staged)} stage(s) fused per tile in shared memory"
                 f" (halo {rows} rows, {cols} columns)" if shared
                 else f"{len(self.stored) + len(inner)} stage(s) over the image, in tiles of "
                 "their own")
        return f"tiles of {GPU_TILE[0]}x{GPU_TILE[1]} threads, {where}{place.serial(linear)}"

    def reach(self) -> tuple[int, int]:
        """The rows and the columns around an output tile that some stage or pass is read
        over (top + bottom, left + right): twice the kernels' radii summed along the longest
        chain of convs, or the largest region a pass is read over (`Passes.regions`) plus twice
        the radii of the chain above its conv."""
        margin = dict.fromkeys(self.graph.outputs.values(), 0)
        conv = 0
        for i in reversed(self.graph.live()):
            n = self.graph.nodes[i]
            here = margin.get(i, 0)
            step = n.param.radius() if n.op == "conv" else 0
            conv = max(conv, here) if n.op == "conv" else conv
            for a in n.args:
                margin[a] = max(margin.get(a, 0), here + step)
        regions = self.linear.regions.values()
        rows = max((m[0] + m[1] for m in regions), default=0)
        cols = max((m[2] + m[3] for m in regions), default=0)
        stages = 2 * max(margin.values(), default=0)
        return max(stages, 2 * conv + rows), max(stages, 2 * conv + cols)

    def _root(self, f: hl.Func, rows: int) -> None:
        yo, yi = hl.Var("yo"), hl.Var("yi")
        f.compute_root().split(self.y, yo, yi, rows, hl.TailStrategy.GuardWithIf).parallel(yo)
        f.vectorize(self.x, self.vec, hl.TailStrategy.GuardWithIf)


_POINTWISE = {
    "add": lambda a, b: a + b,
    "sub": lambda a, b: a - b,
    "mul": lambda a, b: a * b,
    "div": lambda a, b: a / b,
    "neg": lambda a: -a,
    "abs": hl.abs,
    "sqrt": lambda a: hl.sqrt(hl.max(a, hl.f32(0))),  # sqrt of max(a, 0): never NaN
    "min": hl.min,
    "max": hl.max,
    "select": lambda m, a, b: hl.select(m != hl.f32(0), a, b),
    "clamp": lambda a, lo, hi: hl.min(hl.max(a, lo), hi),
}
"""Each pointwise node of a graph as a Halide expression of its operands (`compare` apart)."""


# ---------------------------------------------------------------------------- ahead of time
def _aot(pipeline: hl.Pipeline, params: list[hl.ImageParam], target: hl.Target, path: Path,
         arity: int) -> Callable | None:
    """Compile to object code, link a shared library into the cache, load it; None on any
    failure (no C compiler, unwritable cache): the caller falls back to the JIT."""
    cc = shutil.which(os.environ.get("CC", "cc"))
    if cc is None:
        return None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(dir=path.parent) as tmp:
            obj, lib = Path(tmp) / "pipeline.o", Path(tmp) / "pipeline.so"
            pipeline.compile_to({hl.OutputFileType.object: str(obj)}, params, "kalg_filter",
                                target)
            subprocess.run([cc, "-shared", "-o", str(lib), str(obj), "-lpthread", "-ldl", "-lm"],
                           check=True, capture_output=True, timeout=120)
            os.replace(lib, path)  # atomic: a reader sees a whole library or none
    except (OSError, subprocess.SubprocessError, RuntimeError):
        return None
    return _load(path, arity)


def _load(path: Path, arity: int) -> Callable | None:
    """The library's pipeline as run(images, outs); `arity` = inputs + outputs."""
    try:
        fn = ctypes.CDLL(str(path)).kalg_filter
    except (OSError, AttributeError):
        return None
    fn.argtypes = [ctypes.POINTER(Buffer)] * arity
    fn.restype = ctypes.c_int

    def run(images: list[np.ndarray], outs: list[np.ndarray]) -> None:
        buffers = [host_buffer(a) for a in [*images, *outs]]
        status = fn(*(ctypes.byref(b) for b, _ in buffers))
        if status != 0:
            raise RuntimeError(f"the Halide pipeline {path.name} failed with status {status}")

    return run


# ---------------------------------------------------------------------------- cuda
# The cuda target (`kalg.targets.cuda`) lowers the same plan with the same `Lowering.algorithm`
# and places it with a GPU schedule instead of the cpu's strips.
GPU_TILE = (32, 8)
"""Threads per block over the output (columns, rows): a warp along each row."""

SHARED_BYTES = 40 * 1024
"""Shared memory a block may fill with the values it stages (CUDA's static limit: 48 KiB)."""

MAX_THREADS = 1024
"""Threads per block on every CUDA device: a staged tile (the block's tile and its halo) has
at most one thread per value."""

WINDOW_THREADS = 64
"""Threads per block of a column window's recurrence (one thread per column and strip)."""

CUDA_CAPABILITIES = ((8, 6), (8, 0), (7, 5), (7, 0), (6, 1), (5, 0), (3, 5), (3, 2), (3, 0))
"""The compute capabilities Halide has a target feature for (CUDACapabilityNN)."""

_SHIM = r"""/* kalg: Halide's CUDA runtime runs in the device's primary context, the one CuPy
   and PyTorch use, so their device pointers are valid in kalg's pipelines (Halide would make a
   context of its own). Strong definitions of the runtime's weak hooks. */
#include <stdbool.h>
#include <stddef.h>
typedef struct CUctx_st *CUcontext;
extern void *halide_cuda_get_symbol(void *user_context, const char *name);
static CUcontext kalg_context = NULL;
int halide_cuda_acquire_context(void *user_context, CUcontext *ctx, bool create) {
    if (kalg_context == NULL && create) {
        int (*init)(unsigned) = halide_cuda_get_symbol(user_context, "cuInit");
        int (*get)(int *, int) = halide_cuda_get_symbol(user_context, "cuDeviceGet");
        int (*retain)(CUcontext *, int) =
            halide_cuda_get_symbol(user_context, "cuDevicePrimaryCtxRetain");
        int device = 0;
        if (!init || !get || !retain || init(0) || get(&device, 0) ||
            retain(&kalg_context, device)) {
            return -1;
        }
    }
    *ctx = kalg_context;
    return 0;
}
int halide_cuda_release_context(void *user_context) { return 0; }
"""


def cuda_target(capability: tuple[int, int] | None = None, runtime: bool = True) -> hl.Target:
    """The host with CUDA: PTX for the highest capability Halide knows that is at most
    `capability` (None: Halide's default, which every device runs); without `runtime`, an
    object without Halide's runtime (to be linked with one, `compile_standalone_runtime`)."""
    target = hl.get_host_target().with_feature(hl.TargetFeature.CUDA)
    for cap in CUDA_CAPABILITIES if capability else ():
        if cap <= capability:
            feature = getattr(hl.TargetFeature, f"CUDACapability{cap[0]}{cap[1]}")
            target = target.with_feature(feature)
            break
    return target if runtime else target.with_feature(hl.TargetFeature.NoRuntime)


def gpu_pipeline(plan: CpuPlan, border: Border, device: bool = True,
                 ) -> tuple[hl.Pipeline, list[hl.ImageParam], str]:
    """The plan's algorithm (`Lowering.algorithm`, the cpu's own) with the GPU schedule, and a
    line saying how it is placed. The output in tiles of GPU_TILE threads; every value read at
    a move or by several passes (`at_strip`) staged per tile in shared memory where the
    staged tiles fit (SHARED_BYTES, MAX_THREADS, and no value read by a stage that runs over
    the whole image), else computed over the image in tiles of its own; column windows'
    recurrences one thread per column and strip; truncated scans on the host. `device` False
    strips the GPU loops (the same tiles and placements as plain loops, rows of tiles in
    parallel) so that the schedule runs on the CPU: what the tests check without a GPU."""
    low = Lowering(plan_data(plan), border.mode, border.value, hl.get_host_target())
    out = low.algorithm()
    return hl.Pipeline(out), low.params, _schedule_gpu(low, out, device)


def _schedule_gpu(low: Lowering, out: hl.Func, device: bool) -> str:
    place = _GpuPlacement(low.x, low.y, out, device)
    margins = list(low.regions.values())
    rows = max((m[0] + m[1] for m in margins), default=0)
    cols = max((m[2] + m[3] for m in margins), default=0)
    inputs = [f for v, f in low.funcs.items() if low.values[v].op == "input" and v in low.moved]
    stages = len(low.at_strip) + len(inputs)
    shared = _staged_fits(low, stages, rows, cols, 1 if low.boolean else 4)
    place.stages(low.at_strip + (inputs if shared else []), shared)  # inputs at moves too
    where = (f"{stages} value(s) staged per tile in shared memory" if shared
             else f"{len(low.at_strip)} value(s) over the image, in tiles of their own")
    return f"tiles of {GPU_TILE[0]}x{GPU_TILE[1]} threads, {where}{place.serial(low)}"


def _staged_fits(low: Lowering, values: int, rows: int, cols: int, size: int) -> bool:
    """Whether `values` values of `size` bytes, each over a tile and a halo of `rows` x `cols`,
    can be staged per tile in shared memory: one thread per value (MAX_THREADS), SHARED_BYTES
    in all, and no column window or scan (they run over the whole image, before the tiles)."""
    staged = (GPU_TILE[0] + cols) * (GPU_TILE[1] + rows)
    scans = any(low.values[v].op == "prefix" for v in low.funcs)
    return (not low.column_at and not scans and staged <= MAX_THREADS
            and values * staged * size <= SHARED_BYTES)


class _GpuPlacement:
    """The GPU schedule's moves, shared by plans (`gpu_pipeline`) and pipeline graphs
    (`gpu_graph_pipeline`): the output in tiles of GPU_TILE threads (one block per tile); a
    stage per tile in shared memory (`compute_at` the block, one thread per value) or over the
    image in tiles of its own; column windows and scans (`serial`). Without `device`, the same
    loops on the CPU (rows of tiles in parallel) for the tests."""

    def __init__(self, x: hl.Var, y: hl.Var, out: hl.Func, device: bool) -> None:
        self.x, self.y, self.out, self.device = x, y, out, device
        self.bx, self.by, self.tx, self.ty = hl.Var("bx"), hl.Var("by"), hl.Var("tx"), hl.Var("ty")
        self.tile(out, x, y, *GPU_TILE)

    def tile(self, stage, a, b, width: int, height: int) -> None:
        loops = (a, b, self.bx, self.by, self.tx, self.ty, width, height,
                 hl.TailStrategy.GuardWithIf)
        if self.device:
            stage.gpu_tile(*loops)
        else:
            stage.tile(*loops).parallel(self.by)

    def stages(self, funcs: list[hl.Func], shared: bool) -> None:
        """Each Func per tile of the output in shared memory (`shared`), else over the image."""
        for f in funcs:
            if shared:
                f.compute_at(self.out, self.bx)
                if self.device:
                    f.gpu_threads(self.x, self.y)
            else:
                f.compute_root()
                self.tile(f, self.x, self.y, *GPU_TILE)

    def serial(self, low: Lowering) -> str:
        """`low`'s scans left on the host (serial over the image: see `_scan`) and its column
        windows' recurrences one thread per column and strip; the words for the note."""
        scans = [v for v in low.funcs if low.values[v].op == "prefix"]
        for v in scans:
            low.funcs[v].update(0).unscheduled()
        for w3, r, block in low.column_at:
            w3.compute_root()
            self.tile(w3.update(0), self.x, block, WINDOW_THREADS, 1)
            w3.update(1).reorder(r.x, self.x, block)
            self.tile(w3.update(1), self.x, block, WINDOW_THREADS, 1)
        return (f", {len(low.column_at)} column window(s) one thread per column and strip"
                if low.column_at else "") + (f", {len(scans)} scan(s) on the host"
                                             if scans else "")


def gpu_graph_pipeline(gplan, border: Border, device: bool = True,
                       ) -> tuple[hl.Pipeline, list[hl.ImageParam], str]:
    """A planned pipeline graph (`graph_plan.GraphPlan`): the cpu's algorithm
    (`GraphLowering.algorithm`, the linear blocks sharing their passes as on the cpu) with the
    GPU schedule (`GraphLowering.schedule_gpu`), and a line saying how it is placed. `device`
    False strips the GPU loops, as `gpu_pipeline`'s."""
    low = GraphLowering(gplan, border, hl.get_host_target(), "gpu")
    out = low.algorithm()
    return hl.Pipeline(out), low.params, low.schedule_gpu(out, device)


OUTPUT_KINDS = {".o": "object", ".a": "static_library", ".h": "c_header", ".stmt": "stmt"}


def gpu_schedule(plan, border: Border, device: bool = True,
                 ) -> tuple[hl.Pipeline, list[hl.ImageParam], str]:
    """`gpu_pipeline` for a `CpuPlan`, `gpu_graph_pipeline` for a pipeline graph's plan."""
    if isinstance(plan, CpuPlan):
        return gpu_pipeline(plan, border, device)
    return gpu_graph_pipeline(plan, border, device)


def compile_cuda(plan, border: Border, files: dict[str, Path], name: str,
                 capability: tuple[int, int] | None = None, runtime: bool = True) -> str:
    """Write the plan's cuda pipeline ahead of time: `files` maps kinds ('object',
    'static_library', 'c_header', 'stmt') to paths; the function is `name`, with one
    halide_buffer_t argument per input channel, then one per output (the plan's order).
    Needs no GPU. `plan` is a `CpuPlan` or a pipeline graph's `GraphPlan` (whose inputs and
    outputs are the graph's). Returns the schedule's line (`gpu_schedule`)."""
    pipeline, params, note = gpu_schedule(plan, border)
    kinds = {k: getattr(hl.OutputFileType, k) for k in files}
    pipeline.compile_to({kinds[k]: str(p) for k, p in files.items()}, params, name,
                        cuda_target(capability, runtime))
    return note


def _cuda_runtime(target: hl.Target, directory: Path) -> Path:
    """Halide's runtime for `target` as an object in `directory`, compiled once (it takes
    longer than a pipeline) and shared by every library linked for that target."""
    key = hashlib.sha256(f"{target} {halide_version()} {CACHE_FORMAT}".encode()).hexdigest()
    path = directory / f"kalg_runtime_{key[:16]}.o"
    if not path.exists():
        directory.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(dir=directory) as tmp:
            hl.compile_standalone_runtime(str(Path(tmp) / "runtime.o"), target)
            os.replace(Path(tmp) / "runtime.o", path)
    return path


def link_cuda(plan, border: Border, capability: tuple[int, int] | None,
              path: Path | None = None) -> tuple[Path, str]:
    """The plan's cuda pipeline as a shared library (its object with Halide's runtime and the
    primary-context hooks `_SHIM`, linked by the C compiler) for a machine with a CUDA device of
    `capability` (`plan`: a `CpuPlan` or a pipeline graph's plan, as `compile_cuda`'s): at
    `path`, or in the disk cache (reused when there). Returns the library and
    how it was obtained; RuntimeError (or OSError) if it cannot be built. No GPU needed: the
    library is loaded and called by `kalg.targets.cuda.library`."""
    target = cuda_target(capability)
    if path is None:
        directory = cache_dir() or Path(tempfile.mkdtemp(prefix="kalg-cuda-"))
        key = (_key(plan, border, target) if isinstance(plan, CpuPlan)
               else _graph_key(plan, border, "gpu", target))
        path = directory / f"kalg_{key[:32]}.so"
        if path.exists():
            return path, "disk cache"
    cc = shutil.which(os.environ.get("CC", "cc"))
    if cc is None:
        raise RuntimeError("the cuda target links its pipelines with a C compiler, and none "
                           "was found (set CC)")
    path.parent.mkdir(parents=True, exist_ok=True)
    runtime = _cuda_runtime(target, cache_dir() or path.parent)
    with tempfile.TemporaryDirectory(dir=path.parent) as tmp:
        obj, shim, lib = (Path(tmp) / n for n in ("pipeline.o", "shim.c", "pipeline.so"))
        compile_cuda(plan, border, {"object": obj}, "kalg_filter", capability, runtime=False)
        shim.write_text(_SHIM, encoding="utf-8")
        try:
            subprocess.run([cc, "-shared", "-fPIC", "-o", str(lib), str(obj), str(runtime),
                            str(shim), "-lpthread", "-ldl", "-lm"], check=True,
                           capture_output=True, timeout=120)
        except subprocess.SubprocessError as err:
            raise RuntimeError(f"linking the cuda pipeline failed: {err}") from None
        os.replace(lib, path)  # atomic: a reader sees a whole library or none
    return path, "compiled (cached on disk)"


__all__ = ["SCHEDULES", "Compiled", "GraphLowering", "Lowering", "cache_dir", "compile_cuda",
           "compile_graph", "compile_plan", "cuda_target", "gpu_graph_pipeline", "gpu_pipeline",
           "gpu_schedule", "halide_version", "host_target", "link_cuda"]
