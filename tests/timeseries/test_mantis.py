"""Mantis: model shapes, the classifier's inputs, modes and persistence, the shipped card."""

import pickle

import numpy as np
import pandas as pd
import pytest
import skops.io as sio
import torch
from conftest import CROSS_SETTING_TOLERANCE

from skfm._weights import list_checkpoints, load_checkpoint, load_named_config
from skfm.timeseries import MantisTimeSeriesClassifier
from skfm.timeseries.mantis.loading import DEFAULT_CHECKPOINT
from skfm.timeseries.mantis.model import Mantis, MantisConfig

TINY = "random:tiny"
TINY_CONFIG = load_named_config("mantis", "tiny")["model"]


def tiny(**kwargs):
    """The tiny random model; Mantis alone (``fusion=None``) unless ``fusion`` is given."""
    return MantisTimeSeriesClassifier(checkpoint=TINY, device="cpu", **{"fusion": None, **kwargs})


pytestmark = pytest.mark.usefixtures("one_thread")


@pytest.fixture(scope="module")
def data(sine_panel):
    """Two classes of noisy sines, 3 channels, length 80; train/test (conftest's)."""
    return sine_panel


# ---- the model -----------------------------------------------------------------------


def test_model_output_shapes_from_every_layer():
    cfg = MantisConfig(**TINY_CONFIG)
    model = Mantis(cfg).eval()
    x = torch.randn(5, cfg.seq_len)
    assert model.hidden(x).shape == (5, 1 + cfg.n_patches, cfg.d_model)
    for layer in (1, cfg.n_layers, -1):
        assert model(x, layer=layer, output_token="cls").shape == (5, cfg.d_model)
        assert model(x, layer=layer, output_token="mean").shape == (5, cfg.d_model)
        assert model(x, layer=layer).shape == (5, 2 * cfg.d_model)
    assert model(torch.randn(2, 4 * cfg.seq_len)).shape == (2, 2 * cfg.d_model)  # any multiple
    assert model.project(x).shape == (5, cfg.proj_dim)
    with pytest.raises(ValueError, match="layer must be in"):
        model(x, layer=cfg.n_layers + 1)
    with pytest.raises(ValueError, match="not a multiple of n_patches"):
        model(torch.randn(2, cfg.seq_len + 1))
    with pytest.raises(ValueError, match="output_token"):
        model(x, output_token="max")


def test_model_is_scale_aware_and_shift_robust():
    """Instance normalisation removes the level from the conv path; patch statistics keep it."""
    cfg = MantisConfig(**TINY_CONFIG)
    model = Mantis(cfg).eval()
    x = torch.randn(3, cfg.seq_len)
    with torch.no_grad():
        assert not torch.allclose(model(x), model(100 * x), atol=1e-3)
        assert torch.isfinite(model(1e6 * x)).all() and torch.isfinite(model(0 * x)).all()


def test_token_convolution_matches_conv1d():
    """The unfolded-window convolution gives what Conv1d + transpose would."""
    model = Mantis(MantisConfig(**TINY_CONFIG))
    gen = model.tokens
    x = torch.randn(3, model.config.seq_len)
    reference = gen.norm_x(gen.conv_x(x[:, None]).transpose(1, 2))  # (B, L, D)
    pooled = reference.reshape(3, gen.n_patches, -1, reference.shape[-1]).mean(2)
    torch.testing.assert_close(gen._conv_patches(x, gen.conv_x, gen.norm_x), pooled)


# ---- the classifier: modes ------------------------------------------------------------


def test_frozen_logistic_head_learns_multichannel(data):
    X, y, X_test, y_test = data
    clf = tiny().fit(X, y)
    assert clf.n_channels_in_ == 3 and clf.layer_ == 2
    proba = clf.predict_proba(X_test)
    assert proba.shape == (20, 2)
    np.testing.assert_allclose(proba.sum(1), 1.0, rtol=1e-6)
    assert clf.score(X_test, y_test) >= 0.9
    assert clf.transform(X_test).shape == (20, 3 * 2 * 16)  # channels x combined x d_model
    assert clf.get_feature_names_out()[0] == "mantistimeseriesclassifier0"


@pytest.mark.parametrize(
    ("params", "width"),
    [
        ({"head": "random_forest"}, 96),
        ({"layer": 1, "output_token": "cls"}, 48),
        ({"output_token": "mean"}, 48),
        ({"ensemble_lengths": (32, 64, 128)}, 3 * 96),
        ({"fusion": TINY}, 2 * 96),
        ({"seq_len": 128}, 96),
    ],
)
def test_test_time_options_change_the_features(data, params, width):
    X, y, X_test, y_test = data
    clf = tiny(**params).fit(X, y)
    assert clf.transform(X_test).shape == (20, width)
    assert clf.score(X_test, y_test) >= 0.8


