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
from kalg.dataflow.fixpoint import parts
from kalg.targets.cpu import halide
from kalg.targets.cpu.borders import Border
from kalg.targets.cpu.graph_plan import plan_graph
from kalg.targets.cpu.pipelines import CpuPipeline, plan_pipeline
from kalg.targets.cpu.runner import CpuFilter, correlate, load_definition, plan_definition
from kalg.targets.cuda import device

EXAMPLES = sorted(Path("examples").glob("*.kalg"))
_PLANS: dict[str, object] = {}


def _plan(path: Path):
    """The example's cpu plan (a pipeline's `GraphPlan`, else a `CpuPlan`)."""
    if str(path) not in _PLANS:
        definition = load_definition(path)
        _PLANS[str(path)] = (plan_pipeline(definition) if definition.pipeline is not None
                             else plan_definition(definition))
    return _PLANS[str(path)]


@pytest.fixture
def no_device(monkeypatch):
    """As on a machine without CUDA (also where the tests run on one)."""
    monkeypatch.setattr(device, "probe", lambda: "no CUDA driver in this test")


def test_cuda_is_a_target_plug_in_of_the_cpu_plans():
    cuda = targets.get("cuda")
    assert isinstance(cuda, targets.Target) and cuda.name == "cuda"
    assert cuda.cost() is not None and cuda.lower is not None


def _plans(path: Path) -> list:
    """The plans the cuda target compiles for an example: its plan, or for a pipeline with a
    fixpoint the plans of its parts (`dataflow.fixpoint.parts`)."""
    graph = load_definition(path).pipeline
    if graph is None or not graph.fixpoints():
        return [_plan(path)]
    return [plan_graph(g) for g in parts(graph)]


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_every_example_compiles_to_a_cuda_object(path, tmp_path):
    # kernels, filters, banks, layers and pipelines alike (a fixpoint's parts each)
    for k, plan in enumerate(_plans(path)):
        obj = tmp_path / f"pipeline{k}.o"
        note = halide.compile_cuda(plan, Border("replicate"), {"object": obj}, "f",
                                   runtime=False)
        code = obj.read_bytes()
        assert b".target sm_" in code and b".entry" in code  # a CUDA kernel (PTX) in it
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


