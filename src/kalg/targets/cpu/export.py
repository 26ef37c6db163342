"""`kalg optimize FILE --target cpu -o FILE.py`: a standalone Python module for a definition.

The module embeds the verified plan as data and the Halide lowering itself (the section of
`kalg.targets.cpu.halide` between its STANDALONE markers, copied verbatim, so it is the code kalg
runs and tests), and needs only `halide` and `numpy`: no e-graph search, no kalg.

    import gauss5_cpu
    f = gauss5_cpu.build("reflect101")   # JIT-compiles the pipeline once
    out = f(image)                       # 2-D array -> float32 array (a dict for a bank)
                                         # (HxWxC for a filter over several inputs)

The text is deterministic: the same plan and border give byte-identical modules.
"""

from __future__ import annotations

import json
from pathlib import Path

from kalg import __version__
from kalg.targets.cpu.borders import Border
from kalg.targets.cpu.plan import STRIP, WINDOW_STRIP, CpuPlan, plan_data

_HALIDE = Path(__file__).with_name("halide.py")

_RUNNER = '''

def build(border: str = DEFAULT_BORDER, value: float = DEFAULT_VALUE):
    """Compile the pipeline for a border (constant, replicate, reflect, reflect101, wrap) and
    return f(image) -> array (a dict of arrays keyed by output for a filter bank). A filter
    over several inputs (PLAN["inputs"]) takes an HxWxC array (channel c is input c) or a
    list of C 2-D arrays."""
    target = hl.get_host_target()
    pipeline, params = Lowering(PLAN, border, value, target).pipeline()
    fn = pipeline.compile_to_callable(params, target)
    boolean = PLAN["semiring"] == "boolean"
    inputs = PLAN.get("inputs")

    def planes(image):
        if not inputs:
            return [image]
        if isinstance(image, (list, tuple)):
            planes = list(image)
        else:
            a = np.asarray(image)
            if a.ndim != 3 or a.shape[-1] != len(inputs):
                raise ValueError(f"this filter reads {len(inputs)} input channels "
                                 f"({' '.join(inputs)}): give an HxWx{len(inputs)} array or "
                                 f"{len(inputs)} 2-D arrays, not shape {a.shape}")
            planes = [a[:, :, c] for c in range(len(inputs))]
        if len(planes) != len(inputs) or len({np.shape(p) for p in planes}) != 1:
            raise ValueError(f"this filter reads {len(inputs)} 2-D images of one shape")
        return planes

    def run(image):
        # a plane of an HxWxC image is copied: it may keep a stride of C (one-pixel axes)
        fresh = np.array if inputs else np.ascontiguousarray
        imgs = [fresh(np.asarray(a) != 0, dtype=np.uint8) if boolean
                else fresh(a, dtype=np.float32) for a in planes(image)]
        outs = [np.empty_like(imgs[0]) for _ in PLAN["outputs"]]
        if imgs[0].size:
            fn(*imgs, *outs)
        outs = [o.view(bool) for o in outs] if boolean else outs
        return outs[0] if len(outs) == 1 else dict(zip(PLAN["outputs"], outs))

    return run
'''


def standalone_source(plan: CpuPlan, name: str, border: Border) -> str:
    """The text of a Python module that builds and runs `plan` with Halide (see above)."""
    code = _HALIDE.read_text(encoding="utf-8")
    section = code[code.index("# STANDALONE BEGIN"):code.index("# STANDALONE END")]
    kernels = "\n".join(f"    {out}: {k}" for out, k in plan.kernels.items())
    if plan.inputs:
        kernels = "\n".join(f"    {out}: " + " + ".join(f"{k} * {c}" for c, k in ins.items())
                            for out, ins in plan.channels.items())
        kernels += f"\nInputs (channels of the image, in order): {' '.join(plan.inputs)}"
    head = (f'"""{name}: a kalg filter as a Halide pipeline (written by kalg {__version__}; '
            f'needs only halide and numpy).\n\n'
            f"    f = build('{border.mode}'); out = f(image)\n\n"
            f"Outputs ({plan.semiring.name} kernels, correlation: out(p) = sum of K(o) * in(p + o),"
            f" x east, y north):\n{kernels}\n"
            f"Operations per pixel: {plan.ops()}. Verified by kalg: {plan.verified}.\n"
            '"""\n\nimport halide as hl\nimport numpy as np\n\n')
    consts = f"STRIP = {STRIP}\nWINDOW_STRIP = {WINDOW_STRIP}\n"
    data = json.dumps(plan_data(plan), sort_keys=True)
    return (head + consts + f"DEFAULT_BORDER = {border.mode!r}\nDEFAULT_VALUE = "
            f"{float(border.value)!r}\nPLAN = {data}\n\n\n" + section.rstrip() + "\n" + _RUNNER)


__all__ = ["standalone_source"]
