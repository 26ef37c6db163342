"""Filters over several input channels on the cpu target: `kalg optimize --target cpu`,
`kalg run` on a colour image, `kalg.compile(..., target="cpu")` and the standalone module
compute out = Σ_inputs correlate(input, its kernel), equal to scipy.ndimage.correlate summed
over the channels in every border mode; channel counts that do not match are clear errors."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import scipy.ndimage as nd

import kalg
from kalg.cli import main
from kalg.diagnostics import KalgError
from kalg.targets.cpu import build
from kalg.targets.cpu.borders import MODES, Border
from kalg.targets.cpu.plan import plan_channels

from .standalone import run_without_kalg

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
SHAPES = [(17, 23), (5, 3), (2, 1), (1, 1)]
BORDERS = [Border("constant"), Border("constant", 0.75), *(Border(m) for m in MODES[1:])]

# three inputs, two outputs, non-dyadic coefficients (the cpu takes them exactly), one output
# reading only two of the inputs, and kernels of different sizes on one output
RANDOM3 = """target scamp5 { registers: A..F, input: A B C }
filter mix = [
  D: [3 -1 2; 0 5 1; -2 1 4] / 7 * A + [1 2 1] / 3 * B - [2 0 -1; 1 1 1; 0 3 1; 1 0 2; 2 2 1] * C,
  E: [1 1 1; 1 1 1; 1 1 1] / 9 * B + [0 1 0; 1 -4 1; 0 1 0] * C,
]
"""


def reference(f, images, border: Border) -> dict[str, np.ndarray]:
    """scipy.ndimage.correlate of each input with its kernel, summed over the inputs."""
    out = {}
    for name, parts in f.plan.channels.items():
        out[name] = sum(nd.correlate(image.astype(np.float64), parts[c].to_array().astype(float),
                                     **border.scipy_kwargs())
                        for c, image in zip(f.plan.inputs, images, strict=True) if c in parts)
    return out


def _assert_matches(f, images, got, border):
    want = reference(f, images, border)
    assert sorted(got) == sorted(want)
    for name, w in want.items():
        scale = sum(np.abs(k.to_array().astype(float)).sum()
                    for k in f.plan.channels[name].values())
        assert got[name].dtype == np.float32 and got[name].shape == images[0].shape
        np.testing.assert_allclose(got[name], w, rtol=1e-5, atol=2e-5 * scale)


@pytest.fixture(scope="module")
def random3():
    return build(RANDOM3)


@pytest.mark.parametrize("border", BORDERS, ids=str)
def test_a_three_input_filter_equals_the_summed_correlation_in_every_border(random3, border):
    rng = np.random.default_rng(3)
    for shape in SHAPES:
        image = rng.uniform(-2, 2, (*shape, 3)).astype(np.float32)
        got = random3(image, border=border)
        _assert_matches(random3, [image[:, :, c] for c in range(3)], got, border)


@pytest.mark.parametrize("example", ["cnn_layer", "frame_pair", "colour_edges"])
def test_the_channel_examples_run_on_the_cpu(example):
    f = build(EXAMPLES / f"{example}.kalg")
    n = len(f.plan.inputs)
    image = np.random.default_rng(4).uniform(0, 255, (19, 14, n)).astype(np.float32)
    border = Border("reflect101")
    _assert_matches(f, [image[:, :, c] for c in range(n)], f(image, border=border), border)


def test_the_channels_can_be_given_as_planes_or_by_name(random3):
    rng = np.random.default_rng(8)
    planes = [rng.uniform(-1, 1, (9, 7)) for _ in range(3)]
    stacked = random3(np.stack(planes, axis=-1))
    for other in (random3(planes), random3(dict(zip("ABC", planes, strict=True)))):
        for name in stacked:
            np.testing.assert_array_equal(other[name], stacked[name])


@pytest.mark.parametrize(("image", "message"), [
    (np.zeros((6, 5)), "reads 3 input channels .A B C.*HxWx3.*has 1 channel"),
    (np.zeros((6, 5, 4)), "has 4 channels"),
    ([np.zeros((6, 5)), np.zeros((6, 5))], "2 image"),
    ([np.zeros((6, 5)), np.zeros((6, 4)), np.zeros((6, 5))], "of one shape"),
    ({"A": np.zeros((3, 3)), "B": np.zeros((3, 3))}, "no image for C"),
])
def test_a_channel_count_that_does_not_match_is_a_clear_error(random3, image, message):
    with pytest.raises(KalgError, match=message):
        random3(image)


def test_proportional_kernels_are_applied_once_to_the_mixed_inputs():
    # frame_pair's C is smooth*A - smooth*B: one smoothing of A - B, not two smoothings
    f = build(EXAMPLES / "frame_pair.kalg")
    alone = sum(r.ops for r in f.plan.results.values())
    assert f.plan.ops() < alone
    ops = [p.op for p in f.plan.program.values]
    assert ops.count("input") == 2


def test_a_channel_plan_is_deterministic():
    channels = build(RANDOM3).plan.channels
    a = plan_channels(channels, ("A", "B", "C"))
    b = plan_channels(channels, ("A", "B", "C"))
    assert a.describe() == b.describe() and a.verified.startswith("exactly")


def test_kalg_optimize_target_cpu_prints_the_shared_program(capsys):
    assert main(["optimize", str(EXAMPLES / "colour_edges.kalg"), "--target", "cpu"]) == 0
    out = capsys.readouterr().out
    assert "# inputs: A B C" in out and "v0 = input A" in out
    assert "D <- " in out and "E <- " in out and "# verified: exactly" in out


def test_kalg_run_reads_a_colour_png_in_the_order_of_input(tmp_path, capsys):
    from PIL import Image
    rgb = np.random.default_rng(2).integers(0, 256, (13, 10, 3)).astype(np.uint8)
    Image.fromarray(rgb, mode="RGB").save(tmp_path / "photo.png")
    example = str(EXAMPLES / "colour_edges.kalg")
    assert main(["run", example, "--image", str(tmp_path / "photo.png"),
                 "-o", str(tmp_path / "edges.npy"), "--border", "replicate"]) == 0
    f = build(example)
    planes = [rgb[:, :, c].astype(np.float32) for c in range(3)]
    got = {name: np.load(tmp_path / f"edges_{name}.npy") for name in ("D", "E")}
    _assert_matches(f, planes, got, Border("replicate"))
    Image.fromarray(rgb[:, :, 0], mode="L").save(tmp_path / "grey.png")
    assert main(["run", example, "--image", str(tmp_path / "grey.png"),
                 "-o", str(tmp_path / "x.npy")]) == 1
    err = capsys.readouterr().err
    assert "reads 3 input channels (A B C, in that order)" in err and "has 1 channel" in err
    assert "Traceback" not in err


def test_kalg_compile_for_the_cpu_returns_a_callable_taking_the_channels():
    result = kalg.compile(RANDOM3, target="cpu")
    assert result.verified and result.target == "cpu"
    image = np.random.default_rng(9).uniform(-1, 1, (8, 11, 3)).astype(np.float32)
    got = result.program(image, border="wrap")
    _assert_matches(result.program, [image[:, :, c] for c in range(3)], got, Border("wrap"))


def test_the_standalone_module_takes_the_channels(tmp_path):
    out = tmp_path / "pair_cpu.py"
    assert main(["optimize", str(EXAMPLES / "frame_pair.kalg"), "--target", "cpu",
                 "-o", str(out)]) == 0
    image = np.random.default_rng(6).random((11, 8, 2)).astype(np.float32)
    got = run_without_kalg(tmp_path, "pair_cpu", "wrap", image, ("C", "D"))
    f = build(EXAMPLES / "frame_pair.kalg")
    _assert_matches(f, [image[:, :, 0], image[:, :, 1]], got, Border("wrap"))
