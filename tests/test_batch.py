"""`kalg batch` (issue 27, item 2): many definitions compiled as one batch, on a local process
pool or a Dask cluster, into one JSON report that is byte-identical either way; a failed compile
is reported and the batch goes on. The definitions are tiny, so the file stays within seconds
(the network example, examples/network/, is compiled by docs/layers.md's command)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cli_run import run
from kalg.batch import compile_job, jobs_of, report, run_batch

NET = """\
kernel smooth = [1 2 1] / 4
kernel edge = [1 0 -1]
"""

BAD = "kernel broken = [1 2 1] / 3\n"  # not dyadic, no approx setting: an error for SCAMP-5


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> list[str]:
    folder = tmp_path_factory.mktemp("net")
    (folder / "a_net.kalg").write_text(NET, encoding="utf-8")
    (folder / "b_bad.kalg").write_text(BAD, encoding="utf-8")
    return [str(folder / "a_net.kalg"), str(folder / "b_bad.kalg")]


@pytest.fixture(scope="module")
def pooled(files) -> str:
    results = run_batch(jobs_of(files, {}), workers=2)
    return json.dumps(report(results), indent=1)


def test_every_definition_is_a_job_in_file_order(files):
    jobs = jobs_of(files, {})
    assert [(Path(j.path).name, j.name) for j in jobs] == [
        ("a_net.kalg", "smooth"), ("a_net.kalg", "edge"), ("b_bad.kalg", "broken")]


def test_a_failed_compile_is_reported_and_the_batch_goes_on(pooled):
    obj = json.loads(pooled)
    assert obj["totals"] == {"jobs": 3, "compiled": 2, "failed": 1,
                             "instructions": sum(j["instructions"] for j in obj["jobs"][:2])}
    broken = obj["jobs"][2]
    assert not broken["ok"] and broken["exit_code"] == 1 and "non-dyadic" in \
        broken["errors"][0]["message"]
    assert all(j["verified"] for j in obj["jobs"][:2])
    assert obj["exit_code"] == 1 and not obj["ok"]


def test_the_report_is_the_same_on_a_dask_cluster_as_on_the_local_pool(files, pooled):
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=False,
                                  dashboard_address=None) as cluster:
        results = run_batch(jobs_of(files, {}), scheduler=cluster.scheduler_address)
    assert json.dumps(report(results), indent=1) == pooled


def test_the_report_is_the_same_in_one_process(files, pooled):
    assert json.dumps(report(run_batch(jobs_of(files, {}), workers=1)), indent=1) == pooled


def test_batch_command_prints_one_report_and_a_final_line(capsys, files):
    code, out, err = run(capsys, "batch", f"{files[0]}:edge", "--workers", "1")
    assert code == 0
    assert json.loads(out)["totals"]["compiled"] == 1
    assert err.strip().splitlines() == ["kalg batch: 1 definitions, 1 compiled, 0 failed"]


def test_an_unreadable_file_is_a_failed_job_with_its_located_error(tmp_path):
    path = tmp_path / "syntax.kalg"
    path.write_text("kernel k = [1 2\n", encoding="utf-8")
    (job,) = jobs_of([str(path)], {})
    entry = compile_job(job)
    assert not entry["ok"] and "syntax.kalg:" in entry["errors"][0]["message"]


def test_an_unreachable_scheduler_is_an_error_not_a_traceback(capsys, files):
    code, _, err = run(capsys, "batch", files[0], "--scheduler", "tcp://127.0.0.1:9")
    assert code == 1 and "cannot reach the Dask scheduler" in err


def test_a_definition_given_twice_is_compiled_once_and_reported_twice(monkeypatch, files):
    # `kalg batch net.kalg net.kalg:edge` compiled edge twice (and a file named three times,
    # its every definition three times): a job's entry is a pure function of the job, so a
    # repeat now reports a copy of the first, and the progress counts every job.
    import kalg.batch

    compiled, seen = [], []
    real = kalg.batch.compile_job
    monkeypatch.setattr(kalg.batch, "compile_job",
                        lambda job: compiled.append(job.name) or real(job))
    jobs = jobs_of([files[0], f"{files[0]}:edge", files[0]], {})
    results = run_batch(jobs, workers=1, progress=lambda done, total: seen.append((done,
                                                                                    total)))
    assert sorted(compiled) == ["edge", "smooth"]
    assert [r["definition"] for r in results] == ["smooth", "edge", "edge", "smooth", "edge"]
    assert results[1] == results[2] == results[4] and results[1] is not results[2]
    assert seen[-1] == (5, 5)
