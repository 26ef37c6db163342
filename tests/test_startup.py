"""The fixed costs of a compile process (issue 11: a median compile within 1.5 s, start-up
included): what `python -m kalg` and the `kalg` command skip must change nothing a user sees."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from cli_run import run
from kalg.frontend import parser

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src"
ENV = {"PYTHONPATH": str(SRC), "PATH": "/usr/bin:/bin"}


def _kalg(*argv: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "kalg", *argv], env=ENV, cwd=cwd,
                          capture_output=True, text=True, timeout=120)


def test_the_command_prints_all_that_main_prints_and_exits_with_its_code(capsys, tmp_path):
    """`python -m kalg` ends its process at once after `main` (no interpreter shutdown): a long
    output must still be written whole, and the exit code and diagnostics be `main`'s."""
    big = tmp_path / "big.kalg"
    big.write_text("kernel k = (1 + x)^40 * (1 + y)^40\n", encoding="utf-8")
    code, out, _ = run(capsys, "check", str(big))
    done = _kalg("check", str(big))
    assert (done.returncode, done.stdout) == (code, out) == (0, out)
    assert len(out) > 10_000
    bad = tmp_path / "bad.kalg"
    bad.write_text("kernel k = [1 2\n", encoding="utf-8")
    done = _kalg("check", str(bad))
    assert done.returncode == 1 and "bad.kalg:" in done.stderr and "Traceback" not in done.stderr


def test_a_profiler_still_writes_its_results(tmp_path):
    """Under cProfile (or coverage, a debugger) the process exits as usual, so the tool can
    write what it measured."""
    stats = tmp_path / "kalg.prof"
    done = subprocess.run([sys.executable, "-m", "cProfile", "-o", str(stats), "-m", "kalg",
                           "--version"], env=ENV, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and done.stdout.startswith("kalg ")
    assert stats.is_file() and stats.stat().st_size > 0


def test_the_command_line_process_starts_no_blas_thread():
    """numpy's OpenBLAS started a thread per further core; a process with a second thread runs
    `kalg.workers` jobs serially (forking it could deadlock), so the large-kernel path never
    used the second core."""
    code = ("import kalg.cli, numpy; from kalg import resources, workers; "
            "print(resources.threads(), workers.workers() >= 1)")
    done = subprocess.run([sys.executable, "-c", code], env=ENV, capture_output=True,
                          text=True, timeout=60)
    assert done.stdout.split() == ["1", "True"]


def test_a_damaged_parser_cache_is_rebuilt_not_an_error(monkeypatch, tmp_path):
    """The LALR tables are cached by lark in the temporary directory; a cache file another
    process left half-written (or any unreadable one) is rebuilt from the grammar."""
    import tempfile

    text = (ROOT / "examples" / "gauss3.kalg").read_text(encoding="utf-8")
    monkeypatch.setattr(tempfile, "gettempdir", lambda: str(tmp_path))
    try:
        parser._lark.cache_clear()
        first = parser.parse(text, "g.kalg")
        (cached,) = tmp_path.glob(".lark_cache*")
        cached.write_bytes(cached.read_bytes()[:100])
        parser._lark.cache_clear()
        assert parser.parse(text, "g.kalg") == first
        assert cached.stat().st_size > 100  # written again, whole
        parser._lark.cache_clear()
        assert parser.parse(text, "g.kalg") == first  # and read back
    finally:
        parser._lark.cache_clear()