def test_embed_reads_any_layer_and_token(data):
    X, y, X_test, _ = data
    clf = tiny().fit(X, y)
    np.testing.assert_allclose(clf.embed(X_test), clf.transform(X_test))
    assert clf.embed(X_test, layer=1, output_token="cls").shape == (20, 48)
    assert not np.allclose(clf.embed(X_test, layer=1), clf.embed(X_test, layer=2))


def test_series_are_embedded_in_bounded_chunks(data, monkeypatch):
    """transform/embed/predict_proba over chunks of series equal one pass over the whole panel,
    within the cross-setting tolerance: a float32 convolution or matrix product may round a row's last
    bits differently at another batch size, and torch does not promise otherwise."""
    from skfm.timeseries.mantis import embedding

    X, y, X_test, _ = data
    ragged = [series[:, : 60 + i] for i, series in enumerate(X_test)]  # lengths 60..79
    clf = tiny().fit(X, y)
    tuned = tiny(fine_tuning="head", max_epochs=2).fit(X, y)  # the torch head

    def outputs():
        return (clf.transform(X_test), clf.embed(X_test), clf.transform(ragged),
                clf.predict_proba(X_test), tuned.predict_proba(ragged))

    whole = outputs()
    monkeypatch.setattr(embedding, "CHUNK_SERIES", 3)  # 20 series: 7 chunks, the last of 2
    chunked = outputs()
    for a, b in zip(whole, chunked, strict=True):
        np.testing.assert_allclose(b, a, **CROSS_SETTING_TOLERANCE)


def test_validation_keeps_a_float64_panel_uncopied(data):
    """float64 input is validated in place and cast to float32 chunk by chunk: same features."""
    from skfm.timeseries._panel import as_panel

    X, y, X_test, _ = data
    X64 = np.asarray(X_test, dtype=np.float64)
    clf = tiny().fit(X, y)
    assert np.shares_memory(as_panel(clf, X64, reset=False), X64)
    np.testing.assert_array_equal(clf.transform(X64), clf.transform(X64.astype(np.float32)))


@pytest.mark.parametrize("mode", ["head", "full"])
def test_fine_tuning_is_seeded_and_learns(data, mode):
    X, y, X_test, y_test = data
    a = tiny(fine_tuning=mode, max_epochs=8, random_state=0).fit(X, y)
    b = tiny(fine_tuning=mode, max_epochs=8, random_state=0).fit(X, y)
    assert 1 <= a.n_epochs_ <= 8
    np.testing.assert_allclose(a.predict_proba(X_test), b.predict_proba(X_test), rtol=1e-5)
    assert a.score(X_test, y_test) >= 0.8
    if mode == "full":
        assert set(a.backbone_state_) == set(Mantis(MantisConfig(
            **TINY_CONFIG)).state_dict())
        assert not np.allclose(a.embed(X_test), tiny().fit(X, y).embed(X_test))


def test_early_stopping_keeps_the_best_epoch(data):
    X, y, _, _ = data
    clf = tiny(fine_tuning="head", max_epochs=200, n_iter_no_change=2,
               validation_fraction=0.25, learning_rate=0.5).fit(X, y)
    assert clf.n_epochs_ < 200


def test_verbose_fine_tuning_shows_a_progress_bar(data, capsys):
    X, y, _, _ = data
    tiny(fine_tuning="head", max_epochs=2, verbose=True).fit(X, y)
    assert "fine-tune mantis" in capsys.readouterr().err


# ---- the default: fusion with MiniRocket -------------------------------------------------


@pytest.fixture(scope="module")
def spikes():
    """Two classes by the position of a short spike (early / late), length 64: MiniRocket
    separates them, the tiny random Mantis does not (0.7 in cross-validation)."""
    rng = np.random.default_rng(1)
    y = np.tile([0, 1], 30)
    X = 0.3 * rng.normal(size=(60, 1, 64))
    for i, start in enumerate(np.where(y == 1, 10, 40) + rng.integers(-3, 4, 60)):
        X[i, 0, start:start + 3] += 3
    return X[:40], y[:40], X[40:], y[40:]


