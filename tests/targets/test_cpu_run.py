"""The cpu target runs: Halide pipelines equal scipy.ndimage and OpenCV in every border mode and
semiring, on odd-size images and images smaller than the kernel; banks return one array per
output; `kalg run` reads and writes images. Pipelines are built once per module (JIT costs)."""

from __future__ import annotations

import os
import shutil
from fractions import Fraction

import cv2
import numpy as np
import pytest
import scipy.ndimage as nd

from kalg.cli import main
from kalg.diagnostics import KalgError
from kalg.targets.cpu import build
from kalg.targets.cpu.borders import MODES, Border, parse_border
from kalg.targets.cpu.optimize import Passes, direct_ops
from kalg.targets.cpu.plan import lowered_cost

from .standalone import run_without_kalg

SHAPES = [(17, 23), (5, 3), (2, 1), (1, 1)]
BORDERS = [Border("constant"), Border("constant", 0.75), *(Border(m) for m in MODES[1:])]
CV2 = {"constant": cv2.BORDER_CONSTANT, "replicate": cv2.BORDER_REPLICATE,
       "reflect": cv2.BORDER_REFLECT, "reflect101": cv2.BORDER_REFLECT_101}

RANDOM5 = """kernel r = [ 3 -1  0  2  5
                 -4  7  1 -2  0
                  2  0 -6  3  1
                  1  1  4 -5  2
                 -3  2  0  1  1 ] / 7"""
BOX7 = "kernel b = [" + "; ".join(["1 1 1 1 1 1 1"] * 7) + "]"


@pytest.fixture(scope="module")
def real_filters():
    return {"random5": build(RANDOM5), "box7": build(BOX7)}


def _images(seed=0):
    rng = np.random.default_rng(seed)
    return [rng.uniform(-2, 2, shape).astype(np.float32) for shape in SHAPES]


@pytest.mark.parametrize("border", BORDERS, ids=str)
@pytest.mark.parametrize("which", ["random5", "box7"])
def test_real_kernels_equal_scipy_and_opencv_in_every_border(real_filters, which, border):
    f = real_filters[which]
    k = f.plan.kernels["A"].to_array()
    for image in _images():
        got = f(image, border=border)
        want = nd.correlate(image.astype(np.float64), k, **border.scipy_kwargs())
        assert got.dtype == np.float32 and got.shape == image.shape
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=2e-5 * np.abs(k).sum())
        if border.mode in CV2 and border.value == 0:
            cv = cv2.filter2D(image, -1, k.astype(np.float32), borderType=CV2[border.mode])
            np.testing.assert_allclose(got, cv, rtol=1e-5, atol=2e-5 * np.abs(k).sum())


@pytest.mark.parametrize("border", [Border("replicate"), Border("reflect101")], ids=str)
def test_long_column_windows_restart_exactly_across_strips(border):
    # an 11-row window runs as a recurrence restarted every WINDOW_STRIP rows: a tall image
    # crosses restarts; the window must still equal the direct sum there
    f = _column11()
    assert any(p.op == "prefix" for p in f.plan.program.values)
    rng = np.random.default_rng(7)
    k = f.plan.kernels["A"].to_array()
    for shape in [(300, 7), (5, 3)]:
        image = rng.uniform(-1, 1, shape).astype(np.float32)
        want = nd.correlate(image.astype(np.float64), k, **border.scipy_kwargs())
        np.testing.assert_allclose(f(image, border=border), want, atol=2e-5 * np.abs(k).sum())


def test_long_row_windows_read_in_blocks_equal_the_direct_sum():
    # a 19-tap window along rows is read as blocks of isqrt(19) = 4 taps plus 3 single taps;
    # images narrower than the window, and wide ones, in two borders
    f = build("kernel r = [" + " ".join(["1"] * 19) + "] * transpose([1 2 1])")
    assert any(p.op == "prefix" for p in f.plan.program.values)
    rng = np.random.default_rng(8)
    k = f.plan.kernels["A"].to_array()
    for border in (Border("wrap"), Border("constant", 0.5)):
        for shape in [(9, 61), (4, 7)]:
            image = rng.uniform(-1, 1, shape).astype(np.float32)
            want = nd.correlate(image.astype(np.float64), k, **border.scipy_kwargs())
            np.testing.assert_allclose(f(image, border=border), want, atol=2e-5 * np.abs(k).sum())


