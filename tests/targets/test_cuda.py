"""The cuda target without a GPU: every example the cpu target accepts compiles to a CUDA object;
`kalg optimize --target cuda -o F.a` writes the library and its header; running where there is
no CUDA device is a clear error (exit 1, the cpu named) before any search; and the GPU
schedule's algorithm is the cpu one: the schedule with its GPU loops stripped (the same tiles,
shared-memory stages and placements as plain loops) runs on the CPU and equals the reference
correlation. Plans are made once per module (each is a search)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import kalg
from kalg import targets
from kalg.cli import main
from kalg.diagnostics import KalgError
from kalg.targets.cpu import halide
from kalg.targets.cpu.borders import Border
from kalg.targets.cpu.runner import CpuFilter, correlate, load_definition, plan_definition
from kalg.targets.cuda import device

EXAMPLES = sorted(Path("examples").glob("*.kalg"))
_PLANS: dict[str, object] = {}


def _plan(path: Path):
    """The example's cpu plan, or None where the cpu target refuses the example."""
    if str(path) not in _PLANS:
        try:
            _PLANS[str(path)] = plan_definition(load_definition(path))
        except KalgError:
            _PLANS[str(path)] = None
    return _PLANS[str(path)]


@pytest.fixture
def no_device(monkeypatch):
    """As on a machine without CUDA (also where the tests run on one)."""
    monkeypatch.setattr(device, "probe", lambda: "no CUDA driver in this test")


def test_cuda_is_a_target_plug_in_of_the_cpu_plans():
    cuda = targets.get("cuda")
    assert isinstance(cuda, targets.Target) and cuda.name == "cuda"
    assert cuda.cost() is not None and cuda.lower is not None


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_every_cpu_example_compiles_to_a_cuda_object(path, tmp_path):
    plan = _plan(path)
    if plan is None:
        pytest.skip("the cpu target does not take this example")
    obj = tmp_path / "pipeline.o"
    note = halide.compile_cuda(plan, Border("replicate"), {"object": obj}, "f", runtime=False)
    code = obj.read_bytes()
    assert b".target sm_" in code and b".entry" in code  # a CUDA kernel (PTX) in the object
    assert "tiles of" in note


STRIPPED = ["gauss5", "sobel_xy", "box7", "chamfer", "cnn_layer", "colour_edges", "laplacian"]


class _Stripped(CpuFilter):
    """The cuda schedule with its GPU loops stripped, JIT-compiled for the CPU and checked by
    CpuFilter's own reference check (`_check`: VerificationError on any difference)."""

    def compiled(self, border):
        if border not in self._compiled:
            pipeline, params, self.note = halide.gpu_pipeline(self.plan, border, device=False)
            fn = pipeline.compile_to_callable(params, halide.hl.get_host_target())
            self._compiled[border] = lambda images, outs: fn(*images, *outs)
            self._check(border)
        return self._compiled[border]


@pytest.mark.parametrize("name", STRIPPED)
def test_the_gpu_schedule_stripped_equals_the_reference_correlation(name):
    plan = _plan(Path("examples") / f"{name}.kalg")
    border = Border("reflect101")
    f = _Stripped(plan, border, name)
    f.compiled(border)  # checked on 23x19 and 3x2 images (within one tile and its tail)
    rng = np.random.default_rng(3)
    shape = (45, 70)  # several tiles of 32x8 and their tails
    images = [rng.uniform(-1, 1, shape) for _ in plan.inputs or (None,)]
    got = f(np.stack(images, axis=-1) if plan.inputs else images[0])
    got = got if isinstance(got, dict) else {next(iter(plan.outputs)): got}
    for out, value in got.items():
        if plan.inputs:
            want = sum(correlate(k, images[plan.inputs.index(c)], border)
                       for c, k in plan.channels[out].items())
        else:
            want = correlate(plan.kernels[out], images[0], border)
        np.testing.assert_allclose(value, want, atol=1e-4)


def test_long_column_windows_keep_their_recurrence_under_the_gpu_schedule():
    plan = plan_definition(load_definition("kernel c = [" + "; ".join(["1"] * 15) + "] / 15"))
    f = _Stripped(plan, Border("replicate"), "c")
    f.compiled(Border("replicate"))
    assert "column window" in f.note
    image = np.random.default_rng(4).uniform(-1, 1, (80, 37))
    want = correlate(plan.kernels["A" if "A" in plan.kernels else next(iter(plan.kernels))],
                     image, Border("replicate"))
    np.testing.assert_allclose(f(image), want, atol=1e-4)


def test_optimize_writes_the_cuda_library_and_its_header(tmp_path, capsys):
    out = tmp_path / "sobel.a"
    assert main(["optimize", "examples/sobel_xy.kalg", "--target", "cuda", "-o", str(out)]) == 0
    header = (tmp_path / "sobel.h").read_text()
    assert "int sobel_xy(struct halide_buffer_t" in header
    assert out.read_bytes().startswith(b"!<arch>")  # an ar archive: the pipeline and runtime
    assert "sobel.a" in capsys.readouterr().err


def test_optimize_for_cuda_with_another_suffix_is_a_usage_error(capsys):
    assert main(["optimize", "examples/gauss3.kalg", "--target", "cuda", "-o", "g.py"]) == 2
    assert "-o F.a" in capsys.readouterr().err