def test_minirocket_fusion_chosen_by_cross_validation(spikes):
    from skfm.timeseries.mantis.fusion import ALTERNATIVES

    X, y, X_test, y_test = spikes
    clf = MantisTimeSeriesClassifier(checkpoint=TINY, device="cpu", fusion="minirocket").fit(X, y)
    assert clf.fusion == "minirocket" and clf.minirocket_length_ == 64
    assert set(clf.selection_scores_) == {"minirocket", *ALTERNATIVES}
    assert set(clf.selection_margins_) == set(ALTERNATIVES)
    # MiniRocket's head unless another beats its CV accuracy by more than its margin
    gains = {name: clf.selection_scores_[name] - clf.selection_scores_["minirocket"]
             for name in ALTERNATIVES}
    assert clf.selected_ == "minirocket"
    assert all(gains[name] <= clf.selection_margins_[name] for name in ALTERNATIVES)
    mantis_only = tiny().fit(X, y)
    assert clf.score(X_test, y_test) >= mantis_only.score(X_test, y_test)
    assert clf.score(X_test, y_test) == 1.0
    assert clf.transform(X_test).shape == (20, 2 * 16 + clf.fusion_.num_kernels_)
    # random_state=0 seeds MiniRocket as MiniRocketMultivariate(random_state=0)
    from sktime.transformations.panel.rocket import MiniRocketMultivariate

    reference = MiniRocketMultivariate(random_state=0).fit(X.astype(np.float32))
    np.testing.assert_array_equal(clf.transform(X_test)[:, 32:],
                                  reference.transform(X_test.astype(np.float32)))


def test_head_selection_needs_a_clear_gain_and_falls_back_to_minirocket_without_folds():
    """select_head on synthetic blocks. Only the Mantis columns carry the class: Mantis's head.
    No block carries it: MiniRocket's. One series of a class: no cross-validation, MiniRocket's
    head (temperature-scaled on its training predictions)."""
    from sklearn.linear_model import LogisticRegression

    from skfm.timeseries.mantis.fusion import select_head

    rng = np.random.default_rng(0)
    y = np.tile([0, 1, 2], 20)
    signal = y[:, None] + 0.1 * rng.normal(size=(60, 2))
    features = np.hstack([signal, rng.normal(size=(60, 400))])
    head = LogisticRegression(max_iter=500)
    model, choice, scores, margins = select_head(features, 2, y, head, seed=0)
    assert choice == "mantis" and scores["mantis"] == 1.0 and scores["minirocket"] < 0.6
    assert scores["mantis"] - scores["minirocket"] > margins["mantis"] > 0
    assert model.score(features, y) == 1.0
    noise = rng.normal(size=(60, 402))
    _, choice, scores, margins = select_head(noise, 2, y, head, seed=0, n_folds=3)
    assert choice == "minirocket" and max(scores.values()) < 0.6
    y_single = np.r_[0, np.ones(59, int)]
    model, choice, scores, margins = select_head(features, 2, y_single, head, seed=0)
    assert (choice, scores, margins) == ("minirocket", {}, None)
    np.testing.assert_allclose(model.predict_proba(features).sum(1), 1.0)
    ridge = model.calibrated_classifiers_[0].estimator  # the frozen MiniRocket + ridge
    np.testing.assert_array_equal(model.predict(features), ridge.predict(features))
    assert ridge[0].transform(features).shape == (60, 400)  # MiniRocket's columns only


def test_minirocket_fusion_takes_short_ragged_series_and_fine_tuned_heads(data):
    X, y, X_test, y_test = data
    short = [series[:, : 5 + i % 3] for i, series in enumerate(X)]  # lengths 5..7 < 9
    clf = tiny(fusion="minirocket").fit(short, y)
    assert clf.minirocket_length_ == 9 and clf.predict([s[:, :4] for s in X_test]).shape == (20,)
    tuned = tiny(fusion="minirocket", fine_tuning="head", max_epochs=3).fit(X, y)
    assert tuned.selected_ == "fusion" and tuned.head_ is None
    assert tuned.score(X_test, y_test) >= 0.8


# ---- the classifier: input forms -------------------------------------------------------


def test_sktime_containers_give_the_numpy_predictions(data):
    X, y, X_test, _ = data
    clf = tiny().fit(X, y)
    expected = clf.predict_proba(X_test)
    n, c, t = X_test.shape
    multi = pd.DataFrame(
        X_test.transpose(0, 2, 1).reshape(n * t, c),
        index=pd.MultiIndex.from_product([range(n), range(t)]),
    )
    nested = pd.DataFrame([[pd.Series(ch) for ch in series] for series in X_test])
    frames = [pd.DataFrame(series.T) for series in X_test]
    for form in (multi, nested, frames, list(X_test)):
        np.testing.assert_allclose(clf.predict_proba(form), expected, rtol=1e-5, atol=1e-6)


