"""Large kernels compile quickly and never longer than their factors (issue 11, item 4)."""

from __future__ import annotations

import time

from kalg.pipeline import compile_file


def _box(n: int) -> str:
    rows = "\n".join(" ".join(["1"] * n) for _ in range(n))
    return f"kernel box{n} = [\n{rows} ]\n"


def test_a_31x31_box_compiles_to_at_most_45_instructions_in_seconds(tmp_path):
    """Written as its factors (row * column) it gives 40 to 43; before the separable candidate
    it took 520 instructions and over 80 s. About 3 s of CPU time."""
    src = tmp_path / "box31.kalg"
    src.write_text(_box(31))
    start = time.process_time()  # CPU time: wall time on a shared machine measures the others
    result = compile_file(src)
    seconds = time.process_time() - start
    assert result.stats["instructions"] <= 45
    assert result.stats["candidate"] == "separable"  # no e-graph child: all CPU is counted here
    assert seconds < 10