def test_optimize_for_cuda_prints_the_plan_without_a_gpu():
    r = kalg.compile("examples/gauss5.kalg", target="cuda", emit="decomposition")
    assert r.verified and r.target == "cuda" and "ops/pixel" in r.text


def test_running_without_a_device_says_so_and_names_the_cpu(no_device, capsys, tmp_path):
    image = tmp_path / "in.npy"
    np.save(image, np.zeros((8, 8), np.float32))
    code = main(["run", "examples/gauss5.kalg", "--target", "cuda", "--image", str(image),
                 "-o", str(tmp_path / "out.npy")])
    err = capsys.readouterr().err
    assert code == 1 and "no CUDA device is present" in err and "--target cpu" in err
    assert "Traceback" not in err and not (tmp_path / "out.npy").exists()


def test_compiling_to_run_without_a_device_raises_before_the_search(no_device, monkeypatch):
    from kalg.targets.cuda import runner
    monkeypatch.setattr(runner, "plan_definition", lambda d: pytest.fail("searched"))
    with pytest.raises(device.NoCudaDevice, match="no CUDA device is present") as info:
        kalg.compile("examples/gauss5.kalg", target="cuda")
    assert "--target cpu" in info.value.hint


def test_a_linked_cuda_library_loads_without_halide_and_fails_cleanly_without_a_device(
        tmp_path, monkeypatch):
    from kalg.targets.cuda.library import CudaPipeline
    monkeypatch.setenv("KALG_CACHE_DIR", str(tmp_path))
    plan = _plan(Path("examples/gauss3.kalg"))
    path, source = halide.link_cuda(plan, Border("replicate"), (9, 0))
    assert source.startswith("compiled") and path.parent == tmp_path
    assert halide.link_cuda(plan, Border("replicate"), (9, 0)) == (path, "disk cache")
    pipeline = CudaPipeline(path, 1, 1)  # ctypes only: what a GPU machine without Halide runs
    if isinstance(device.probe(), str):  # no device here: an error, not a crash
        image = np.zeros((8, 8), np.float32)
        with pytest.raises(RuntimeError, match="Halide status"):
            pipeline.run([image], [np.empty_like(image)])


def test_cuda_bench_without_a_device_says_so(no_device, capsys):
    assert main(["bench", "--target", "cuda", "box 3x3"]) == 1
    err = capsys.readouterr().err
    assert "no CUDA device is present" in err and "Traceback" not in err


def test_running_sums_read_other_than_as_windows_run_as_host_scans_in_the_cuda_pipeline(
        tmp_path):
    # a summed-area table (running sums read at four offsets, not one difference): the scan
    # is serial over the image, so the cuda pipeline leaves it on the host
    from .plans import summed_area_plan
    plan = summed_area_plan()
    box = plan.kernels["A"]
    note = halide.compile_cuda(plan, Border("reflect"), {"object": tmp_path / "s.o"}, "f",
                               runtime=False)
    assert "scan(s) on the host" in note
    f = _Stripped(plan, Border("reflect"), "sat")
    image = np.random.default_rng(5).uniform(-1, 1, (20, 30))
    np.testing.assert_allclose(f(image), correlate(box, image, Border("reflect")), atol=1e-5)


def test_the_cuda_object_is_byte_identical_when_compiled_again(tmp_path):
    # in separate processes, as two runs of kalg (within one, Halide renames a second "out")
    import subprocess
    import sys
    code = ("import sys; from pathlib import Path; from kalg.targets.cpu import halide; "
            "from kalg.targets.cpu.borders import Border; "
            "from kalg.targets.cpu.runner import load_definition, plan_definition; "
            "plan = plan_definition(load_definition('examples/gauss3.kalg')); "
            "halide.compile_cuda(plan, Border('replicate'), {'object': Path(sys.argv[1])}, "
            "'g', runtime=False)")
    objects = []
    for _ in range(2):
        subprocess.run([sys.executable, "-c", code, str(tmp_path / "g.o")], check=True)
        objects.append((tmp_path / "g.o").read_bytes())
    assert objects[0] == objects[1]


def test_optimize_for_cuda_of_a_pipeline_is_a_located_error_not_the_cpu_text(capsys):
    # Regression: `kalg optimize examples/harris.kalg --target cuda` printed the cpu pipeline's
    # text under the note "lowered to CUDA", which no pipeline is (the cuda target lowers
    # kernels and filters only)
    assert main(["optimize", "examples/harris.kalg", "--target", "cuda"]) == 1
    captured = capsys.readouterr()
    assert "lowered to CUDA" not in captured.out
    assert "harris.kalg:15:1: error: 'harris' is a pipeline" in captured.err


def test_cuda_takes_a_filter_with_free_output_names_as_the_cpu_does(tmp_path):
    # the cuda target reads a definition as the cpu does: outputs are names, not registers
    source = tmp_path / "edges.kalg"
    source.write_text("target cpu { }\nfilter edges = [gx: [1 0 -1], gy: [1; 0; -1]]\n")
    out = tmp_path / "edges.o"
    assert main(["optimize", str(source), "--target", "cuda", "-o", str(out)]) == 0
    assert out.is_file()
