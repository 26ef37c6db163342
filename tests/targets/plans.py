"""Plans built by hand for the lowering tests (shapes the search does not produce)."""

from kalg.algebra.kernel import Kernel
from kalg.targets.cpu.optimize import Passes, verify
from kalg.targets.cpu.plan import CpuPlan


def summed_area_plan() -> CpuPlan:
    """A 3x3 box over offsets 0..2 as a summed-area table S = P_x P_y v read at four offsets:
    the running sums are read other than as one difference, so the lowering's general (float64,
    truncated) scan runs. Verified exactly against the box."""
    program = Passes(Kernel.unit().semiring)
    out = program.apply(["KCompose",
                         ["KSub", ["KSub", ["Sh", 0, 0], ["Sh", 3, 0]],
                          ["KSub", ["Sh", 0, 3], ["Sh", 3, 3]]],
                         ["KCompose", ["KPrefix", 1, 0], ["KPrefix", 0, 1]]], 0)
    box = Kernel.of({(x, y): 1 for x in range(3) for y in range(3)})
    assert verify(program, out, box)
    return CpuPlan(box.semiring, program, {"A": out}, {"A": box})
