"""Regression tests for big and hostile inputs (issue 27, item 5), one test per symptom: each
reproduces what a user hit and states what they rely on instead (a result, or a clear error
that names the limit, never a traceback)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import kalg
from cli_run import run
from kalg.diagnostics import KalgError

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"


def kalg_file(tmp_path: Path, text: str, name: str = "k.kalg") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def random_kernel(size: int, seed: int = 0) -> list[list[int]]:
    return np.random.default_rng(seed).integers(-9, 10, size=(size, size)).tolist()


# ----------------------------------------------------------------------------- cpu target
def test_random_23x23_on_cpu_no_recursion_error():
    """A random 23x23 kernel on the cpu target ended in RecursionError (`Passes.copy` rebuilt
    its tap-by-tap chain of 529 passes recursively); now it compiles and is verified."""
    result = kalg.compile(random_kernel(23), target="cpu")
    assert result.verified
    image = np.random.default_rng(1).integers(0, 9, size=(30, 31))
    from scipy.ndimage import correlate

    want = correlate(image.astype(np.int64), np.array(random_kernel(23)), mode="constant")
    got = np.asarray(result.program(image), dtype=np.int64)
    assert np.array_equal(got[11:-11, 11:-11], want[11:-11, 11:-11])  # beyond any border
