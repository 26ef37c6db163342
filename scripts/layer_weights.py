"""Write a .kalg layer of N learned-looking 3x3 filters (examples/layer8.kalg, layer16.kalg).

The weights are drawn once from a seeded generator - normal with standard deviation 0.35,
rounded to eighths, as a small trained first layer quantised to 3 fractional bits looks - and
written to the file, which is then an ordinary example (nothing is drawn when it is compiled).

    python scripts/layer_weights.py 8 2708 > examples/layer8.kalg
"""

from __future__ import annotations

import sys

import numpy as np

NAMES = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"


def layer(count: int, seed: int) -> str:
    rng = np.random.default_rng(seed)
    weights = np.round(rng.normal(0.0, 0.35, (count, 3, 3)) * 8).astype(int)
    rows = [f"  {NAMES[i]}: [{'; '.join(' '.join(f'{v:2d}' for v in r) for r in w)}] / 8"
            for i, w in enumerate(weights)]
    return (f"# A first CNN layer of {count} learned-looking 3x3 filters on one input image\n"
            f"# (weights drawn once by scripts/layer_weights.py {count} {seed}: normal, sd 0.35,\n"
            f"# rounded to eighths). {count} outputs are more than SCAMP-5's six registers, so\n"
            "# kalg compiles the filter as a layer, a sequence of programs read out in turn\n"
            "# (docs/layers.md).\n"
            "target scamp5 { registers: A..F, input: A, split: auto }\n\n"
            f"filter layer{count} = [\n" + ",\n".join(rows) + ",\n]\n")


if __name__ == "__main__":
    sys.stdout.write(layer(int(sys.argv[1]), int(sys.argv[2])))