_COLUMN11 = []


def _column11():
    if not _COLUMN11:
        _COLUMN11.append(build("kernel c = transpose([1 1 1 1 1 1 1 1 1 1 1]) * [1 1 1]"))
    return _COLUMN11[0]


def test_a_one_ninth_box_runs_without_approximation():
    f = build("kernel mean3 = [1 1 1; 1 1 1; 1 1 1] / 9")
    assert f.plan.kernels["A"].taps[(0, 0)] == Fraction(1, 9)
    image = _images(1)[0]
    np.testing.assert_allclose(f(image), nd.uniform_filter(image.astype(np.float64), 3,
                                                           mode="nearest"), atol=1e-6)


def test_grey_erosion_and_dilation_with_non_flat_structuring_functions():
    s = np.array([[0, 1, 0], [1, 0, 2], [3, 1, 0]])
    # kalg correlates: min-plus K(o) + I(p+o) is erosion by -K; max-plus dilation mirrors
    erode = build(f"kernel e = [{_rows(-s)}] with semiring minplus")
    dilate = build(f"kernel d = [{_rows(s[::-1, ::-1])}] with semiring maxplus")
    for image in _images(2):
        for mode in ("reflect", "wrap"):  # every mode is checked on real kernels above
            kw = Border(mode).scipy_kwargs()
            np.testing.assert_allclose(erode(image, mode),
                                       nd.grey_erosion(image, structure=s, **kw), atol=1e-5)
            np.testing.assert_allclose(dilate(image, mode),
                                       nd.grey_dilation(image, structure=s, **kw), atol=1e-5)


def test_binary_dilation_3_and_chamfer_example():
    s = np.array([[0, 1, 0], [1, 1, 1], [0, 1, 1]], dtype=bool)
    f = build(f"kernel d = [{_rows(s[::-1, ::-1].astype(int))}] with semiring boolean",
              border="constant")
    rng = np.random.default_rng(3)
    for shape in SHAPES:
        image = rng.random(shape) < 0.3
        got = f(image)
        assert got.dtype == bool
        np.testing.assert_array_equal(got, nd.binary_dilation(image, structure=s))
    chamfer = build("examples/chamfer.kalg")
    image = rng.uniform(0, 9, (9, 11)).astype(np.float32)
    k = chamfer.plan.kernels["A"]
    want = nd.grey_erosion(image, footprint=np.isfinite(k.to_array()),
                           structure=-np.nan_to_num(k.to_array(), posinf=0), mode="nearest")
    np.testing.assert_allclose(chamfer(image), want, atol=1e-5)


def test_a_filter_bank_returns_one_array_per_output_sharing_passes():
    f = build("examples/sobel_xy.kalg")
    image = _images(4)[0]
    out = f(image)
    assert set(out) == set(f.plan.kernels) and len(out) == 2
    for name, k in f.plan.kernels.items():
        np.testing.assert_allclose(out[name], nd.correlate(image, k.to_array(), mode="nearest"),
                                   atol=1e-5)
    # the bank costs no more than its outputs planned alone, in the cost the lowering minimises
    # (operations plus the values stored per strip and read back)
    alone = 0
    for r in f.plan.results.values():
        one = Passes(r.program.semiring)
        alone += lowered_cost(one, {"o": one.copy(r.program, r.out)})
    assert lowered_cost(f.plan.program, f.plan.outputs) <= alone


def test_a_bank_writes_into_caller_allocated_outputs_and_returns_them():
    f = build("examples/sobel_xy.kalg")
    image = _images(5)[0]
    want = f(image)
    out = {n: np.full(image.shape, np.nan, np.float32) for n in f.outputs}
    got = f(image, out=out)
    for n in f.outputs:
        assert got[n] is out[n]
        np.testing.assert_array_equal(out[n], want[n])
    listed = [np.empty(image.shape, np.float32) for _ in f.outputs]  # a sequence: output order
    f(image, out=listed)
    for n, a in zip(f.outputs, listed, strict=True):
        np.testing.assert_array_equal(a, want[n])


def test_a_boolean_kernel_writes_into_a_caller_allocated_bool_array():
    f = build("kernel d = [1 1 1] with semiring boolean", border="constant")
    image = np.random.default_rng(7).random((9, 13)) < 0.3
    out = np.zeros(image.shape, bool)
    assert f(image, out=out) is not None
    np.testing.assert_array_equal(out, nd.binary_dilation(image, structure=np.ones((1, 3))))


