"""Mantis pretraining (skfm.pretrain.mantis): augmentations, synthetic series, the loop, export."""

import json

import numpy as np
import pytest
import torch
from pretraining_runs import four_then_six_steps, read_log

from skfm._backend import threads
from skfm._weights import load_checkpoint, sha256_file
from skfm.pretrain import mantis
from skfm.pretrain.mantis import (
    augment,
    draw_series,
    export,
    load_config,
    random_crop_resize,
    series_pool,
)
from skfm.timeseries import MantisTimeSeriesClassifier
from skfm.timeseries.mantis.loading import load_model

pytestmark = pytest.mark.usefixtures("one_thread")


def test_random_crop_resize_keeps_length_and_is_seeded():
    x = torch.randn(4, 100)
    a = random_crop_resize(x, 64, (0.0, 0.2), torch.Generator().manual_seed(0))
    b = random_crop_resize(x, 64, (0.0, 0.2), torch.Generator().manual_seed(0))
    assert a.shape == (4, 64) and torch.equal(a, b)
    full = random_crop_resize(x, 100, (0.0, 0.0), torch.Generator().manual_seed(0))
    torch.testing.assert_close(full, x, atol=1e-4, rtol=1e-4)


def test_augment_is_seeded_and_each_option_acts():
    x = torch.randn(6, 100).cumsum(1)
    none = {"crop_range": [0.0, 0.2]}
    plain = augment(x, 64, none, torch.Generator().manual_seed(0))
    torch.testing.assert_close(plain, random_crop_resize(x, 64, (0.0, 0.2),
                                                         torch.Generator().manual_seed(0)))
    full = {"crop_range": [0.0, 0.5], "amplitude_range": [0.5, 2.0], "jitter": 0.1, "mask": 0.3}
    a = augment(x, 64, full, torch.Generator().manual_seed(1))
    assert a.shape == (6, 64) and torch.equal(a, augment(x, 64, full, torch.Generator().manual_seed(1)))
    scaled = augment(x, 64, {**none, "amplitude_range": [3.0, 3.0]}, torch.Generator().manual_seed(0))
    torch.testing.assert_close(scaled, 3 * plain)
    jittered = augment(x, 64, {**none, "jitter": 0.5}, torch.Generator().manual_seed(0))
    assert not torch.allclose(jittered, plain)
    masked = augment(x, 64, {**none, "mask": 0.9}, torch.Generator().manual_seed(0))
    straight = (masked.diff(n=2, dim=1).abs() < 1e-4).sum(1)  # a line has zero curvature
    assert (straight > (plain.diff(n=2, dim=1).abs() < 1e-4).sum(1)).any()


def test_draw_series_mixes_native_lengths():
    config = load_config("tiny")
    x = draw_series(16, config, np.random.default_rng(0))
    assert x.shape == (16, config["model"]["seq_len"]) and torch.isfinite(x).all()
    torch.testing.assert_close(x, draw_series(16, config, np.random.default_rng(0)))
    coarse = {**config, "optim": {**config["optim"], "length_range": [8, 8], "length_groups": 1}}
    kinks = draw_series(16, coarse, np.random.default_rng(0)).diff(n=2, dim=1).abs() > 1e-5
    assert kinks.float().mean() < 0.5  # 8 points resized to 64: straight between the knots


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """A tiny run: 4 steps, then resumed to 6."""
    return four_then_six_steps(mantis, tmp_path_factory.mktemp("mantis-run"))


def test_pretraining_logs_and_resumes(run, tmp_path):
    records = read_log(run["out"])
    assert [r["step"] for r in records] == [1, 2, 3, 4, 5, 6]
    assert records[:4] == run["first"]["log"]
    assert all(np.isfinite(r["loss"]) and 0 <= r["top1"] <= 1 for r in records)
    assert set(records[1]["eval_ema"]) == {"loss", "top1"}
    state = torch.load(run["state_path"], weights_only=True)
    assert state["step"] == 6 and state["wall_seconds"] > run["first"]["state"]["wall_seconds"]


def test_series_pool_is_rebuilt_exactly_on_resume():
    """A pool rolled forward step by step equals one built directly at that step."""
    config = load_config("tiny")
    rolled = series_pool(config, seed=3)
    for step in range(7):
        rolled.at_step(step)
    direct = series_pool(config, seed=3).at_step(6)
    torch.testing.assert_close(rolled.data, direct)
    assert not torch.equal(direct, series_pool(config, seed=3).at_step(0).clone())


