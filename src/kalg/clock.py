"""Wall-clock laps for the stages of a compile, with optional progress reporting."""

from __future__ import annotations

import time
from collections.abc import Callable


class Clock:
    """`lap(name)` records the seconds since the previous lap (or construction) under `name`."""

    def __init__(self, progress: Callable[[str], None] | None = None) -> None:
        self.laps: dict[str, float] = {}
        self._progress = progress
        self._t = time.perf_counter()

    def lap(self, name: str) -> None:
        now = time.perf_counter()
        self.laps[name] = now - self._t
        self._t = now
        if self._progress:
            self._progress(f"{name}: {self.laps[name]:.2f} s")
