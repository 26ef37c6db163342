"""Seeded random 3x3 kernels of the filter study (Cain's protocol, docs/scaling.md).

One generator serves the study (`scripts/scaling.py`) and the tests that compile random filters,
so that "sample s of k kernels" means the same kernels everywhere.
"""

from __future__ import annotations

import numpy as np


def random_kernels(count: int, seed: int) -> list[np.ndarray]:
    """`count` random 3x3 integer arrays with entries 0..8 (the study divides them by 8), none
    all zero: each entry uniform on 0..8, independently (`numpy.random.default_rng(seed)
    .integers(0, 9)`); an all-zero draw is skipped. Deterministic in `seed`."""
    rng = np.random.default_rng(seed)
    kernels: list[np.ndarray] = []
    while len(kernels) < count:
        k = rng.integers(0, 9, size=(3, 3))
        if k.any():
            kernels.append(k)
    return kernels