def test_export_card_and_estimator(run, tmp_path):
    path = export(run["state_path"], tmp_path / "m.safetensors", {"command": "test"})
    card = json.loads(path.with_suffix(".json").read_text())
    assert card["model"] == "mantis" and card["command"] == "test"
    assert card["config"] == load_config("tiny")["model"]
    assert card["training"]["steps"] == 6 and card["sha256"] == sha256_file(path)
    assert set(card["held_out_prior"]) == {"loss", "top1"}
    ema = torch.load(run["state_path"], weights_only=True)["ema"]
    ckpt = load_checkpoint(path)
    for k, v in ema.items():
        np.testing.assert_allclose(ckpt.state[k], v.numpy(), rtol=1e-3, atol=1e-4)
    X = np.random.default_rng(0).normal(size=(12, 2, 40)).cumsum(-1)
    clf = MantisTimeSeriesClassifier(checkpoint=str(path), device="cpu").fit(X, np.arange(12) % 2)
    assert clf.predict(X[:5]).shape == (5,)


def write_series_set(folder, name, n_classes, seed):
    """A tiny UCR-style ``.npz``: 2-channel series whose class sets their frequency."""
    rng = np.random.default_rng(seed)
    arrays = {}
    for split, n in (("train", 12), ("test", 8)):
        y = np.arange(n) % n_classes
        t = np.linspace(0, 1, 40)
        X = np.sin(2 * np.pi * (y[:, None, None] + 1) * t) + 0.1 * rng.normal(size=(n, 2, 40))
        arrays[f"X_{split}"], arrays[f"y_{split}"] = X.astype(np.float32), y.astype(str)
    np.savez(folder / f"{name}.npz", **arrays)


def test_series_screen_scores_frozen_embeddings(run, tmp_path):
    """Every ``.npz`` set is scored by frozen embeddings + LR; the mean is their average."""
    from skfm.pretrain.screen import series_screen

    write_series_set(tmp_path, "two", 2, 0)
    write_series_set(tmp_path, "three", 3, 1)
    path = export(run["state_path"], tmp_path / "m.safetensors", {"command": "test"})
    weights, _ = load_model(str(path), torch.device("cpu"))
    scores = series_screen(weights, tmp_path)
    assert set(scores) == {"screen_accuracy", "screen_seconds", "screen_two", "screen_three"}
    with np.load(tmp_path / "two.npz") as two:
        model = MantisTimeSeriesClassifier(checkpoint=str(path), fusion=None, device="cpu")
        expected = model.fit(two["X_train"], two["y_train"]).score(two["X_test"], two["y_test"])
    assert scores["screen_two"] == pytest.approx(expected, abs=1e-4)
    assert scores["screen_accuracy"] == pytest.approx(
        (scores["screen_two"] + scores["screen_three"]) / 2, abs=1e-4)
    (tmp_path / "empty").mkdir()
    with pytest.raises(FileNotFoundError, match="no .npz time-series sets"):
        series_screen(weights, tmp_path / "empty")


def test_init_and_screen_reach_the_card(run, tmp_path):
    """``init`` starts from an exported checkpoint; the screen's accuracies form the card's curve."""
    write_series_set(tmp_path, "two", 2, 0)
    start = export(run["state_path"], tmp_path / "start.safetensors", {"command": "test"})
    out = tmp_path / "continued"
    with threads(1):
        state_path = mantis.train(load_config("tiny"), steps=2, out=out, eval_every=1,
                                  save_every=2, progress=False, init=str(start), screen=tmp_path)
    card = json.loads(export(state_path, tmp_path / "next.safetensors").with_suffix(".json")
                      .read_text())
    assert card["init"]["checkpoint"] == str(start) and card["init"]["steps"] == 6
    assert [point["step"] for point in card["learning_curve"]] == [1, 2]
    assert all(0 <= point["screen_accuracy"] <= 1 for point in card["learning_curve"])


def test_load_config_names_and_paths(tmp_path):
    tiny_cfg = load_config("tiny")
    assert set(tiny_cfg) == {"model", "prior", "optim"}
    assert load_config("small")["model"]["d_model"] > tiny_cfg["model"]["d_model"]
    with pytest.raises(ValueError, match="unknown pretraining config 'huge'"):
        load_config("huge")
