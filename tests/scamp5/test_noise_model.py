"""The seeded noise model: determinism, growth with program length, each parameter's effect."""

from __future__ import annotations

import math

import numpy as np
import pytest

from kalg.targets.scamp5.machine import simulator
from kalg.targets.scamp5.machine.isa import Dir, Div4, Instr, Mov, Movx
from kalg.targets.scamp5.machine.noise import ErrorStats, NoiseModel, error_stats
from kalg.targets.scamp5.machine.simulator import noise_statistics, simulate

IMAGE = np.random.default_rng(11).integers(0, 256, size=(64, 64)).astype(float) - 128.0
MODELS = [NoiseModel.cain(seed=4), NoiseModel.auke(seed=4),
          NoiseModel(relative=0.01, fixed_pattern=0.1, additive=0.2, gain=0.99, seed=4)]


def _copies(pairs: int) -> list[Instr]:
    """2·pairs instructions that leave the input unchanged in A (A → B → A ...)."""
    return [Mov("B", "A"), Mov("A", "B")] * pairs


@pytest.mark.parametrize("model", MODELS, ids=str)
def test_same_seed_same_result(model: NoiseModel) -> None:
    program = [Movx("B", "A", Dir.EAST), *_copies(3)]
    first, second = simulate(program, IMAGE, noise=model), simulate(program, IMAGE, noise=model)
    for reg in ("A", "B"):
        np.testing.assert_array_equal(first[reg], second[reg])


@pytest.mark.parametrize("model", MODELS, ids=str)
def test_another_seed_another_result(model: NoiseModel) -> None:
    other = NoiseModel(model.gain, model.relative, model.fixed_pattern, model.additive, seed=5)
    a = simulate(_copies(2), IMAGE, noise=model)["A"]
    b = simulate(_copies(2), IMAGE, noise=other)["A"]
    assert not np.array_equal(a, b)


@pytest.mark.parametrize("model", MODELS, ids=str)
def test_more_instructions_more_error(model: NoiseModel) -> None:
    rms = [noise_statistics(_copies(pairs), IMAGE, model, ["A"])["A"].rms for pairs in (1, 4, 16)]
    assert rms[0] > 0
    assert rms[0] * 1.5 < rms[1] and rms[1] * 1.5 < rms[2], rms


def test_additive_noise_grows_as_the_square_root_of_writes() -> None:
    model = NoiseModel(additive=0.5, seed=1)
    short, long = (noise_statistics(_copies(p), IMAGE, model, ["A"])["A"].rms for p in (2, 32))
    assert long / short == pytest.approx(math.sqrt(16), rel=0.05)
    assert short == pytest.approx(0.5 * math.sqrt(4), rel=0.05)


def test_divisions_pay_for_their_five_bus_steps() -> None:
    model = NoiseModel(additive=0.3, seed=2)
    move = noise_statistics([Mov("F", "A")], IMAGE, model, ["F"])["F"].rms
    copy = noise_statistics([Div4("B", "C", "F", "A")], IMAGE, model, ["F"])["F"].rms
    assert copy / move == pytest.approx(math.sqrt(5 / 2), rel=0.05)


def test_gain_is_systematic() -> None:
    stats = noise_statistics(_copies(5), IMAGE, NoiseModel(gain=0.9), ["A"])["A"]
    shrink = 1 - 0.9 ** 10
    assert stats.max_abs == pytest.approx(shrink * np.abs(IMAGE).max())
    assert stats.bias == pytest.approx(-shrink * IMAGE.mean())


def test_relative_noise_scales_with_the_value() -> None:
    model = NoiseModel(relative=0.01, seed=3)
    error = simulate([Mov("B", "A")], IMAGE, noise=model)["B"] - IMAGE
    small, large = np.abs(IMAGE) < 20, np.abs(IMAGE) > 100
    assert np.std(error[large]) > 4 * np.std(error[small])
    assert np.all(error[IMAGE == 0] == 0)


def test_fixed_pattern_is_one_chip_for_every_image_and_program() -> None:
    model = NoiseModel(fixed_pattern=0.2, seed=9)
    batch = np.stack([IMAGE, IMAGE, IMAGE])
    with pytest.MonkeyPatch.context() as mp:  # also across chunks of a batch
        mp.setattr(simulator, "CHUNK_BYTES", 1)
        result = simulate([Mov("B", "A")], batch, noise=model)["B"]
    np.testing.assert_array_equal(result[0], result[2])
    pattern = result[0] - IMAGE
    assert np.std(pattern) == pytest.approx(0.2, rel=0.05)
    again = simulate([Mov("C", "A"), Mov("B", "A")], IMAGE, noise=model)["B"] - IMAGE
    np.testing.assert_allclose(again, pattern, atol=1e-12)


def test_chunked_noise_runs_every_chunk() -> None:
    batch = np.stack([IMAGE] * 3)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(simulator, "CHUNK_BYTES", 1)
        result = simulate(_copies(2), batch, noise=NoiseModel(additive=1.0, seed=0))["A"]
    assert result.shape == batch.shape
    assert not np.array_equal(result[0], result[1])  # fresh noise per image
    assert np.all(np.abs(result - batch) > 0)


def test_ideal_model_adds_nothing() -> None:
    assert NoiseModel().is_ideal and not NoiseModel.cain().is_ideal
    stats = noise_statistics(_copies(3), IMAGE, NoiseModel(seed=7), ["A", "B"])
    assert stats == {"A": ErrorStats(0.0, 0.0, 0.0), "B": ErrorStats(0.0, 0.0, 0.0)}


def test_error_stats() -> None:
    stats = error_stats(np.array([1.0, 2.0, 3.0]), np.array([1.0, 0.0, 4.0]))
    assert stats == ErrorStats(rms=math.sqrt(5 / 3), max_abs=2.0, bias=pytest.approx(1 / 3))
    assert str(stats) == "rms 1.291, max 2, bias +0.3333"
    with pytest.raises(ValueError, match="empty"):
        error_stats(np.zeros(0), np.zeros(0))


def test_presets_follow_the_spec() -> None:
    assert NoiseModel.cain() == NoiseModel(relative=0.005)
    assert NoiseModel.auke(seed=3) == NoiseModel(gain=0.93, fixed_pattern=0.05, additive=0.09,
                                                 seed=3)
