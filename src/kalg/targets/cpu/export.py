"""`kalg optimize FILE --target cpu -o FILE.py`: a standalone Python module for a definition.

The module embeds the verified plan as data and the Halide lowering itself (the section of
`kalg.targets.cpu.halide` between its STANDALONE markers, copied verbatim, so it is the code kalg
runs and tests), and needs only `halide` and `numpy`: no e-graph search, no kalg.

    import gauss5_cpu
    f = gauss5_cpu.build("reflect101")   # JIT-compiles the pipeline once
    out = f(image)                       # 2-D array -> float32 array (a dict for a bank)

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
    return f(image) -> array (a dict of arrays keyed by output for a filter bank)."""
    target = hl.get_host_target()
    pipeline, param = Lowering(PLAN, border, value, target).pipeline()
    fn = pipeline.compile_to_callable([param], target)
    boolean = PLAN["semiring"] == "boolean"

    def run(image):
        a = np.asarray(image)
        img = (np.ascontiguousarray(a != 0, dtype=np.uint8) if boolean
               else np.ascontiguousarray(a, dtype=np.float32))
        outs = [np.empty_like(img) for _ in PLAN["outputs"]]
        if img.size:
            fn(img, *outs)
        outs = [o.view(bool) for o in outs] if boolean else outs
        return outs[0] if len(outs) == 1 else dict(zip(PLAN["outputs"], outs))

    return run
'''


def standalone_source(plan: CpuPlan, name: str, border: Border) -> str:
    """The text of a Python module that builds and runs `plan` with Halide (see above)."""
    code = _HALIDE.read_text(encoding="utf-8")
    section = code[code.index("# STANDALONE BEGIN"):code.index("# STANDALONE END")]
    kernels = "\n".join(f"    {out}: {k}" for out, k in plan.kernels.items())
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
