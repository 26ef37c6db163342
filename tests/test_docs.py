"""The documentation is executable: every ```kalg block of docs/language.md parses and
evaluates, and the Python examples of the README and docs/usage.md run (doctest)."""

from __future__ import annotations

import doctest
import re
from pathlib import Path

import pytest

from kalg.frontend import load_text

ROOT = Path(__file__).resolve().parents[1]
LANGUAGE = ROOT / "docs" / "language.md"
BLOCKS = re.findall(r"```kalg\n(.*?)```", LANGUAGE.read_text(encoding="utf-8"), re.S)


def test_language_reference_has_an_example_per_construct():
    text = "\n".join(BLOCKS)
    for construct in ("#", "kernel ", "filter ", "target scamp5 ", "target scamp5_wide",
                      "semiring minplus", "semiring maxplus", "semiring boolean", "with semiring",
                      "approx depth", "max_error", "@ (", ".", "-inf", "shift(", "transpose(",
                      "flip(", "mirror_x(", "mirror_y(", "^-1", "/ 9", "; ", "x", "y"):
        assert construct in text, construct


@pytest.mark.parametrize("block", BLOCKS, ids=[f"block{i}" for i in range(len(BLOCKS))])
def test_language_reference_example_checks(block):
    module = load_text(block, "docs/language.md")
    assert module.definitions


@pytest.mark.parametrize("page", ["README.md", "docs/usage.md"])
def test_readme_python_examples_run(monkeypatch, page):
    """The `>>>` examples of the README and of the full usage page, run as doctests
    (kalg.compile and kalg.simulate) from the repository root, as a reader would."""
    monkeypatch.chdir(ROOT)
    parser = doctest.DocTestParser()
    text = (ROOT / page).read_text(encoding="utf-8")
    text = re.sub(r"^```.*$", "", text, flags=re.M)  # a fence ends an example's output
    test = parser.get_doctest(text, {}, page, str(ROOT / page), 0)
    assert len(test.examples) >= 5
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    runner.run(test)
    assert runner.failures == 0, f"{runner.failures} {page} example(s) failed (see above)"


def test_readme_cpu_example_prints_what_kalg_prints(capsys, monkeypatch):
    # Regression (issue 11 audit): the README's `kalg optimize examples/box7.kalg --target cpu`
    # block showed passes kalg no longer printed (v4 = running_sum(v3, ...), out <- v6@(-3,-3));
    # every line of the block ('...' skips lines) is now checked against the command's output
    from kalg.cli import main

    monkeypatch.chdir(ROOT)
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    block = re.search(r"^\$ kalg optimize examples/box7.kalg --target cpu\n(.*?)^```", text,
                      re.M | re.S).group(1).splitlines()
    assert main(["optimize", "examples/box7.kalg", "--target", "cpu"]) == 0
    printed = capsys.readouterr().out.splitlines()
    skip = block.index("...")
    assert printed[:skip] == block[:skip]
    assert printed[-(len(block) - skip - 1):] == block[skip + 1:]