def test_sktime_adapter_takes_multivariate_unequal_length_panels(data):
    """The sktime containers of unequal-length multichannel series give the same predictions
    through the adapter; missing values and ragged channels are refused with a clear error."""
    from skfm.timeseries import MantisSktimeClassifier

    X, y, _, _ = data
    series = [s[:, : 30 + i] for i, s in enumerate(X)]  # 3 channels, lengths 30..69
    multi = pd.concat([
        pd.DataFrame(s.T, index=pd.MultiIndex.from_product([[i], range(s.shape[1])]))
        for i, s in enumerate(series)])
    nested = pd.DataFrame([[pd.Series(ch) for ch in s] for s in series])
    adapter = MantisSktimeClassifier(checkpoint=TINY, device="cpu").fit(multi, y)
    assert adapter.estimator_.minirocket_length_ == 69
    expected = adapter.predict_proba(multi)
    np.testing.assert_allclose(adapter.predict_proba(nested), expected, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(tiny(fusion="minirocket").fit(series, y).predict_proba(series),
                               expected, rtol=1e-5, atol=1e-6)
    with_nan = X.copy()
    with_nan[0, 1, 5] = np.nan
    with pytest.raises(ValueError, match="missing values"):
        adapter.fit(with_nan, y)
    ragged = pd.DataFrame([[pd.Series(s[0]), pd.Series(s[1, :-3])] for s in X])
    with pytest.raises(ValueError, match="channels of different lengths"):
        adapter.fit(ragged, y)


def test_ragged_lengths_are_resized(data):
    X, y, _, _ = data
    ragged = [series[:, : 40 + i] for i, series in enumerate(X)]
    clf = tiny().fit(ragged, y)
    assert clf.predict([s[:, :25] for s in X[:3]]).shape == (3,)
    univariate = [series[0, : 30 + i] for i, series in enumerate(X)]
    assert tiny().fit(univariate, y).predict_proba(univariate).shape == (40, 2)


def test_2d_input_is_univariate_and_checks_its_length(data):
    X, y, X_test, y_test = data
    clf = tiny().fit(X[:, 0], y)
    assert clf.n_features_in_ == 80 and clf.n_channels_in_ == 1
    assert clf.score(X_test[:, 0], y_test) >= 0.9
    with pytest.raises(ValueError, match="X has 60 features"):
        clf.predict(X_test[:, 0, :60])
    assert clf.predict(X_test[:, :1, :60]).shape == (20,)  # 3-D input: any length
    clf.fit(X, y)
    assert not hasattr(clf, "n_features_in_")


@pytest.mark.parametrize(
    ("make_X", "error", "match"),
    [
        (lambda X: np.where(np.arange(80) == 5, np.nan, X), ValueError, "contains NaN in series 0"),
        (lambda X: np.where(np.arange(80) == 5, np.inf, X), ValueError, "contains inf"),
        (lambda X: X[:, :, :1], ValueError, "need at least 2 time points"),
        (lambda X: [s[:, : 1 + i % 3] for i, s in enumerate(X)], ValueError, "need at least 2 time points"),
        (lambda X: X.astype(str).astype(object) + "x", TypeError, "must be numeric"),
        (lambda X: [[s[0], s[1, :-3]] for s in X], ValueError, "channels must have equal lengths"),
        (lambda X: [s[: 1 + i % 2] for i, s in enumerate(X)], ValueError, "same number of channels"),
    ],
    ids=["nan", "inf", "too-short", "too-short-ragged", "non-numeric", "ragged-channels",
         "mixed-channels"],
)
def test_bad_input_gives_clear_errors(data, make_X, error, match):
    X, y, _, _ = data
    with pytest.raises(error, match=match):
        tiny().fit(make_X(X), y)


def test_one_class_wrong_channels_and_bad_params(data):
    X, y, X_test, _ = data
    with pytest.raises(ValueError, match="at least 2 classes, got 1 class"):
        tiny().fit(X, np.zeros(len(X)))
    clf = tiny().fit(X, y)
    with pytest.raises(ValueError, match="X has 2 channel"):
        clf.predict(X_test[:, :2])
    bad = [
        ({"fine_tuning": "lora"},
         "'fine_tuning' parameter of MantisTimeSeriesClassifier must be a str among"),
        ({"seq_len": 100}, "multiples of the model's 8 patches"),
        ({"ensemble_lengths": (64, 0)}, "multiples"),
        ({"layer": 3}, "layer must be in"),
        ({"fine_tuning": "full", "fusion": TINY}, "supports neither"),
        ({"fine_tuning": "full", "fusion": "minirocket"}, "pass fusion=None"),
        ({"max_epochs": 0}, "'max_epochs' parameter .* an int in the range \\[1, inf\\)"),
        ({"validation_fraction": 1.0}, "'validation_fraction' parameter .* \\[0.0, 1.0\\)"),
        ({"fusion": 3}, "'fusion' parameter .* instance of 'str' or None"),
    ]
    for params, match in bad:
        with pytest.raises(ValueError, match=match):
            tiny(**params).fit(X, y)
    with pytest.raises(ValueError, match="Unknown checkpoint"):
        MantisTimeSeriesClassifier(checkpoint="no-such-model").fit(X, y)


def test_parameters_are_validated_the_scikit_learn_way():
    """Every parameter has a constraint (_parameter_constraints), checked at the start of fit
    with scikit-learn's own messages; the sktime adapter checks the same ones under its name."""
    from sklearn.utils._param_validation import InvalidParameterError
    from sklearn.utils.estimator_checks import check_param_validation

    check_param_validation("MantisTimeSeriesClassifier", tiny())
    from skfm.timeseries import MantisSktimeClassifier

    adapter = MantisSktimeClassifier(checkpoint=TINY, device="cpu", head="svm")
    assert set(adapter._parameter_constraints) == set(adapter.get_params(deep=False))
    X = np.random.default_rng(0).normal(size=(6, 1, 16))
    with pytest.raises(InvalidParameterError,
                       match="'head' parameter of MantisSktimeClassifier must be a str among"):
        adapter.fit(X, np.arange(6) % 2)


# ---- persistence ---------------------------------------------------------------------------


@pytest.mark.parametrize("params", [{}, {"fine_tuning": "full", "max_epochs": 2},
                                    {"fusion": "minirocket"}])
def test_pickle_and_skops_round_trip(data, params):
    X, y, X_test, _ = data
    clf = tiny(**params).fit(X, y)
    expected = clf.predict_proba(X_test)
    clf_pickled = pickle.loads(pickle.dumps(clf))
    np.testing.assert_array_equal(clf_pickled.predict_proba(X_test), expected)
    dumped = sio.dumps(clf)
    restored = sio.loads(dumped, trusted=sio.get_untrusted_types(data=dumped))
    np.testing.assert_array_equal(restored.predict_proba(X_test), expected)
    assert "torch" not in str(sio.get_untrusted_types(data=dumped))


def test_shipped_checkpoint_card():
    """The default checkpoint ships with its record, evaluation and gate verdict, and loads."""
    cards = {c["name"]: c for c in list_checkpoints()}
    if DEFAULT_CHECKPOINT not in cards:
        pytest.skip(f"{DEFAULT_CHECKPOINT} is not shipped in this checkout")
    card = cards[DEFAULT_CHECKPOINT]
    assert card["model"] == "mantis" and card["training"]["steps"] > 0
    assert {"command", "evaluation", "prior"} <= set(card)
    evaluation = card["evaluation"]
    beats = evaluation["mean_accuracy"]["mantis"] > evaluation["mean_accuracy"]["random"]
    assert evaluation["release_gate_pretrained_beats_random_init"] == beats
    model = Mantis(MantisConfig(**card["config"]))
    model.load_state_dict({k: torch.from_numpy(np.array(v))
                           for k, v in load_checkpoint(DEFAULT_CHECKPOINT).state.items()})


@pytest.mark.parametrize("n_classes", [2, 3])
def test_linear_probe_head_is_a_logistic_regression_on_normalised_features(n_classes):
    """The probed head's probabilities are those of LogisticRegression fitted on the features
    standardised by the BatchNorm statistics (unbiased variance, eps)."""
    from sklearn.linear_model import LogisticRegression

    from skfm.timeseries.mantis.head import FineTuneNet, linear_probe

    rng = np.random.default_rng(0)
    features = rng.normal(2.0, 3.0, size=(60, 5))
    y = np.arange(60) % n_classes
    features[:, 0] += y  # a signal, so the coefficients are not all tiny
    net = FineTuneNet(None, 5, n_classes, None, None)
    net.head[0].momentum = None  # as in training: statistics are the plain average
    linear_probe(net, torch.as_tensor(features, dtype=torch.float32), y, torch.device("cpu"))
    normalised = (features - features.mean(0)) / np.sqrt(features.var(0, ddof=1) + 1e-5)
    expected = LogisticRegression(max_iter=2000).fit(normalised, y).predict_proba(normalised)
    with torch.no_grad():
        got = torch.softmax(net(torch.as_tensor(features, dtype=torch.float32)), -1).numpy()
    assert not net.training
    np.testing.assert_allclose(got, expected, atol=1e-4)
