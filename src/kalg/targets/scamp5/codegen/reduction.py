"""A filter that fills the register file, reduced backwards by in-place steps (`codegen.filling`).

With one output per register, the program's last instructions may be in-place steps
`P_i := P_i ± S^e·P_j` (one register written, another read): each is undone by the opposite
step. So a filter's outputs K can be *reduced* backwards, K_i := K_i ∓ S^e·K_j, to outputs P
that are cheaper to make (smaller coefficients), and the program for K is a program for P
followed by the steps replayed forwards (`replay`). `reductions` takes, greedily, the step that
lowers the coefficient mass Σ|c| the most, keeping every output within the kernels' box (an
output that grows past the box makes the in-place tail's lattice problem much harder:
`filling._window`). Measured on random 3x3 filters of six outputs: a few steps shorten the
whole program by about ten instructions (docs/scaling.md); the greedy is not optimal, so
`filling.last_written` compiles a few of its states and keeps the shortest program.
"""

from __future__ import annotations

from collections.abc import Sequence

from kalg.targets.scamp5.codegen.matrix import Key, Offset, _emit_output
from kalg.targets.scamp5.machine.isa import Instr

Step = tuple[str, str, Offset, int]
"""(i, j, e, sign): backwards, P_i := P_i − sign·S^e·P_j; forwards, P_i += sign·S^e·P_j."""


def reductions(rows: dict[str, dict[Key, int]], registers: Sequence[str], counts: Sequence[int],
               ) -> list[tuple[dict[str, dict[Key, int]], list[Step]]]:
    """The greedy reduction's state (rows, the steps taken) after each number of steps in
    `counts` (ascending) that it reaches: each step lowers Σ|c| over the rows, so it ends
    where no step does (states past that end are left out). Deterministic: ties go to the
    larger gain, then fewer taps, then the smaller shift, then the first in register and
    shift order."""
    box = _box(rows)
    rows = {r: dict(row) for r, row in rows.items()}
    names = [r for r in registers if r in rows]
    out, steps = [], []
    for count in counts:
        while len(steps) < count and (step := _best_step(rows, names, box)) is not None:
            i, j, e, sign = step
            rows[i] = _plus(rows[i], rows[j], -sign, e)
            steps.append(step)
        if len(steps) < count:
            break
        out.append(({r: dict(row) for r, row in rows.items()}, list(steps)))
    return out


def replay(steps: Sequence[Step], fused: bool) -> list[Instr]:
    """The instructions that undo `steps` (taken backwards) in reverse order: each run of
    steps on one register is one in-place walk (`matrix._emit_output` from the register's own
    value), so the other registers are only read."""
    out: list[Instr] = []
    forward = list(reversed(steps))
    k = 0
    while k < len(forward):
        i = forward[k][0]
        row: dict[Key, int] = {(f"={i}", (0, 0)): 1}
        held = {i: (f"={i}", 1)}
        while k < len(forward) and forward[k][0] == i:
            _, j, e, sign = forward[k]
            row[(f"={j}", e)] = row.get((f"={j}", e), 0) + sign
            held[j] = (f"={j}", 1)
            k += 1
        row = {key: c for key, c in row.items() if c}
        out += _emit_output(i, row, held, fused, start=(0, 0))
    return out


def _box(rows) -> tuple[int, int, int, int]:
    xs = [d[0] for row in rows.values() for _, d in row] + [-1, 1]
    ys = [d[1] for row in rows.values() for _, d in row] + [-1, 1]
    return min(xs), max(xs), min(ys), max(ys)


def _best_step(rows, names, box) -> Step | None:
    """The step of largest gain in Σ|c| whose result stays within `box`, or None."""
    x0, x1, y0, y1 = box
    shifts = sorted(((x, y) for x in range(x0 - x1, x1 - x0 + 1)
                     for y in range(y0 - y1, y1 - y0 + 1)),
                    key=lambda e: (abs(e[0]) + abs(e[1]), e))
    best, best_key = None, None
    for i in names:
        mass = sum(map(abs, rows[i].values()))
        for j in names:
            if i == j or not rows[j]:
                continue
            for e in shifts:
                for sign in (1, -1):
                    r = _plus(rows[i], rows[j], -sign, e)
                    gain = mass - sum(map(abs, r.values()))
                    if gain <= 0 or (best_key is not None and gain < best_key[0]):
                        continue
                    if not all(x0 <= d[0] <= x1 and y0 <= d[1] <= y1 for _, d in r):
                        continue
                    key = (gain, -len(r), -(abs(e[0]) + abs(e[1])))
                    if best_key is None or key > best_key:
                        best, best_key = (i, j, e, sign), key
    return best


def _plus(p: dict[Key, int], q: dict[Key, int], sign: int, e: Offset) -> dict[Key, int]:
    """p + sign·S^e·q."""
    out = dict(p)
    for (ch, d), c in q.items():
        k = (ch, (d[0] + e[0], d[1] + e[1]))
        out[k] = out.get(k, 0) + sign * c
        if not out[k]:
            del out[k]
    return out
