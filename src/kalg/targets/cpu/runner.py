"""`build(definition, border) -> CpuFilter`: a kalg definition as a callable on numpy images.

A `CpuFilter` holds the definition's verified cpu plan (`plan.plan_outputs`) and compiles one
Halide pipeline per border it is called with (from the disk cache when there). Before a pipeline
returns its first result it is checked against the reference correlation (`correlate`: the
kernel applied to the bordered image in float64) on two random images - an odd size and one
smaller than the kernel - and a mismatch raises VerificationError.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from kalg import frontend
from kalg.algebra.kernel import BOOLEAN, REAL, Kernel
from kalg.diagnostics import KalgError, KalgSemanticError, VerificationError
from kalg.targets.cpu.borders import DEFAULT, Border, parse_border
from kalg.targets.cpu.plan import CpuPlan, plan_channels, plan_outputs

CHECK_SHAPES = ((23, 19), (3, 2))
"""Random images every compiled pipeline is checked on, before its first use."""


class CpuFilter:
    """A definition compiled for the cpu: `f(image, border=None, out=None)`.

    `image`: a 2-D array (any real dtype; Boolean kernels read non-zero as true); for a filter
    over several inputs (`plan.inputs`), its channels: an HxWxC array (a colour image, channels
    in the order of the target's `input:`), a sequence of C 2-D arrays, or a mapping from input
    name to 2-D array (`channel_planes`). Returns a float32 array of the image's shape (bool for
    Boolean kernels), or a dict of them keyed by output name when the definition has several
    outputs (a filter bank). `border` overrides the filter's default (a mode name,
    'constant V', or a `Border`). `out`: arrays the caller allocated once, written in place and
    returned (as OpenCV's `dst=`): an array for one output, a dict by output name or a
    sequence in output order for a bank; each C-contiguous, writeable, of the image's shape,
    float32 (bool or uint8 for Boolean kernels) and sharing no memory with the input. Reusing
    them saves the page faults of fresh outputs, which bound a bank's throughput.
    """

    def __init__(self, plan: CpuPlan, border: Border | str = DEFAULT, name: str = "") -> None:
        self.plan = plan
        self.name = name
        self.border = _border(border)
        self._compiled: dict[Border, Any] = {}
        self.compile_seconds: dict[Border, float] = {}
        self.sources: dict[Border, str] = {}
        self.search_seconds = 0.0
        """Seconds the e-graph search took (set by `build`)."""
        self.choices: dict[Border, Any] = {}
        """The form and schedule of each border's pipeline (`schedules.Choice`)."""

    @property
    def outputs(self) -> list[str]:
        return list(self.plan.outputs)

    def __call__(self, image: np.ndarray, border: Border | str | None = None,
                 out: Any = None) -> np.ndarray | dict[str, np.ndarray]:
        b = self.border if border is None else _border(border)
        img = self._input(image)
        outs = self.run(img, b, outs=None if out is None else self._outputs(out, img))
        result = [o.view(bool) for o in outs] if self.boolean else outs  # 0/1 bytes
        if len(result) == 1:
            return result[0]
        return dict(zip(self.plan.outputs, result, strict=True))

    @property
    def boolean(self) -> bool:
        return self.plan.semiring is BOOLEAN

    def run(self, image: np.ndarray | list[np.ndarray], border: Border,
            compiled: Any = None, outs: list[np.ndarray] | None = None) -> list[np.ndarray]:
        """The raw outputs (float32, or uint8 0/1) for an image already of the pipeline's type
        (a list of them, one per input channel, for a filter over several inputs); `compiled`:
        a candidate pipeline's run function instead of the border's own; `outs`: the arrays
        to write (checked by `_outputs`), else fresh ones."""
        compiled = compiled or self.compiled(border)
        images = image if isinstance(image, list) else [image]
        if outs is None:
            outs = [np.empty_like(images[0]) for _ in self.plan.outputs]
        if images[0].size:
            compiled(images, outs)
        return outs

    def compiled(self, border: Border) -> Any:
        """The compiled pipeline for `border`, compiled (or loaded) and checked on first use:
        the form and schedule the search chooses (`schedules.choose`, every candidate checked;
        the choice cached on disk), or the fixed ones (`schedules.FIXED`) where KALG_CPU_SEARCH
        is 0."""
        if border not in self._compiled:
            from kalg.targets.cpu import (
                halide,  # the only module that imports Halide
                schedules,
            )
            start = time.perf_counter()
            compiled: dict[tuple, Any] = {}

            def compile_one(form: str, schedule: tuple | None) -> Any:
                c = halide.compile_plan(self.plan, border, form, schedule)
                compiled[form, schedule] = c
                return c.run

            if schedules.searching():
                choice = schedules.choose(self.plan, border, compile_one,
                                          lambda run: self._check(border, run))
            else:
                choice = schedules.Choice(*schedules.FIXED)
            key = (choice.form, schedules.SCHEDULES[choice.schedule])
            c = compiled.get(key) or halide.compile_plan(self.plan, border, *key)
            self._compiled[border] = c.run
            self.choices[border] = choice
            self.compile_seconds[border] = time.perf_counter() - start
            self.sources[border] = c.source
            if key not in compiled:  # a cached choice: its pipeline is checked here
                self._check(border)
        return self._compiled[border]

    def _input(self, image: np.ndarray) -> np.ndarray | list[np.ndarray]:
        if self.plan.inputs:
            planes = channel_planes(image, self.plan.inputs, self.name)
            # a fresh array each: a slice of an HxWxC image can be "contiguous" with a
            # stride of C (one-pixel axes), which Halide refuses
            return [np.array(p, dtype=np.float32, order="C", copy=True) for p in planes]
        a = np.asarray(image)
        if a.ndim != 2:
            raise KalgError(f"a kalg filter takes a 2-D image (one channel); this one has shape "
                            f"{a.shape}")
        if self.boolean:
            if a.dtype in (np.bool_, np.uint8) and a.flags.c_contiguous:
                return a.view(np.uint8)  # no copy: the pipeline reads any non-zero as true
            return np.ascontiguousarray(a != 0, dtype=np.uint8)
        return np.ascontiguousarray(a, dtype=np.float32)

    def _outputs(self, out: Any, image: np.ndarray | list[np.ndarray]) -> list[np.ndarray]:
        """The caller's `out` as the pipeline's output buffers, in output order; a KalgError
        saying what is expected for anything else (see the class docstring)."""
        names = self.plan.outputs
        first = image[0] if isinstance(image, list) else image
        if isinstance(out, dict):
            if sorted(out) != sorted(names):
                raise KalgError(f"out= has the outputs {', '.join(sorted(map(str, out)))}; "
                                f"this filter writes {', '.join(names)}")
            arrays = [out[n] for n in names]
        elif isinstance(out, list | tuple):
            arrays = list(out)
        else:
            arrays = [out]
        if len(arrays) != len(names):
            raise KalgError(f"out= gives {len(arrays)} array(s); this filter writes "
                            f"{len(names)} ({', '.join(names)}): give a dict by output name")
        dtypes = (np.bool_, np.uint8) if self.boolean else (np.float32,)
        want = " or ".join(np.dtype(d).name for d in dtypes)
        for name, a in zip(names, arrays, strict=True):
            if not isinstance(a, np.ndarray) or a.dtype not in dtypes or a.shape != first.shape:
                got = (f"{a.dtype} {a.shape}" if isinstance(a, np.ndarray)
                       else type(a).__name__)
                raise KalgError(f"out= for output {name} must be a {want} array of the image's "
                                f"shape {first.shape}; got {got}")
            if not (a.flags.c_contiguous and a.flags.writeable):
                raise KalgError(f"out= for output {name} must be C-contiguous and writeable")
            if any(np.may_share_memory(a, i) for i in (image if isinstance(image, list)
                                                     else [image])):
                raise KalgError(f"out= for output {name} shares memory with the input: the "
                                f"pipeline reads the input while it writes the output")
        if len({id(a) for a in arrays}) < len(arrays) or any(
                np.may_share_memory(a, b) for k, a in enumerate(arrays) for b in arrays[k + 1:]):
            raise KalgError("out= gives one array for two outputs: each needs its own")
        return [a.view(np.uint8) if self.boolean else a for a in arrays]

    def _check(self, border: Border, compiled: Any = None) -> None:
        """VerificationError unless the border's pipeline (or `compiled`) equals the reference
        correlation on random images (CHECK_SHAPES)."""
        if self.plan.inputs:
            return self._check_channels(border, compiled)
        rng = np.random.default_rng(1)
        for shape in CHECK_SHAPES:
            image = (rng.random(shape) < 0.4) if self.boolean else rng.uniform(-1, 1, shape)
            got = self.run(self._input(image), border, compiled)
            for name, out in zip(self.plan.outputs, got, strict=True):
                kernel = self.plan.kernels[name]
                want = correlate(kernel, image, border)
                tol = _tolerance(kernel, image, border)
                if out.shape != want.shape or not np.all(np.abs(out - want) <= tol):
                    bad = int(np.sum(np.abs(out - want) > tol))
                    raise VerificationError(
                        f"the Halide pipeline for output {name} differs from the reference "
                        f"correlation at {bad} of {want.size} pixels ({shape[0]}x{shape[1]} "
                        f"image, border {border})", self.plan.describe())


    def _check_channels(self, border: Border, compiled: Any = None) -> None:
        """`_check` for a filter over several inputs: each output against the sum over the
        inputs of each input's kernel correlated with it."""
        rng = np.random.default_rng(1)
        for shape in CHECK_SHAPES:
            images = [rng.uniform(-1, 1, shape) for _ in self.plan.inputs]
            got = self.run(self._input(images), border, compiled)
            for name, out in zip(self.plan.outputs, got, strict=True):
                parts = self.plan.channels[name]
                want, tol = np.zeros(shape), 0.0
                for channel, image in zip(self.plan.inputs, images, strict=True):
                    if channel in parts:
                        want = want + correlate(parts[channel], image, border)
                        tol += _tolerance(parts[channel], image, border)
                if out.shape != want.shape or not np.all(np.abs(out - want) <= tol):
                    bad = int(np.sum(np.abs(out - want) > tol))
                    raise VerificationError(
                        f"the Halide pipeline for output {name} differs from the reference "
                        f"correlation summed over the inputs {' '.join(self.plan.inputs)} at "
                        f"{bad} of {want.size} pixels ({shape[0]}x{shape[1]} images, border "
                        f"{border})", self.plan.describe())


def channel_planes(image: Any, inputs: tuple[str, ...], name: str = "") -> list[np.ndarray]:
    """The 2-D planes of `image` for a filter over the inputs `inputs`, in their order: from an
    HxWxC array (C = len(inputs), channel c is input c: a colour image's R G B ...), a sequence
    of C 2-D arrays, or a mapping from every input name to a 2-D array. All planes must have
    one shape; anything else is a KalgError that says what the filter reads."""
    n, what = len(inputs), f"'{name}'" if name else "this filter"
    reads = f"{what} reads {n} input channels ({' '.join(inputs)}, in that order)"
    if isinstance(image, dict):
        if missing := [c for c in inputs if c not in image]:
            raise KalgError(f"{reads}; the mapping given has no image for "
                            f"{', '.join(missing)}")
        planes = [np.asarray(image[c]) for c in inputs]
    elif isinstance(image, list | tuple):
        planes = [np.asarray(p) for p in image]
    else:
        a = np.asarray(image)
        got = "1 channel" if a.ndim == 2 else (f"{a.shape[-1]} channels" if a.ndim == 3
                                                 else f"shape {a.shape}")
        if a.ndim != 3 or a.shape[-1] != n:
            raise KalgError(f"{reads}: give an HxWx{n} array (a colour image with {n} "
                            f"channels) or {n} 2-D images; this image has {got} "
                            f"(shape {a.shape})")
        planes = [a[:, :, c] for c in range(n)]
    if len(planes) != n:
        raise KalgError(f"{reads}; {len(planes)} image(s) were given")
    if any(p.ndim != 2 for p in planes) or len({p.shape for p in planes}) != 1:
        raise KalgError(f"{reads}; its images must be 2-D and of one shape, not "
                        f"{', '.join(str(p.shape) for p in planes)}")
    for p in planes:
        if not (np.issubdtype(p.dtype, np.number) or p.dtype == bool):
            raise KalgError(f"{reads}; an image of dtype {p.dtype} is not numbers")
    return planes


def correlate(kernel: Kernel, image: np.ndarray, border: Border) -> np.ndarray:
    """The kernel correlated with `image` extended by `border`, in float64 (bool for Boolean
    kernels): what scipy.ndimage.correlate (and grey_erosion/dilation, binary_dilation with
    the structuring element mirrored) computes."""
    s, r = kernel.semiring, kernel.radius()
    h, w = image.shape
    img = np.asarray(image) != 0 if s is BOOLEAN else np.asarray(image, dtype=np.float64)
    if s is BOOLEAN:
        padded = Border(border.mode, 1.0 if border.value else 0.0).pad(img, r, r, r, r)
    else:
        padded = border.pad(img, r, r, r, r)
    return kernel.apply(padded)[r: r + h, r: r + w]


def _tolerance(kernel: Kernel, image: np.ndarray, border: Border) -> float:
    """float32 rounding of the pipeline against float64: a few units in the last place of the
    largest magnitude any pass can reach."""
    if kernel.semiring is BOOLEAN:
        return 0.0
    scale = max(1.0, float(np.max(np.abs(image))), abs(border.value))
    if kernel.semiring is REAL:
        return 1e-5 * scale * sum(abs(float(c)) for _, c in kernel.entries)
    weights = [abs(float(c)) for _, c in kernel.entries]
    return 1e-5 * (scale + max(weights, default=0.0))


def _border(border: Border | str | tuple) -> Border:
    return parse_border(border)


def load_definition(definition: Any, name: str | None = None) -> frontend.Definition:
    """A `frontend.Definition` from a Definition, a path to a .kalg file, or .kalg source text."""
    if isinstance(definition, frontend.Definition):
        return definition
    if isinstance(definition, Path) or (isinstance(definition, str) and "\n" not in definition
                                        and definition.endswith(".kalg")):
        return frontend.load_file(definition, "cpu").definition(name)
    if isinstance(definition, str):
        return frontend.load_text(definition, target="cpu").definition(name)
    raise TypeError(f"expected a Definition, a path or .kalg source text, got {type(definition)}")


def plan_definition(definition: frontend.Definition) -> CpuPlan:
    """The verified cpu plan of a definition (a semantic error is located at it)."""
    refuse_pipeline(definition)
    try:
        if definition.channels:
            return plan_channels(definition.channels, definition.inputs)
        return plan_outputs(definition.outputs, written=definition.structure)
    except KalgSemanticError as err:
        raise KalgSemanticError(f"'{definition.name}': {err.message}",
                                err.span or definition.span, err.hint) from None


def refuse_pipeline(definition: frontend.Definition) -> None:
    """A pipeline has no plan of kernels (its outputs are images): a located error for the
    paths that take kernels and filters only (a standalone module, a filter's plan)."""
    if definition.pipeline is not None:
        raise KalgSemanticError(
            f"'{definition.name}' is a pipeline: it runs as one (kalg run, kalg.compile(..., "
            "target='cpu' or 'cuda')), not as a kernel or filter", definition.span)


def exact_values(definition: frontend.Definition,
                 warn: Callable[[str], None] | None = None) -> frontend.Definition:
    """The definition with its exact values where it was approximated, and a warning that the
    approximation setting is ignored: the cpu multiplies by exact rationals, so it needs none
    (it once applied SCAMP-5's approximation without a word). `warn` receives the warning
    (default: Python's `warnings.warn`)."""
    if not definition.approx_depth:
        return definition
    outputs = ", ".join(sorted(definition.approx_depth))
    message = (f"'{definition.name}': the approximation setting is ignored on the cpu target, "
               f"which computes the exact coefficients (output{'s' * (outputs.count(',') > 0)} "
               f"{outputs}); SCAMP-5 needs it, as it can only halve")
    if warn is None:
        import warnings

        warnings.warn(message, stacklevel=3)
    else:
        warn(message)
    return definition.exact_values()


def build(definition: Any, border: Border | str | None = None, name: str | None = None,
          warn: Callable[[str], None] | None = None) -> CpuFilter:
    """See `kalg.targets.cpu.build`."""
    d = exact_values(load_definition(definition, name), warn)
    start = time.perf_counter()
    if border is None:
        border = d.border or DEFAULT
    f = CpuFilter(plan_definition(d), border, d.name)
    f.search_seconds = time.perf_counter() - start
    return f


__all__ = ["CpuFilter", "build", "channel_planes", "correlate", "load_definition",
           "plan_definition", "refuse_pipeline"]
