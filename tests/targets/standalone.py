"""Run a module written by `kalg optimize --target cpu -o` in a fresh interpreter without kalg."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np


def run_without_kalg(folder: Path, module: str, border: str, image: np.ndarray,
                     outputs: tuple[str, ...]) -> dict[str, np.ndarray]:
    """`module.build(border)(image)` in a new process whose path has neither kalg's sources
    nor PYTHONPATH (it fails if the module imports kalg); the named outputs, read back."""
    np.save(folder / "in.npy", image)
    saves = "".join(f"np.save({str(folder / f'{name}.npy')!r}, r[{name!r}]); "
                    for name in outputs)
    script = (f"import sys; sys.path = [p for p in sys.path if 'src' not in p]; "
              f"sys.path.insert(0, {str(folder)!r}); import numpy as np, {module}; "
              f"r = {module}.build({border!r})(np.load({str(folder / 'in.npy')!r})); "
              f"{saves}assert 'kalg' not in sys.modules")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    subprocess.run([sys.executable, "-c", script], check=True, env=env, cwd=folder)
    return {name: np.load(folder / f"{name}.npy") for name in outputs}
