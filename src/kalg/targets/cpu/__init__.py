"""The cpu target: the decomposition with the fewest operations per pixel, run as a Halide
pipeline on real images with borders.

* `optimize` (`optimize_cpu`, `optimize_outputs`): e-graph search under `cost.cpu()`, passes,
  exact verification on bordered images. No Halide.
* `plan`: the passes of every output of a definition in one shared, hash-consed program.
* `halide`: the only module that imports Halide: lowering, schedule, JIT/AOT compile, disk cache.
* `borders`: the border modes and their names in OpenCV, scipy and numpy.
* `runner`: `build(definition, border) -> CpuFilter`, the callable users get.
* `driver`: `kalg optimize --target cpu` and `kalg.compile(..., target="cpu")`.

`TARGET` is this target in the shape of `kalg.targets.Target`. Halide is imported only when a
pipeline is built, never by `kalg optimize` alone.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kalg.stages import Stage

if TYPE_CHECKING:
    from kalg.targets.cpu.runner import CpuFilter


def build(definition: Any, border: str | Any | None = None, name: str | None = None,
          warn: Any = None) -> CpuFilter:
    """A callable running `definition` (a `frontend.Definition`, .kalg source text or a path;
    `name` picks the definition, default the last) as a verified Halide pipeline.

    Contract (stable): `f = build(...)`; `f(image, border=None)` takes a 2-D numpy array
    (any real dtype; Boolean kernels read non-zero as true) and returns a float32 array of
    the same shape (bool for Boolean kernels) - a dict of arrays keyed by output name for a
    filter bank. A filter over several inputs (`input: A B C`) takes its channels instead: an
    HxWxC array in the order of `input:` (a colour image), C 2-D arrays, or a dict by input
    name; a count that does not match is a KalgError. `border` (a mode name, 'constant V', or
    a `Border`) is the default that a call may override; None means the definition's `border`
    setting, else replicate. The e-graph search runs once, here; each border's pipeline is
    compiled (or loaded from the disk cache) on its first call. Every pipeline is checked
    against the reference correlation on a random image, for each border it is used with,
    before its first result is returned. A `pipeline` definition gives a `CpuPipeline`
    (`kalg.targets.cpu.pipelines`) with the same call. An approximation setting is ignored (the
    cpu computes the exact coefficients), with a warning to `warn` (default: `warnings.warn`).
    """
    from kalg.targets.cpu.runner import build as _build
    from kalg.targets.cpu.runner import load_definition
    d = load_definition(definition, name)
    if d.pipeline is not None:  # a pipeline block: one fused Halide pipeline
        from kalg.targets.cpu.pipelines import build_pipeline
        return build_pipeline(d, border)
    return _build(d, border, name, warn)


class CpuTarget:
    """The cpu target in the shape of `kalg.targets.Target`."""

    name = "cpu"
    emit = Stage.DECOMPOSITION

    def cost(self):
        from kalg.targets.cpu import cost
        return cost.cpu()

    def lower(self, outputs, **options):
        from kalg.targets.cpu.plan import plan_outputs
        return plan_outputs(outputs, **options)

    def verify(self, artefact, outputs):
        return artefact.verified

    def runner(self, artefact, **options):
        from kalg.targets.cpu.runner import CpuFilter
        return CpuFilter(artefact, **options)

    def optimize(self, text, path, settings, output=None):
        from kalg.targets.cpu import driver
        return driver.optimize(text, path, settings, output)

    def compile(self, text, path, settings, **runtime):
        from kalg.targets.cpu import driver
        return driver.compile(text, path, settings, **runtime)


TARGET = CpuTarget()

__all__ = ["TARGET", "CpuTarget", "build"]
