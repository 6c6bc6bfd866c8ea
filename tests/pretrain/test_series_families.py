"""The extra series families of Mantis pretraining (skfm.pretrain.series_families) and the views'
time warp (skfm.pretrain.mantis.time_warp)."""

import json

import numpy as np
import pytest
import torch

from skfm.pretrain import mantis
from skfm.pretrain.mantis import augment, draw_series, export, load_config
from skfm.pretrain.series_families import (
    _background,
    _motifs,
    arma_seasonal,
    draw_mixture,
    motif_series,
)
from skfm.pretrain.timeseries_prior import (
    SyntheticConfig,
    _loguniform,
    _standardise,
    generate_series,
)
from skfm.timeseries.mantis.model import resize

pytestmark = pytest.mark.usefixtures("one_thread")

MIXED = {"max_kernels": 2, "n_nodes": 2,
         "family_weights": {"kernel": 0.5, "arma": 0.25, "motif": 0.25}}
FAMILIES = {
    "arma": lambda n, length, rng: arma_seasonal(n, length, rng),
    "motif": lambda n, length, rng: motif_series(n, length, rng),
    "mixture": lambda n, length, rng: draw_mixture(n, length, MIXED, rng),
}


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_families_have_shape_dtype_and_are_seeded(family):
    draw = FAMILIES[family]
    x = draw(12, 96, np.random.default_rng(0))
    assert x.shape == (12, 96) and x.dtype == np.float32 and np.isfinite(x).all()
    np.testing.assert_array_equal(x, draw(12, 96, np.random.default_rng(0)))
    assert not np.array_equal(x, draw(12, 96, np.random.default_rng(1)))


@pytest.mark.parametrize("family", ["arma", "motif"])
def test_arma_and_motif_series_are_standardised(family):
    x = FAMILIES[family](20, 200, np.random.default_rng(3))
    np.testing.assert_allclose(x.mean(1), 0, atol=1e-4)
    np.testing.assert_allclose(x.std(1), 1, atol=1e-3)


def test_motif_series_differ_from_their_background_where_the_motifs_sit():
    """Replaying the generator: the series is the background plus a layer that is zero away
    from the motifs and clearly not zero on them."""
    n, length = 10, 150
    x = motif_series(n, length, np.random.default_rng(5))
    rng = np.random.default_rng(5)
    background = _background(n, length, rng) * _loguniform(rng, 0.1, 1.0, (n, 1))
    layer, where = _motifs(n, length, rng)
    np.testing.assert_allclose(x, _standardise(background + layer), atol=1e-5)
    assert where.any(1).all() and not where.all(1).any()
    assert np.all(layer[~where] == 0)
    assert np.abs(layer[where]).mean() > 0.2
    widths = where.sum(1) / length  # 1-3 motifs of 3-25 % of the length each
    assert widths.min() >= 0.02 and widths.max() <= 0.76


def test_seasonal_arma_has_its_autocorrelation_peak_at_the_period():
    def acf(x, lag):
        x = x - x.mean(1, keepdims=True)
        return float(((x[:, :-lag] * x[:, lag:]).sum(1) / (x * x).sum(1)).mean())

    seasonal = arma_seasonal(64, 240, np.random.default_rng(0), p_seasonal=1.0, periods=(12,))
    peak = acf(seasonal, 12)
    assert peak > 0.4
    assert peak > max(acf(seasonal, lag) for lag in (6, 9, 10, 11, 13, 14, 15, 18))
    plain = arma_seasonal(64, 240, np.random.default_rng(0), p_seasonal=0.0, periods=(12,))
    assert acf(plain, 12) < 0.25


def test_without_family_weights_the_draws_are_the_kernel_priors_bit_for_bit():
    prior = {"max_kernels": 2, "n_nodes": 2, "scale_range": [1.0, 10.0]}
    expected = generate_series(9, 70, config=SyntheticConfig(max_kernels=2, n_nodes=2,
                                                             scale_range=(1.0, 10.0)),
                               random_state=np.random.default_rng(4))[:, 0]
    np.testing.assert_array_equal(draw_mixture(9, 70, prior, np.random.default_rng(4)), expected)
    config = load_config("tiny")  # draw_series as it was: generate_series per native length
    rng = np.random.default_rng(0)
    length, (low, high) = config["model"]["seq_len"], config["optim"]["length_range"]
    groups = np.array_split(np.arange(16), config["optim"]["length_groups"])
    native = np.exp(rng.uniform(np.log(low), np.log(high), len(groups))).astype(int)
    old = torch.cat([resize(torch.from_numpy(generate_series(
        len(g), max(int(t), 8), config=SyntheticConfig(**config["prior"]), random_state=rng)[:, 0]),
        length) for g, t in zip(groups, native, strict=True)])
    assert torch.equal(draw_series(16, config, np.random.default_rng(0)), old)