@pytest.mark.parametrize("name", ["gauss5", "harris"])  # a kernel, a pipeline
def test_running_without_a_device_says_so_and_names_the_cpu(no_device, capsys, tmp_path,
                                                            monkeypatch, name):
    from kalg.targets.cuda import pipelines, runner
    monkeypatch.setattr(runner, "plan_definition", lambda d: pytest.fail("searched"))
    monkeypatch.setattr(pipelines, "plan_pipeline", lambda d: pytest.fail("searched"))
    image = tmp_path / "in.npy"
    np.save(image, np.zeros((8, 8), np.float32))
    code = main(["run", f"examples/{name}.kalg", "--target", "cuda", "--image", str(image),
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


def test_optimize_for_cuda_of_a_pipeline_prints_its_gpu_schedule_not_the_cpu_text(capsys):
    # Regression: `kalg optimize examples/harris.kalg --target cuda` printed the cpu pipeline's
    # text ("cpu pipeline", the cpu's schedule search to come) under the note "lowered to CUDA"
    assert main(["optimize", "examples/harris.kalg", "--target", "cuda"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("# harris: cuda pipeline") and "cpu pipeline" not in out
    assert "GPU schedule: tiles of 32x8 threads" in out and "fused per tile" in out
    assert "linear blocks verified: exactly" in out


def test_optimize_for_cuda_of_a_pipeline_with_a_fixpoint_prints_its_parts(capsys, tmp_path):
    # Regression: `kalg optimize examples/canny.kalg --target cuda` ended in a KeyError
    # traceback ('loop': the fixpoint's body lowered as one pipeline)
    assert main(["optimize", "examples/canny.kalg", "--target", "cuda"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("# canny: cuda pipeline with a fixpoint, 3 fused parts")
    assert out.count("GPU schedule: tiles of 32x8 threads") == 3
    assert main(["optimize", "examples/canny.kalg", "--target", "cuda", "-o",
                 str(tmp_path / "c.a")]) == 2
    assert "kalg run --target cuda" in capsys.readouterr().err


def test_a_pipeline_with_a_fixpoint_on_cuda_runs_as_cuda_parts(monkeypatch):
    # with a device (faked: nothing runs), each part of the split is a cuda pipeline of the
    # part's verified plan; the loop around the body runs on the host
    from kalg.targets.cuda import pipelines
    fake = device.Device("test device", (9, 0))
    monkeypatch.setattr(device, "probe", lambda: fake)
    f = kalg.compile("examples/canny.kalg", target="cuda").program
    assert isinstance(f, pipelines.CudaFixpointPipeline)
    graphs = [g.describe() for g in parts(f.graph)]
    assert [p.plan.graph.describe() for p in (f.before, f.body, f.after)] == graphs
    assert all(isinstance(p, pipelines.CudaGraphPipeline) and p.device == fake
               for p in (f.before, f.body, f.after))


def test_optimize_writes_a_pipelines_cuda_object_and_header(tmp_path, capsys):
    out = tmp_path / "dog.o"
    assert main(["optimize", "examples/dog.kalg", "--target", "cuda", "-o", str(out)]) == 0
    assert "int dog(struct halide_buffer_t" in (tmp_path / "dog.h").read_text()
    assert b".target sm_" in out.read_bytes()
    assert "dog.h" in capsys.readouterr().err


# ----------------------------------------------------------------------------- pipelines
class _StrippedGraph(CpuPipeline):
    """A pipeline's cuda schedule with its GPU loops stripped (the same tiles, stages per tile
    and placements, as plain loops), JIT-compiled for the CPU and checked by CpuPipeline's own
    check against the numpy reference (`_check`: VerificationError on any difference)."""

    def compiled(self, border, schedule=None):
        if (border, "gpu") not in self._compiled:
            pipeline, params, self.note = halide.gpu_graph_pipeline(self.plan, border,
                                                                    device=False)
            fn = pipeline.compile_to_callable(params, halide.hl.get_host_target())
            self._compiled[border, "gpu"] = lambda images, outs: fn(*images, *outs)
            self._check(border, "gpu")
        return self._compiled[border, "gpu"]


@pytest.mark.parametrize("name", ["harris", "dog"])
def test_a_pipelines_gpu_schedule_stripped_runs_the_cpu_algorithm_to_the_reference(name):
    # the algorithm is GraphLowering.algorithm, the cpu's own: under the GPU schedule's
    # placements (stages staged per tile with their halos) it equals the numpy reference on
    # 23x19, 3x2 and 40x70 images (several tiles, their tails, less than one tile)
    plan = _plan(Path("examples") / f"{name}.kalg")
    f = _StrippedGraph(plan, Border("replicate"), "gpu")
    f.compiled(f.border)
    assert "fused per tile in shared memory" in f.note


def test_a_pipeline_with_a_long_column_window_runs_on_the_cpu_and_compiles_for_cuda(tmp_path):
    # Regression: a conv whose plan has a column window's recurrence (a box of 15 rows) in a
    # pipeline crashed the cpu schedule ("'tuple' object has no attribute 'compute_at'"), and
    # a stage read straight from the input (img * img) read past a narrow image ("accessed at
    # -6"): ShiftInwards vectors
    from kalg.targets.cpu.pipelines import build_pipeline
    source = tmp_path / "col.kalg"
    source.write_text("kernel c = [" + "; ".join(["1"] * 15) + "] / 15\n"
                      "pipeline col(img) {\n  out o = conv(c, img * img)\n} with border "
                      "replicate\n")
    definition = load_definition(source)
    f = build_pipeline(definition, schedule="fused")
    f.compiled(f.border)  # checked against the reference, a 3x2 image among others
    note = halide.compile_cuda(f.plan, f.border, {"object": tmp_path / "c.o"}, "c",
                               runtime=False)
    assert "column window(s) one thread per column and strip" in note


def test_compiling_a_pipeline_to_run_without_a_device_raises_before_the_search(
        no_device, monkeypatch):
    from kalg.targets.cuda import pipelines
    monkeypatch.setattr(pipelines, "plan_pipeline", lambda d: pytest.fail("searched"))
    with pytest.raises(device.NoCudaDevice, match="no CUDA device is present") as info:
        kalg.compile("examples/unsharp.kalg", target="cuda")
    assert "--target cpu" in info.value.hint


def test_a_pipeline_on_cuda_is_built_from_the_cpus_graph_plan(monkeypatch):
    # with a device (faked: nothing runs), kalg.compile gives the cuda pipeline of the same
    # verified graph plan the cpu runs, with the one GPU schedule and no schedule search
    from kalg.targets.cuda import pipelines
    fake = device.Device("test device", (9, 0))
    monkeypatch.setattr(device, "probe", lambda: fake)
    f = kalg.compile("examples/harris.kalg", target="cuda").program
    assert isinstance(f, pipelines.CudaGraphPipeline) and f.device == fake
    assert f.schedule(f.border) == "gpu" and f.timings == {}
    assert f.plan.describe() == _plan(Path("examples/harris.kalg")).describe()


def test_the_gpu_scripts_chains_equal_the_reference_on_every_pipeline_example():
    # scripts/gpu_check.py times kalg against these chains (CuPy's, PyTorch's): node by node
    # with the library's calls; numpy and scipy.ndimage in their place equal kalg's reference
    from kalg.dataflow import reference
    from kalg.targets.cuda import bench_pipelines as bp
    rng = np.random.default_rng(8)
    # (a pipeline with a fixpoint is not in the script: its parts loop on the host)
    pipelines = [p for p in EXAMPLES if load_definition(p).pipeline is not None
                 and not load_definition(p).pipeline.fixpoints()]
    assert len(pipelines) >= 5
    for path in pipelines:
        graph = load_definition(path).pipeline
        live = {i: k for k, i in enumerate(graph.live())}
        p = bp.PreparedPipeline(path.stem, "", "", list(graph.inputs),
                                {n: live[v] for n, v in graph.outputs.items()},
                                bp.graph_nodes(graph), ("replicate", 0.0))
        images = [rng.uniform(-1, 1, (21, 34)) for _ in graph.inputs]
        want = reference.evaluate(graph, images, Border("replicate"))
        got = bp.numpy_reference(p, images)
        for name in graph.outputs:
            np.testing.assert_allclose(got[name], want[name], rtol=1e-9, atol=1e-9)


def test_the_gpu_script_imports_and_says_so_without_a_device(no_device, tmp_path, capsys):
    import importlib.util
    spec = importlib.util.spec_from_file_location("gpu_check", "scripts/gpu_check.py")
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    assert script.run(tmp_path, tmp_path / "doc.md", 1) == 2
    assert "no CUDA device" in capsys.readouterr().err


def test_cuda_takes_a_filter_with_free_output_names_as_the_cpu_does(tmp_path):
    # the cuda target reads a definition as the cpu does: outputs are names, not registers
    source = tmp_path / "edges.kalg"
    source.write_text("target cpu { }\nfilter edges = [gx: [1 0 -1], gy: [1; 0; -1]]\n")
    out = tmp_path / "edges.o"
    assert main(["optimize", str(source), "--target", "cuda", "-o", str(out)]) == 0
    assert out.is_file()


def test_a_bench_rows_columns_and_difference_come_from_the_libraries_that_ran():
    # one row shape for kernels (cuDNN, CuPy) and pipelines (CuPy, PyTorch): a library that
    # did not run (no CuPy) leaves its columns empty and the difference is the other's
    from types import SimpleNamespace

    from kalg.targets.cuda.bench import table_row
    p = SimpleNamespace(name="r", ops=3, search_s=1.0, compile_s=2.0, schedule="gpu")
    ours = {"o": np.ones((2, 2), np.float32)}
    row = table_row(p, 8.0, (2.0, 0.5, ours), {"CuPy": (None, None, None),
                                               "PyTorch": (1.0, 0.2, {"o": np.full((2, 2), 3.0)})})
    assert row["CuPy MP/s"] is None and row["vs CuPy"] is None
    assert row["kalg MP/s"] == 4.0 and row["PyTorch MP/s"] == 8.0 and row["vs PyTorch"] == 0.5
    assert row["max diff"] == 2.0 and row["PyTorch first s"] == 0.2
