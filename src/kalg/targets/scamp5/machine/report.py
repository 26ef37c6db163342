"""`kalg simulate --report DIR`: one PNG that shows what a program does to an image.

Per output register, one row: the input, the ideal output (the reference correlation), the
simulated output (noisy, when a noise model is given), the error on the interior (the border,
where the program reads outside the image, is blank) with a colour bar, and the kernel as a heat
map with its values written in the cells. matplotlib (the `plots` extra) draws it, with the Agg
backend (no display needed).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np

from kalg.algebra.kernel import Kernel
from kalg.diagnostics import KalgError
from kalg.targets.scamp5.machine.isa import Instr
from kalg.targets.scamp5.machine.noise import NoiseModel
from kalg.targets.scamp5.machine.simulator import footprint, simulate

MAX_LABELLED = 11
"""Kernels up to this many cells across get their values written in the cells."""


def write_report(directory: Path, program: Sequence[Instr], targets: Mapping[str, Kernel],
                 image: np.ndarray, input_register: str = "A",
                 noise: NoiseModel | None = None) -> Path:
    """Draw the report into `directory`/report.png (the directory is created); return its path.
    Raises KalgError when matplotlib is missing or the file cannot be written."""
    plt = _pyplot()
    ideal_run = simulate(program, image, input_register)
    run = simulate(program, image, input_register, noise) if noise is not None else ideal_run
    inside = footprint(program).mask(image.shape)
    registers = sorted(targets)
    fig, axes = plt.subplots(len(registers), 5, figsize=(21, 4.2 * len(registers)),
                             squeeze=False)
    for row, reg in zip(axes, registers, strict=True):
        ideal = targets[reg].apply(image)
        got = run[reg]
        error = np.where(inside, got - ideal, np.nan)
        _show(fig, row[0], image, "input", "gray")
        _show(fig, row[1], ideal, f"{reg}: ideal output (reference correlation)", "gray")
        _show(fig, row[2], got, f"{reg}: simulated" + (" with noise" if noise else ""), "gray")
        worst = float(np.nanmax(np.abs(error))) if inside.any() else 0.0
        limit = worst if worst > 0 else 1.0
        _show(fig, row[3], error, f"{reg}: error on the interior (max |e| {worst:.3g})",
              "coolwarm", (-limit, limit))
        _kernel_map(fig, row[4], targets[reg], f"{reg}: kernel")
    fig.suptitle(f"{len(program)} instructions, input in {input_register}"
                 + (f"; noise: {_noise_text(noise)}" if noise else ""))
    fig.tight_layout()
    path = Path(directory) / "report.png"
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fig.savefig(path, dpi=80)
    except OSError as err:
        raise KalgError(f"cannot write {path}: {err.strerror or err}") from None
    finally:
        plt.close(fig)
    return path


def _pyplot():
    try:
        import matplotlib
    except ImportError:
        raise KalgError("--report needs matplotlib, which is not installed: "
                        "pip install 'kalg[plots]' (or pip install matplotlib)") from None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _show(fig, ax, values: np.ndarray, title: str, cmap: str,
          limits: tuple[float, float] | None = None) -> None:
    shown = np.ma.masked_invalid(values)
    im = ax.imshow(shown, cmap=cmap, vmin=limits[0] if limits else None,
                   vmax=limits[1] if limits else None, interpolation="nearest")
    ax.set_title(title, fontsize=9)
    ax.set_xticks([])
    ax.set_yticks([])
    fig.colorbar(im, ax=ax, fraction=0.046, pad=0.04)


def _kernel_map(fig, ax, kernel: Kernel, title: str) -> None:
    """The kernel north up (row 0 is north), coloured by value, values written in the cells."""
    rows = kernel.to_rows()
    values = np.array([[np.nan if c is None else float(c) for c in r] for r in rows])
    limit = float(np.nanmax(np.abs(values))) or 1.0
    im = ax.imshow(np.ma.masked_invalid(values), cmap="coolwarm", vmin=-limit, vmax=limit)
    if max(values.shape) <= MAX_LABELLED:
        for (i, j), c in np.ndenumerate(np.array(rows, dtype=object)):
            if c is not None:
                ax.text(j, i, str(c), ha="center", va="center", fontsize=8)
    ax.set_title(title + " (north up)", fontsize=9)
    ax.set_xticks([])
    ax.set_yticks([])
    fig.colorbar(im, ax=ax, fraction=0.046, pad=0.04)


def _noise_text(noise: NoiseModel) -> str:
    values = {f.name: getattr(noise, f.name) for f in dataclasses.fields(noise)}
    return ", ".join(f"{k} {v:g}" for k, v in values.items() if k != "seed")
