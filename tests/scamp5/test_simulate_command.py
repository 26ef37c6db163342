"""`kalg simulate`, in process: Cain's programs against the kernels of examples/*.kalg."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from kalg.cli import main

try:
    from kalg.frontend import load_file  # noqa: F401  (the command loads targets through it)
except ImportError:  # the frontend is written in parallel with this command
    pytestmark = pytest.mark.skip(reason="kalg.frontend.load_file is not available yet")

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
CAIN = ROOT / "tests" / "data" / "cain"


def _simulate(capsys: pytest.CaptureFixture[str], *args: str | Path) -> tuple[int, str, str]:
    code = main(["simulate", *map(str, args)])
    out, err = capsys.readouterr()
    return code, out, err


def test_sobel_verifies(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = _simulate(capsys, CAIN / "sobel.scamp5", "--kernel", EXAMPLES / "sobel.kalg")
    assert (code, err) == (0, "")
    lines = out.splitlines()
    assert lines[0].endswith("sobel.scamp5: 5 instructions, 10 bus steps, registers A B")
    assert lines[1].endswith("sobel.kalg: outputs A, input in A")
    assert lines[2] == ("image    random 256x256 grey levels, seed 0; interior 254x253 "
                        "(reads up to west 2, east 1, south 1, north 1)")
    assert lines[3] == "exact    ok: every output holds its kernel (A)"
    assert lines[4] == "numeric  ok: A max abs error 0"
    assert len(lines) == 5


def test_named_definition_with_two_outputs_and_noise(capsys: pytest.CaptureFixture[str]) -> None:
    args = (CAIN / "sobel_xy.scamp5", "--kernel", f"{EXAMPLES / 'sobel_xy.kalg'}:sobel_xy",
            "--size", "40x50", "--seed", "3", "--noise", "cain", "--noise-seed", "1")
    code, out, _ = _simulate(capsys, *args)
    assert code == 0
    assert "outputs A B" in out and "random 40x50 grey levels, seed 3" in out
    noise = out.splitlines()[-1]
    assert noise.startswith("noise    gain 1, relative 0.005, fixed_pattern 0, additive 0, seed 1: "
                            "A rms ")
    assert "; B rms " in noise
    assert _simulate(capsys, *args)[1] == out  # deterministic


def test_noise_override_without_preset(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _simulate(capsys, CAIN / "gauss3.scamp5", "--kernel", EXAMPLES / "gauss3.kalg",
                             "--size", "32", "--noise-additive", "0.5")
    assert code == 0
    assert "noise    gain 1, relative 0, fixed_pattern 0, additive 0.5, seed 0: A rms " in out


def test_op_set_is_checked_at_parse_time(capsys: pytest.CaptureFixture[str]) -> None:
    program, kernel = CAIN / "gauss3.basic.scamp5", EXAMPLES / "gauss3.kalg"
    assert _simulate(capsys, program, "--kernel", kernel, "--ops", "basic", "--size", "16")[0] == 0
    code, out, err = _simulate(capsys, program, "--kernel", kernel, "--ops", "all")
    assert (code, out) == (1, "")
    assert err.startswith(f"{program}:5:1: error: divq is not in op set 'all'\ndivq(B, A);\n^^^^")


def test_hand_edited_wrong_program_is_a_user_error_exit_1(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 14: a user's wrong program said "this is a kalg bug" and exited 3."""
    text = (CAIN / "sobel.scamp5").read_text().replace("movx(B, A, south);", "movx(B, A, north);")
    program = tmp_path / "flipped.scamp5"
    program.write_text(text)
    code, out, err = _simulate(capsys, program, "--kernel", EXAMPLES / "sobel.kalg", "--size", "20")
    assert code == 1
    assert "exact    FAILED\nnumeric  FAILED\n" in out
    assert err.startswith("kalg: error: the program does not compute the kernel: ")
    assert "register A differs at 8 offset(s): (-1, -1): got 0, want 1" in err
    assert "register A differs from its kernel on " in err
    assert "kalg bug" not in err and "Traceback" not in err


