"""One disk cache of compiled pipelines for this folder's tests: a pipeline that two tests
compile with the same schedule is compiled once (Halide compiles are the slow part)."""

import pytest


@pytest.fixture(scope="session")
def pipeline_cache(tmp_path_factory):
    return tmp_path_factory.mktemp("pipeline_cache")


@pytest.fixture
def cached(pipeline_cache, monkeypatch):
    monkeypatch.setenv("KALG_CACHE_DIR", str(pipeline_cache))
    return pipeline_cache