@pytest.mark.parametrize("bad, says", [
    (lambda im: {"Gx": np.empty_like(im)}, "this filter writes"),
    (lambda im: [np.empty_like(im)], "give a dict by output name"),
    (lambda im: [np.empty(im.shape, np.float64)] * 2, "must be a float32 array"),
    (lambda im: [np.empty((3, 3), np.float32), np.empty_like(im)], "of the image's shape"),
    (lambda im: [np.empty(im.shape, np.float32, order="F"), np.empty_like(im)], "C-contiguous"),
    (lambda im: [im, np.empty_like(im)], "shares memory with the input"),
    (lambda im: [np.empty_like(im)] * 2, "each needs its own"),
])
def test_out_that_cannot_hold_the_outputs_is_a_clear_error_not_a_wrong_result(bad, says):
    f = build("examples/sobel_xy.kalg")
    image = _images(6)[0]
    with pytest.raises(KalgError, match=says):
        f(image, out=bad(image))


def test_a_bank_shares_one_common_sum_of_its_taps():
    # random compass-like bank (no kernel recognised): each output is a common coefficient on a
    # shared support plus a few taps of its own; the plan sums the support once
    rng = np.random.default_rng(11)
    ring = [(r, c) for r in range(3) for c in range(3) if (r, c) != (1, 1)]
    kernels = []
    for _ in range(4):
        k = np.zeros((3, 3), int)
        for r, c in ring:
            k[r, c] = -2
        for i in rng.choice(len(ring), 3, replace=False):
            k[ring[i]] = int(rng.integers(3, 7))
        kernels.append(k)
    rows = ", ".join(f"{n}: [" + "; ".join(" ".join(map(str, row)) for row in k) + "]"
                     for n, k in zip("ABCD", kernels, strict=True))
    f = build(f"target scamp5_wide {{ registers: A..D }}\nfilter bank = [{rows}]")
    image = _images(6)[0]
    out = f(image, border="reflect101")
    for name, k in zip("ABCD", kernels, strict=True):
        np.testing.assert_allclose(out[name], nd.correlate(image, k.astype(np.float64),
                                                           mode="mirror"), atol=1e-4)
    scales = [p for p in f.plan.program.values if p.op == "scale" and p.param == (-2,)]
    assert len(scales) == 1  # the common sum, scaled once and shared by the four outputs
    assert f.plan.ops() < sum(direct_ops(k) for k in f.plan.kernels.values())


@pytest.mark.skipif(shutil.which(os.environ.get("CC", "cc")) is None,
                    reason="the disk cache links with a C compiler; without one kalg uses the JIT")
def test_second_build_loads_the_pipeline_from_the_disk_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("KALG_CACHE_DIR", str(tmp_path))
    first = build("kernel k = [1 2 1] * transpose([1 2 1])")
    first(np.ones((4, 4), np.float32))
    second = build("kernel k = [1 2 1] * transpose([1 2 1])")
    second(np.ones((4, 4), np.float32))
    assert list(second.sources.values()) == ["disk cache"]
    assert list(tmp_path.glob("kalg_*.so"))


def test_without_the_disk_cache_the_jit_runs_the_same_pipeline(monkeypatch):
    monkeypatch.setenv("KALG_CACHE", "0")
    f = build("kernel k = [1 2 1] * transpose([1 2 1])")
    image = _images(8)[0]
    np.testing.assert_allclose(f(image), nd.correlate(image, np.outer([1, 2, 1], [1, 2, 1]),
                                                      mode="nearest"), atol=1e-5)
    assert list(f.sources.values()) == ["JIT"]


def test_unknown_border_is_a_clear_error():
    with pytest.raises(KalgError, match="reflect101"):
        parse_border("mirrorr")
    assert parse_border("mirror") == Border("reflect101")
    assert parse_border("constant:0.5") == Border("constant", 0.5)