def test_family_weights_pick_the_family_and_the_kernel_priors_scale():
    prior = {"scale_range": [5.0, 50.0], "family_weights": {"arma": 1.0}}
    x = draw_mixture(8, 80, prior, np.random.default_rng(2))
    rng = np.random.default_rng(2)
    rng.choice(3, 8, p=[0.0, 1.0, 0.0])
    np.testing.assert_allclose(_standardise(x), arma_seasonal(8, 80, rng), atol=1e-4)
    assert (x.std(1) > 4.9).all() and (x.std(1) < 50.1).all()


@pytest.mark.parametrize(("weights", "error", "match"), [
    ({"kernel": 1.0, "wavelet": 1.0}, ValueError, "unknown families \\['wavelet'\\]"),
    ({"kernel": -1.0, "arma": 2.0}, ValueError, "non-negative with a positive sum"),
    ({"kernel": 0.0}, ValueError, "non-negative with a positive sum"),
    ([0.5, 0.5], TypeError, "must be a dict"),
])
def test_bad_family_weights_are_refused_by_name(weights, error, match):
    with pytest.raises(error, match=match):
        draw_mixture(4, 32, {"family_weights": weights}, np.random.default_rng(0))


def test_no_warp_leaves_the_views_unchanged():
    x = torch.randn(6, 100).cumsum(1)
    full = {"crop_range": [0.0, 0.5], "amplitude_range": [0.5, 2.0], "jitter": 0.1, "mask": 0.3}
    plain = augment(x, 64, full, torch.Generator().manual_seed(1))
    assert torch.equal(augment(x, 64, {**full, "warp": 0.0}, torch.Generator().manual_seed(1)), plain)
    warped = augment(x, 64, {**full, "warp": 0.3}, torch.Generator().manual_seed(1))
    assert warped.shape == plain.shape and not torch.allclose(warped, plain)


def test_warp_is_monotone_and_keeps_the_length_and_the_ends():
    ramp = torch.linspace(0, 1, 80)[None].repeat(5, 1)
    view = augment(ramp, 64, {"crop_range": [0.0, 0.0], "warp": 0.5}, torch.Generator().manual_seed(0))
    straight = torch.linspace(0, 1, 64)[None]
    assert view.shape == (5, 64) and (view.diff(dim=1) >= 0).all()
    torch.testing.assert_close(view[:, [0, -1]], straight[:, [0, -1]].expand(5, 2))
    assert (view - straight).abs().amax(1).min() > 0.01  # every view is warped


def test_training_with_families_and_warp_and_the_card(tmp_path):
    """Two steps of the tiny recipe with the mixture prior and warped views; the card says so."""
    tiny = load_config("tiny")
    config = {**tiny, "prior": {**tiny["prior"], "family_weights": MIXED["family_weights"]},
              "optim": {**tiny["optim"], "warp": 0.2}}
    state_path = mantis.train(config, steps=2, out=tmp_path / "run", device="cpu", save_every=2,
                              eval_every=2, progress=False, threads=1)
    records = [json.loads(line) for line in (tmp_path / "run" / "log.jsonl").read_text().splitlines()]
    assert [r["step"] for r in records] == [1, 2]
    assert all(np.isfinite(r["loss"]) for r in records)
    card = json.loads(export(state_path, tmp_path / "m.safetensors").with_suffix(".json").read_text())
    assert card["prior"]["family_weights"] == MIXED["family_weights"]
    assert card["prior"]["max_kernels"] == tiny["prior"]["max_kernels"]
    assert card["training"]["warp"] == 0.2


def test_shipped_v4_recipe_is_v3s_with_the_new_prior_and_warp():
    v4, base = load_config("v4"), load_config("base")
    assert v4["model"] == base["model"]
    assert {k: v for k, v in v4["prior"].items() if k != "family_weights"} == base["prior"]
    assert v4["prior"]["family_weights"] == {"kernel": 0.5, "arma": 0.25, "motif": 0.25}
    changed = {k for k in v4["optim"] if v4["optim"][k] != base["optim"].get(k)}
    assert changed == {"lr", "warmup", "warp"} and v4["optim"]["warp"] == 0.2