def test_wrong_kernel_option_is_a_user_error_exit_1(capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 14: a program checked against the wrong --kernel exited 3 ("a kalg bug")."""
    code, _, err = _simulate(capsys, CAIN / "gauss3.scamp5", "--kernel", EXAMPLES / "gauss5.kalg",
                             "--size", "24")
    assert code == 1
    assert "the program does not compute the kernel" in err
    assert "register A differs at 21 offset(s)" in err
    assert "--kernel" in err  # the hint says what to check


def test_images_from_files(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from PIL import Image

    grey = np.random.default_rng(0).integers(0, 256, size=(30, 40)).astype(np.uint8)
    Image.fromarray(grey).save(tmp_path / "in.png")
    np.save(tmp_path / "in.npy", grey.astype(float) / 7)
    for name in ("in.png", "in.npy"):
        code, out, _ = _simulate(capsys, CAIN / "box3.scamp5", "--kernel",
                                 EXAMPLES / "box3.kalg", "--image", tmp_path / name)
        assert code == 0
        assert f"in.{name.split('.')[1]}; interior 28x38" in out


@pytest.mark.parametrize(("setup", "message"), [
    (lambda d: None, "cannot read image"),
    (lambda d: np.save(d / "bad.npy", np.zeros((2, 3, 4))), "must be 2-D"),
    (lambda d: (d / "bad.npy").write_text("not an array"), "cannot read image"),
])
def test_bad_images_are_user_errors(setup, message: str, tmp_path: Path,  # type: ignore[no-untyped-def]
                                    capsys: pytest.CaptureFixture[str]) -> None:
    setup(tmp_path)
    code, _, err = _simulate(capsys, CAIN / "box3.scamp5", "--kernel", EXAMPLES / "box3.kalg",
                             "--image", tmp_path / "bad.npy")
    assert code == 1
    assert message in err


@pytest.mark.parametrize(("size", "code", "message"), [
    ("7x", 2, "--size expects N or HxW"), ("0", 2, "--size expects"),
    ("2x9", 1, "a 2x9 image has no interior")])
def test_bad_sizes(size: str, code: int, message: str,
                   capsys: pytest.CaptureFixture[str]) -> None:
    """A malformed --size is a usage error (exit 2, issue 14); a too-small image is not."""
    got, _, err = _simulate(capsys, CAIN / "box3.scamp5", "--kernel", EXAMPLES / "box3.kalg",
                            "--size", size)
    assert got == code
    assert message in err


def test_missing_program_is_a_user_error(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = _simulate(capsys, "no/such.scamp5", "--kernel", EXAMPLES / "box3.kalg")
    assert code == 1
    assert err.startswith("kalg: error: cannot read no/such.scamp5")


def test_writes_result_and_error_images(tmp_path: Path,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    from PIL import Image

    code, _, _ = _simulate(capsys, CAIN / "sobel_xy.scamp5", "--kernel",
                           EXAMPLES / "sobel_xy.kalg", "--size", "24x32",
                           "--write-result", tmp_path / "out.png",
                           "--write-error", tmp_path / "err.png")
    assert code == 0
    for name in ("out_A.png", "out_B.png", "err_A.png", "err_B.png"):
        with Image.open(tmp_path / name) as img:
            assert (img.mode, img.size) == ("L", (32, 24))
    with Image.open(tmp_path / "err_A.png") as img:
        error = np.asarray(img)
    assert error.max() == 0  # exact on the interior, and the border is black (not scaled in)


def test_write_error_png_is_scaled_on_the_interior_only(tmp_path: Path,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 14: the zero-filled border (255) set the scale, leaving the interior at 19 at most."""
    from PIL import Image

    code, _, _ = _simulate(capsys, CAIN / "sobel.scamp5", "--kernel", EXAMPLES / "sobel.kalg",
                           "--size", "40", "--noise", "cain", "--write-error", tmp_path / "e.png")
    assert code == 0
    with Image.open(tmp_path / "e.png") as img:
        error = np.asarray(img)
    inside = error[1:-1, 2:-1]  # sobel reads west 2, east 1, south 1, north 1
    assert inside.max() == 255
    assert error[0].max() == error[-1].max() == error[:, :2].max() == error[:, -1].max() == 0