def test_kalg_run_writes_one_file_per_output_and_names_them(tmp_path, capsys):
    image = np.random.default_rng(5).random((12, 9)).astype(np.float32)
    np.save(tmp_path / "in.npy", image)
    out = tmp_path / "edges.npy"
    assert main(["run", "examples/sobel_xy.kalg", "--image", str(tmp_path / "in.npy"),
                 "-o", str(out), "--border", "reflect101"]) == 0
    files = sorted(p.name for p in tmp_path.glob("edges_*.npy"))
    assert files == ["edges_A.npy", "edges_B.npy"]
    assert capsys.readouterr().err == (f"kalg: wrote {tmp_path / 'edges_A.npy'}, "
                                       f"{tmp_path / 'edges_B.npy'}\n")
    a = np.load(tmp_path / "edges_A.npy")
    assert a.dtype == np.float32 and a.shape == image.shape
    assert main(["run", "examples/sobel_xy.kalg", "--image", str(tmp_path / "in.npy"),
                 "-o", str(out), "--border", "sideways"]) == 1
    assert "unknown border 'sideways'" in capsys.readouterr().err
    np.save(tmp_path / "rgb.npy", np.zeros((4, 4, 3), np.float32))
    assert main(["run", "examples/sobel_xy.kalg", "--image", str(tmp_path / "rgb.npy"),
                 "-o", str(out)]) == 1
    assert "kalg filters one channel" in capsys.readouterr().err


def test_kalg_run_help_shows_a_constant_border_value_in_a_form_the_command_accepts(
        tmp_path, capsys):
    # Regression: the help said 'constant [V]', and `--border constant 7` as it suggests
    # failed with "unrecognized arguments: 7"; the help now shows constant:7, which works
    assert main(["run", "--help"]) == 0
    assert "constant:7" in capsys.readouterr().out
    image = np.random.default_rng(5).random((6, 5)).astype(np.float32)
    np.save(tmp_path / "in.npy", image)
    assert main(["run", "examples/sobel.kalg", "--image", str(tmp_path / "in.npy"),
                 "-o", str(tmp_path / "out.npy"), "--border", "constant:7"]) == 0
    sobel = np.array([[1, 0, -1], [2, 0, -2], [1, 0, -1]])
    want = nd.correlate(image.astype(float), sobel, mode="constant", cval=7)
    assert np.allclose(np.load(tmp_path / "out.npy"), want, atol=1e-4)


def _rows(a) -> str:
    return "; ".join(" ".join(str(int(v)) for v in row) for row in np.asarray(a))


def test_optimize_writes_a_standalone_module_that_runs_without_kalg(tmp_path):
    out = tmp_path / "sobel_cpu.py"
    assert main(["optimize", "examples/sobel_xy.kalg", "--target", "cpu", "-o", str(out)]) == 0
    again = tmp_path / "again.py"
    assert main(["optimize", "examples/sobel_xy.kalg", "--target", "cpu", "-o", str(again)]) == 0
    assert out.read_bytes() == again.read_bytes()  # deterministic
    image = np.random.default_rng(6).random((11, 8)).astype(np.float32)
    got = run_without_kalg(tmp_path, "sobel_cpu", "reflect101", image, ("A",))
    sx = np.array([[1, 0, -1], [2, 0, -2], [1, 0, -1]])
    np.testing.assert_allclose(got["A"],
                               nd.correlate(image, sx, mode="mirror"), atol=1e-5)


def test_a_summed_area_table_not_in_window_form_runs_as_truncated_scans():
    # S = P_x P_y v; out = S - S@(3,0) - S@(0,3) + S@(3,3): the running sums are read other
    # than as one difference, so the lowering's general (float64, truncated) scan runs
    from kalg.targets.cpu.runner import CpuFilter

    from .plans import summed_area_plan
    f = CpuFilter(summed_area_plan(), "reflect")
    for image in _images(9)[:2]:
        want = nd.correlate(image.astype(np.float64), np.ones((3, 3)), mode="reflect",
                            origin=(1, -1))
        np.testing.assert_allclose(f(image), want, atol=1e-5)


def test_cpu_bench_with_a_name_that_matches_no_row_is_a_usage_error(capsys):
    # Regression (issue 11 audit): `kalg bench --target cpu nosuchrow` printed an empty table
    # and exited 0 (the SCAMP-5 bench says "unknown kernel(s)")
    assert main(["bench", "--target", "cpu", "nosuchrow"]) == 2
    err = capsys.readouterr().err
    assert "no row of the cpu bench matches 'nosuchrow'" in err and "box 3x3" in err
