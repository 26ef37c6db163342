"""`kalg check`: exact north-up printout, --name, --help, determinism."""

import pytest

from kalg.cli import main

SOURCE = """\
# two outputs and an approximation
kernel sobel_x = [1 0 -1; 2 0 -2; 1 0 -1]
kernel mean = [1 1 1] / 3 with approx depth 4
kernel far = [1 2] @ (0, 0) / 8
filter edges = [A: sobel_x / 8, B: transpose(sobel_x)]
kernel erode = [. 0 .; 0 0 0; . 0 .] with semiring minplus
"""

EXPECTED = """\
target scamp5 { registers: A..F, input: A, ops: all }

kernel sobel_x = [ 1 0 -1
                   2 0 -2
                   1 0 -1 ]

# approximated at depth 4, largest coefficient error 1/48 (about 0.0208); exact: [ 1/3 1/3 1/3 ]
# L1 error 0.0625, gain (DC) 0.9375 against 1 exact (-6.25%)
kernel mean = [ 5 5 5 ] / 16

kernel far = [ 1 2 ] @ (0, 0) / 8

filter edges = [
  A: [ 1 0 -1
       2 0 -2
       1 0 -1 ] / 8,
  B: [  1  2  1
        0  0  0
       -1 -2 -1 ],
]

kernel erode = [ . 0 .
                 0 0 0
                 . 0 . ] with semiring minplus
"""


@pytest.fixture
def source_file(tmp_path):
    path = tmp_path / "k.kalg"
    path.write_text(SOURCE)
    return path


def test_check_prints_every_definition_exactly(source_file, capsys):
    assert main(["check", str(source_file)]) == 0
    out, err = capsys.readouterr()
    assert (out, err) == (EXPECTED, "")


def test_check_is_deterministic(source_file, capsys):
    main(["check", str(source_file)])
    first = capsys.readouterr().out
    main(["check", str(source_file)])
    assert capsys.readouterr().out == first


def test_check_name_prints_one_definition(source_file, capsys):
    assert main(["check", str(source_file), "--name", "far"]) == 0
    assert capsys.readouterr().out == "kernel far = [ 1 2 ] @ (0, 0) / 8\n"


def test_check_unknown_name_lists_the_definitions(source_file, capsys):
    assert main(["check", str(source_file), "--name", "nope"]) == 1
    err = capsys.readouterr().err
    assert "no definition named 'nope'" in err
    assert "sobel_x, mean, far, edges, erode" in err


def test_check_help(capsys):
    assert main(["check", "--help"]) == 0
    out = capsys.readouterr().out
    assert "north-up" in out and "--name NAME" in out and "FILE" in out


def test_check_without_a_file_is_a_usage_error(capsys):
    assert main(["check"]) == 2


@pytest.mark.parametrize("module", ["kalg.frontend", "kalg.frontend.report"])
def test_doctests(module):
    import doctest
    import importlib

    assert doctest.testmod(importlib.import_module(module)).failed == 0
