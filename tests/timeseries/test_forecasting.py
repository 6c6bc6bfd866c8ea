"""Time-PEFT: backbone, adapters, complexity diagnostics, pretraining, TimePEFTForecaster."""

import copy
import json
import math
import pickle
import warnings

import numpy as np
import pandas as pd
import pytest
import skops.io as sio
import torch
from torch.optim.optimizer import register_optimizer_step_pre_hook

from skfm._backend import threads
from skfm.cli import main
from skfm.timeseries import chaotic
from skfm.timeseries.forecasting import (
    finetuning_advisable,
    multichannel_complexity,
    spectral_entropy,
    transfer_entropy,
)
from skfm.timeseries.forecasting.adapters import (
    ChannelAdapter,
    ForecastNet,
    FrequencyAdapter,
    LoRALinear,
    add_lora,
)
from skfm.timeseries.forecasting.backbone import (
    BackboneConfig,
    TimeSeriesBackbone,
    masked_reconstruction_loss,
)

TINY = BackboneConfig(patch_len=8, max_patches=8, d_model=16, n_heads=2, n_layers=1, ffn_dim=32)
FAST = {"checkpoint": "random:tiny", "context_length": 16, "max_epochs": 2, "batch_size": 16,
        "device": "cpu", "n_origins": 2}
#: The network alone (no base, no guard): for the tests of fine-tuning itself.
NETWORK = {"base": None}


# sktime warns about its own coming change of default at every forecaster's construction.
pytestmark = pytest.mark.filterwarnings("ignore:.*remember_data.*:FutureWarning")


@pytest.fixture(autouse=True, scope="module")
def _one_thread():
    """One torch thread: tiny networks gain nothing from more, and the machine is shared."""
    with threads(1):
        yield


def _forecaster(**params):
    from skfm import TimePEFTForecaster

    return TimePEFTForecaster(**{**FAST, **params})


def _seasonal(n=240, n_channels=1, seed=0):
    """Seasonal series (period 12) with trend and a little noise, integer index."""
    rng = np.random.default_rng(seed)
    t = np.arange(n)
    data = {f"c{i}": np.sin(2 * np.pi * (t + 3 * i) / 12) + 0.02 * t + 0.05 * rng.normal(size=n)
            for i in range(n_channels)}
    frame = pd.DataFrame(data)
    return frame["c0"] if n_channels == 1 else frame


# ---- backbone and adapters ---------------------------------------------------------------


def test_backbone_shapes_and_length_check():
    net = TimeSeriesBackbone(TINY)
    patches = net.patchify(torch.randn(4, 32))
    assert patches.shape == (4, 4, 8)
    assert net.encode(patches).shape == (4, 4, 16)
    assert net.reconstruct(patches, torch.zeros(4, 4, dtype=bool)).shape == (4, 4, 8)
    with pytest.raises(ValueError, match="multiple of patch_len=8"):
        net.patchify(torch.randn(2, 30))
    with pytest.raises(ValueError, match="at most 64"):
        net.patchify(torch.randn(2, 72))


def test_masked_reconstruction_loss_learns():
    """A few steps on one batch lower the masked-patch MSE; masks hit only masked patches."""
    torch.manual_seed(0)
    net = TimeSeriesBackbone(TINY)
    x = torch.sin(torch.linspace(0, 20, 64))[None].repeat(16, 1) + 0.1 * torch.randn(16, 64)
    optim = torch.optim.Adam(net.parameters(), lr=1e-2)
    losses = []
    for _ in range(15):
        loss = masked_reconstruction_loss(net, x, 0.3, torch.Generator().manual_seed(0))
        optim.zero_grad()
        loss.backward()
        optim.step()
        losses.append(loss.item())
    assert losses[-1] < 0.5 * losses[0]


def test_lora_starts_at_the_base_and_trains_only_its_factors():
    net = TimeSeriesBackbone(TINY).requires_grad_(False)
    x = torch.randn(2, 4, 8)
    before = net.encode(x)
    add_lora(net, rank=2, alpha=4.0)
    assert isinstance(net.blocks[0].attn.q, LoRALinear)
    torch.testing.assert_close(net.encode(x), before)
    trainable = sorted(n for n, p in net.named_parameters() if p.requires_grad)
    assert trainable == sorted(f"blocks.0.attn.{m}.lora_{f}" for m in "qkv" for f in "ab")


def test_frequency_adapter_keeps_top_k_bins():
    """With an identity projection: all bins reproduce the input, one bin a single sinusoid."""
    adapter = FrequencyAdapter(d_model=1, top_k=7)
    with torch.no_grad():
        adapter.proj.weight.fill_(1.0)
        adapter.proj.bias.zero_()
    n = torch.arange(12.0)
    e = (2 + torch.cos(2 * torch.pi * n / 4) + 0.1 * torch.cos(2 * torch.pi * n / 3))
    e = e.view(1, 1, 12, 1)
    torch.testing.assert_close(adapter(e), e, atol=1e-5, rtol=1e-5)
    adapter.top_k = 1
    torch.testing.assert_close(adapter(e), torch.full_like(e, 2.0), atol=1e-5, rtol=1e-5)


def test_channel_adapter_forms():
    """Residual form starts as the identity; paper form replaces the embeddings (LayerNorm'd)."""
    e, f = torch.randn(2, 3, 4, 8), torch.randn(2, 3, 4, 8)
    residual = ChannelAdapter(8, n_channels=3, form="residual").eval()
    torch.testing.assert_close(residual(e, f), e)
    paper = ChannelAdapter(8, n_channels=3, form="paper").eval()
    out = paper(e, f)
    assert out.shape == e.shape
    torch.testing.assert_close(out.mean(-1), torch.zeros(2, 3, 4), atol=1e-5, rtol=0)
    assert paper.up_weight.shape == (3, 4, 8)  # one up-projection per channel


@pytest.mark.parametrize("use_adapters", [False, True])
def test_forecast_net_is_scale_and_shift_equivariant(use_adapters):
    """RevIN: forecasting a * x + b gives a * forecast(x) + b."""
    torch.manual_seed(0)
    net = ForecastNet(TimeSeriesBackbone(TINY), 32, 5, 2, adapters=use_adapters).eval()
    x = torch.randn(3, 2, 32)
    with torch.no_grad():
        torch.testing.assert_close(net(7 * x + 3), 7 * net(x) + 3, atol=1e-3, rtol=1e-4)


def test_forecast_net_without_revin_uses_the_series_statistics():
    """revin=False: the network reads (x - loc) / scale with the given per-channel statistics,
    so a window's level reaches it (RevIN removes it): a shifted window's forecast is not the
    forecast shifted."""
    torch.manual_seed(0)
    loc, scale = torch.tensor([5.0, -2.0]), torch.tensor([2.0, 0.5])
    net = ForecastNet(TimeSeriesBackbone(TINY), 32, 5, 2, adapters=True, revin=False,
                      series_loc=loc, series_scale=scale).eval()
    x = torch.randn(3, 2, 32)
    z, _, used_scale = net.normalise(x)
    torch.testing.assert_close(z, (x - loc[:, None]) / scale[:, None])
    torch.testing.assert_close(used_scale.squeeze(-1), scale)
    with torch.no_grad():
        assert (net(x + 1.0) - net(x) - 1.0).abs().max() > 1e-3


# ---- complexity --------------------------------------------------------------------------


def test_spectral_entropy_orders_signals():
    t = np.arange(2048)
    rng = np.random.default_rng(0)
    y = np.c_[np.sin(2 * np.pi * t / 32), np.sin(2 * np.pi * t / 32) + rng.normal(size=2048),
              rng.normal(size=2048)]
    entropy = spectral_entropy(y)
    assert entropy.shape == (3,)
    assert 0 <= entropy[0] < entropy[1] < entropy[2] <= 1
    assert spectral_entropy(y[:, 0], segment_length=None)[0] < 0.1


def test_transfer_entropy_finds_the_direction_of_coupling():
    """A drives B with a lag of 2 (not back); Lorenz variables inform each other, noise does not."""
    rng = np.random.default_rng(0)
    a = rng.normal(size=1000)
    b = 0.5 * np.r_[0.0, 0.0, a[:-2]] + rng.normal(size=1000)
    te = transfer_entropy(np.c_[a, b, rng.normal(size=1000)])
    assert te.shape == (3, 3) and np.all(np.diag(te) == 0) and np.all(te >= 0)
    assert te[0, 1] > 0.05 > 0.01 > max(te[1, 0], te[2, 0], te[2, 1])
    lorenz = transfer_entropy(chaotic.coupled_lorenz(500))
    assert lorenz[:3, :3].sum() / 6 > 10 * lorenz[3:, :3].mean()
    assert multichannel_complexity(rng.normal(size=(500, 3))) < 0.01


def test_finetuning_advisable_reports_its_evidence():
    rng = np.random.default_rng(0)
    simple = np.sin(2 * np.pi * np.arange(1000) / 24)
    report = finetuning_advisable(simple)
    assert not report.advisable
    assert report.multichannel_complexity == 0.0 and len(report.reasons) == 2
    coupled = finetuning_advisable(chaotic.coupled_lorenz(1000))
    assert coupled.advisable and coupled.transfer_entropy.shape == (6, 6)
    assert ">=" in coupled.reasons[1]
    with pytest.raises(ValueError, match="NaN"):
        finetuning_advisable(np.r_[rng.normal(size=50), np.nan])


# ---- forecaster ---------------------------------------------------------------------------


def test_import_skfm_does_not_import_sktime():
    import subprocess
    import sys

    code = "import sys, skfm; assert 'sktime' not in sys.modules; skfm.TimePEFTForecaster"
    subprocess.run([sys.executable, "-c", code], check=True)


def test_univariate_fit_predict_beats_the_last_value():
    y = _seasonal(300)
    train, test = y.iloc[:-12], y.iloc[-12:]
    forecaster = _forecaster(context_length=24, max_epochs=15, learning_rate=3e-3, finetune=True)
    pred = forecaster.fit(train, fh=np.arange(1, 13)).predict()
    assert isinstance(pred, pd.Series) and pred.index.equals(test.index)
    mse = float(((pred - test) ** 2).mean())
    naive = float(((train.iloc[-1] - test) ** 2).mean())
    assert mse < 0.5 * naive
    assert forecaster.horizon_ == 12 and forecaster.n_channels_ == 1
    assert forecaster.validation_loss_ is not None and 1 <= forecaster.n_epochs_ <= 15


def test_multivariate_any_horizon_up_to_the_head():
    y = _seasonal(200, n_channels=3)
    forecaster = _forecaster(horizon=10).fit(y)
    pred = forecaster.predict(fh=[1, 4, 10])
    assert list(pred.columns) == list(y.columns) and list(pred.index) == [200, 203, 209]
    full = forecaster.predict(fh=np.arange(1, 11))
    np.testing.assert_allclose(pred.to_numpy(), full.iloc[[0, 3, 9]].to_numpy())
    with pytest.raises(ValueError, match="beyond the trained horizon 10"):
        forecaster.predict(fh=[11])


def test_forecast_windows_matches_predict():
    """Only the last context_length_ values of a window count (a base of the window alone)."""
    y = _seasonal(200, n_channels=2)
    forecaster = _forecaster(horizon=5, base="seasonal_ridge").fit(y)
    windows = np.stack([y.to_numpy()[:150], y.to_numpy()[-150:]])
    batch = forecaster.forecast_windows(windows)
    assert batch.shape == (2, 5, 2)
    np.testing.assert_allclose(batch[1], forecaster.predict(fh=np.arange(1, 6)).to_numpy(),
                               rtol=1e-5, atol=1e-6)
    with pytest.raises(ValueError, match="windows must have shape"):
        forecaster.forecast_windows(windows[:, :10])


def test_default_horizon_without_fh_in_fit():
    forecaster = _forecaster(adapter="linear_probe").fit(_seasonal(120))
    assert forecaster.horizon_ == 24
    assert forecaster.predict(fh=[24]).shape == (1,)


@pytest.mark.parametrize("adapter", ["timepeft", "lora", "linear_probe", "full"])
def test_adapter_modes_train_what_they_say(adapter):
    y = _seasonal(120, n_channels=2)
    forecaster = _forecaster(adapter=adapter, max_epochs=1).fit(y, fh=[1, 2, 3])
    keys = set(forecaster.trained_state_)
    assert any(k.startswith("head.") for k in keys)
    has_lora = any("lora_" in k for k in keys)
    has_adapters = any(k.startswith(("frequency.", "channel.")) for k in keys)
    frozen_weights = any(k.startswith("backbone.") and "lora_" not in k for k in keys)
    assert (has_lora, has_adapters, frozen_weights) == {
        "timepeft": (True, True, False), "lora": (True, False, False),
        "linear_probe": (False, False, False), "full": (False, False, True)}[adapter]
    assert forecaster.n_trainable_params_ == sum(v.size for v in forecaster.trained_state_.values())
    assert all(isinstance(v, np.ndarray) for v in forecaster.trained_state_.values())


def test_trainable_parameter_counts_are_ordered():
    y = _seasonal(120, n_channels=2)
    counts = {a: _forecaster(adapter=a, max_epochs=1).fit(y, fh=[1]).n_trainable_params_
              for a in ("linear_probe", "lora", "timepeft", "full")}
    assert counts["linear_probe"] < counts["lora"] < counts["timepeft"] < counts["full"]


def test_random_state_reproducible_and_effective():
    y = _seasonal(150)
    a = _forecaster(random_state=1, **NETWORK).fit(y, fh=[1, 2]).predict()
    b = _forecaster(random_state=1, **NETWORK).fit(y, fh=[1, 2]).predict()
    c = _forecaster(random_state=2, **NETWORK).fit(y, fh=[1, 2]).predict()
    pd.testing.assert_series_equal(a, b)
    assert not np.allclose(a, c)


def test_early_stopping_keeps_the_best_epoch():
    """A learning rate far too high makes the validation loss rise: training stops early."""
    forecaster = _forecaster(max_epochs=30, n_iter_no_change=2, learning_rate=0.5, **NETWORK)
    forecaster.fit(_seasonal(300), fh=[1, 2, 3])
    assert forecaster.n_epochs_ < 30


@pytest.mark.parametrize("schedule", ["constant", "step"])
def test_learning_rate_schedule(schedule):
    """The step schedule halves both groups' rates (adapters, backbone) every 5 epochs."""
    seen = []
    hook = register_optimizer_step_pre_hook(
        lambda optimizer, args, kwargs: seen.append(tuple(g["lr"] for g in optimizer.param_groups)))
    try:
        forecaster = _forecaster(adapter="full", max_epochs=11, validation_fraction=0,
                                 learning_rate_schedule=schedule, **NETWORK).fit(
            _seasonal(100), fh=[1, 2])
    finally:
        hook.remove()
    steps = math.ceil(83 / 16)  # 100 - (16 + 2) + 1 windows in batches of 16
    assert forecaster.n_epochs_ == 11 and len(seen) == 11 * steps
    halvings = [epoch // 5 if schedule == "step" else 0 for epoch in range(11)]
    expected = [(1e-3 * 0.5**h, 1e-4 * 0.5**h) for h in halvings for _ in range(steps)]
    np.testing.assert_allclose(seen, expected, rtol=1e-12)


def test_update_moves_the_cutoff_and_uses_new_values():
    y = _seasonal(200)
    forecaster = _forecaster(**NETWORK).fit(y.iloc[:150], fh=[1, 2])
    before = forecaster.predict()
    state = {k: v.copy() for k, v in forecaster.trained_state_.items()}
    forecaster.update(y.iloc[150:170], update_params=False)
    after = forecaster.predict()
    assert list(after.index) == [170, 171] and not np.allclose(before, after)
    assert all(np.array_equal(state[k], v) for k, v in forecaster.trained_state_.items())
    forecaster.update(y.iloc[170:180], update_params=True)
    assert any(not np.array_equal(state[k], v) for k, v in forecaster.trained_state_.items())
    assert list(forecaster.predict().index) == [180, 181]


def test_update_trains_on_every_new_window_whatever_the_stride(monkeypatch):
    from skfm.timeseries.forecasting import parts, training

    y = _seasonal(200)
    forecaster = _forecaster(**NETWORK, window_stride=4).fit(y.iloc[:150], fh=[1, 2])
    strides = []

    def recording(net, values, **kwargs):
        strides.append(kwargs["window_stride"])
        return training.train(net, values, **kwargs)

    monkeypatch.setattr(parts, "train", recording)
    forecaster.update(y.iloc[150:160], update_params=True)
    assert forecaster.window_stride_ == 4 and strides == [1]


def test_complexity_attributes():
    forecaster = _forecaster(max_epochs=1).fit(_seasonal(200, n_channels=2), fh=[1])
    assert 0 < forecaster.temporal_complexity_ < 1
    assert forecaster.complexity_.spectral_entropy.shape == (2,)
    assert forecaster.multichannel_complexity_ == forecaster.complexity_.multichannel_complexity


def test_pickle_deepcopy_and_skops_round_trip_without_torch():
    y = _seasonal(150, n_channels=2)
    forecaster = _forecaster().fit(y, fh=[1, 2, 3])
    expected = forecaster.predict()
    assert not any(isinstance(v, torch.nn.Module | torch.Tensor) for v in vars(forecaster).values())
    for clone in (pickle.loads(pickle.dumps(forecaster)), copy.deepcopy(forecaster)):
        pd.testing.assert_frame_equal(clone.predict(), expected)
    dumped = sio.dumps(forecaster)
    loaded = sio.loads(dumped, trusted=sio.get_untrusted_types(data=dumped))
    pd.testing.assert_frame_equal(loaded.predict(), expected)


@pytest.mark.parametrize(
    "index",
    [pd.RangeIndex(5, 10), pd.Index([3, 5, 7, 9, 11]),
     pd.date_range("2020-01-01", periods=5, freq="h", tz="Europe/Paris", name="when"),
     pd.date_range("2020-01-01", periods=5, freq="D", unit="s"),
     pd.period_range("2020-01", periods=5, freq="M")],
    ids=["range", "int", "datetime-tz", "datetime-s", "period"],
)
def test_plain_state_round_trips_pandas_exactly(index):
    from sktime.forecasting.base import ForecastingHorizon

    from skfm.timeseries.forecasting._plain_state import from_plain, to_plain

    frame = pd.DataFrame({"a": np.arange(5.0), 3: np.arange(5)}, index=index)
    fh = ForecastingHorizon(index[2:], is_relative=False)
    state = from_plain(sio.loads(sio.dumps(to_plain({"y": frame, "fh": [fh], "n": 1})),
                                 trusted=sio.get_untrusted_types(data=sio.dumps(
                                     to_plain({"y": frame, "fh": [fh], "n": 1})))))
    pd.testing.assert_frame_equal(state["y"], frame)
    assert getattr(state["y"].index, "freq", None) == getattr(index, "freq", None)
    pd.testing.assert_index_equal(state["fh"][0].to_pandas(), fh.to_pandas())
    assert state["n"] == 1


@pytest.mark.parametrize(
    ("y", "error", "match"),
    [
        (pd.Series([1.0, np.nan] * 40), ValueError, "missing data"),
        (pd.Series(np.arange(20.0)), ValueError, "needs at least context_length \\+ horizon"),
        (pd.DataFrame({"a": np.arange(80.0), "b": ["x"] * 80}), TypeError,
         "non-numeric \\(categorical, text or boolean\\) column\\(s\\) 'b' \\((object|str)\\)"),
        (pd.DataFrame({"a": np.arange(80.0), "flag": np.arange(80) % 2 == 0}), TypeError,
         "column\\(s\\) 'flag' \\(bool\\)"),
        (pd.Series(np.arange(80.0), index=np.r_[np.arange(40), np.arange(50, 90)]), ValueError,
         "irregular time index"),
        (pd.Series(np.arange(80.0), index=pd.DatetimeIndex(np.r_[
            pd.date_range("2020", periods=40, freq="D"), pd.date_range("2021", periods=40,
                                                                       freq="D")])),
         ValueError, "irregular time index"),
    ],
    ids=["nan", "too-short", "non-numeric", "boolean", "irregular-int", "irregular-datetime"],
)
def test_bad_input_raises_clear_errors(y, error, match):
    with pytest.raises(error, match=match):
        _forecaster(horizon=8).fit(y, fh=[1])


@pytest.mark.parametrize(
    ("params", "match"),
    [({"adapter": "prefix"}, "'adapter' parameter of TimePEFTForecaster must be a str among"),
     ({"context_length": 20}, "multiple of the backbone's patch length 8"),
     ({"context_length": 128}, "at most 64"),
     ({"context_length": 0}, "'context_length' parameter .* an int in the range \\[1, inf\\)"),
     ({"horizon": 721}, "'horizon' parameter .* an int in the range \\[1, 720\\] or None"),
     ({"validation_fraction": 1.0}, "'validation_fraction' parameter .* \\[0.0, 1.0\\)"),
     ({"revin": "yes"}, "'revin' parameter .* an instance of 'bool'"),
     ({"learning_rate_schedule": "cosine"},
      "'learning_rate_schedule' parameter of TimePEFTForecaster must be a str among"),
     ({"lora_alpha": 0.0}, "'lora_alpha' parameter .* in the range \\(0.0, inf\\)"),
     ({"device": 3}, "'device' parameter .* instance of 'str'")],
)
def test_bad_parameters_raise(params, match):
    with pytest.raises(ValueError, match=match):
        _forecaster(**params).fit(_seasonal(1000), fh=[1])


def test_every_parameter_has_a_constraint():
    """The constraints checked in fit (scikit-learn's validate_parameter_constraints) name
    exactly the forecaster's parameters."""
    from skfm import TimePEFTForecaster

    forecaster = TimePEFTForecaster()
    assert set(forecaster._parameter_constraints) == set(forecaster.get_params(deep=False))


def test_revin_false_standardises_with_the_series_given_to_fit():
    """revin=False: fit and predict in units of the fit series' per-channel mean and std, so an
    affine change of the whole series changes the forecasts the same way; it differs from RevIN."""
    y = _seasonal(200, n_channels=2)
    plain = _forecaster(revin=False, **NETWORK).fit(y, fh=[1, 2, 3])
    np.testing.assert_allclose(plain.series_mean_, y.mean().to_numpy())
    np.testing.assert_allclose(plain.series_std_, y.std(ddof=0).to_numpy())
    moved = _forecaster(revin=False, **NETWORK).fit(10 * y + 100, fh=[1, 2, 3])
    np.testing.assert_allclose(moved.predict().to_numpy(), 10 * plain.predict().to_numpy() + 100,
                               rtol=1e-4, atol=1e-3)
    revin = _forecaster(**NETWORK).fit(y, fh=[1, 2, 3])
    assert np.abs(revin.predict().to_numpy() - plain.predict().to_numpy()).max() > 1e-3


def _messages(caught, text):
    return [str(w.message) for w in caught if text in str(w.message)]


def test_exogenous_x_is_ignored_with_one_warning_per_call():
    """sktime's tag says X is not used; fit, predict and update each warn once, naming X,
    where X is given, and X changes nothing."""
    from skfm import TimePEFTForecaster

    assert TimePEFTForecaster.get_class_tag("capability:exogenous") is False
    y = _seasonal(120)
    X = pd.DataFrame({"x": np.random.default_rng(0).normal(size=126)})
    expected = _forecaster(finetune=False).fit(y, fh=[1, 2, 3]).predict()
    forecaster = _forecaster(finetune=False)
    for call in (lambda: forecaster.fit(y, X=X.iloc[:120], fh=[1, 2, 3]),
                 lambda: forecaster.predict(X=X.iloc[120:123]),
                 lambda: forecaster.predict_interval(X=X.iloc[120:123]),
                 lambda: forecaster.update(_seasonal(123).iloc[120:], X=X.iloc[120:123])):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            call()
        assert len(_messages(caught, "ignores exogenous data: the X passed")) == 1
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        forecaster = _forecaster(finetune=False).fit(y, fh=[1, 2, 3])
        forecaster.predict()
    assert not _messages(caught, "exogenous")
    with pytest.warns(UserWarning, match="X passed is not used"):
        with_x = _forecaster(finetune=False).fit(y, X=X.iloc[:120] * 1e3, fh=[1, 2, 3])
    pd.testing.assert_series_equal(with_x.predict(), expected)


def test_no_warning_of_sktimes_remember_data():
    """sktime warns at every forecaster's construction (and reset) of its default
    remember_data changing, and resets the user's filters on datetime indexes; skfm sets it on
    what it builds, so the default forecaster's fit and predict print none of it."""
    from sktime.datasets import load_airline

    from skfm import TimePEFTForecaster
    from skfm.timeseries.forecasting.combination import CANDIDATES, make_candidate

    # one channel, and two (sktime clones the candidates per channel, each clone warning)
    for y in (load_airline()[:48], _seasonal(n=120, n_channels=2)):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            forecaster = TimePEFTForecaster(max_epochs=1).fit(y, fh=[1, 2, 3])
            forecaster.predict_interval()
        assert forecaster.get_config()["remember_data"] is False
        assert not _messages(caught, "remember_data")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        assert not any(make_candidate(name, 12, True).get_config()["remember_data"]
                       for name in CANDIDATES if name != "linear")  # not sktime's


def test_in_sample_fh_is_rejected():
    forecaster = _forecaster(horizon=4).fit(_seasonal(100), fh=[1])
    with pytest.raises(Exception, match="in-sample|insample|future"):
        forecaster.predict(fh=[-1, 0])


def test_grid_search_and_evaluate():
    from sktime.forecasting.model_evaluation import evaluate
    from sktime.forecasting.model_selection import ForecastingGridSearchCV
    from sktime.split import ExpandingWindowSplitter

    y = _seasonal(160)
    cv = ExpandingWindowSplitter(initial_window=120, step_length=20, fh=[1, 2, 3])
    search = ForecastingGridSearchCV(
        _forecaster(max_epochs=1), cv=cv, param_grid={"adapter": ["linear_probe", "lora"]})
    search.fit(y)
    assert search.best_params_["adapter"] in {"linear_probe", "lora"}
    assert search.predict(fh=[1, 2, 3]).shape == (3,)
    results = evaluate(_forecaster(max_epochs=1, adapter="linear_probe"), cv, y)
    assert len(results) == 2 and np.isfinite(results.iloc[:, 0]).all()


def test_transformed_target_pipeline():
    from sktime.forecasting.compose import TransformedTargetForecaster
    from sktime.transformations.series.boxcox import LogTransformer

    y = _seasonal(160) + 5
    pipe = TransformedTargetForecaster([("log", LogTransformer()), ("tp", _forecaster())])
    pred = pipe.fit(y, fh=[1, 2, 3]).predict()
    assert pred.shape == (3,) and np.isfinite(pred).all() and (pred > 0).all()


# ---- base, seasonal period, guard, intervals -------------------------------------------------


def test_auto_period_and_context_length():
    """sp="auto" finds the period 12 of the series; the lookback holds several seasons."""
    forecaster = _forecaster(context_length="auto", max_epochs=1).fit(_seasonal(120), fh=[1, 2])
    assert forecaster.sp_ == 12
    assert forecaster.context_length_ == 56  # max(96, 4 * 12) capped by half of 120 - 2
    forecaster = _forecaster(sp=7, context_length="auto").fit(_seasonal(1000), fh=[1])
    assert (forecaster.sp_, forecaster.context_length_) == (7, 64)  # 96 capped by random:tiny
    with pytest.raises(ValueError, match=r"sp=24 is longer than the context \(16 values\)"):
        _forecaster(sp=24).fit(_seasonal(200), fh=[1])


def test_period_falls_back_to_the_index_frequency():
    """36 monthly values are too few to detect the period 12 (35 first differences: at most
    11 lags); the monthly index gives it, the lookback grows to hold one season, and with no
    rolling origin the forecast repeats the last season. An integer index gives none."""
    from sktime.datasets import load_airline

    from skfm.timeseries.forecasting.base import detect_period, index_period

    y = load_airline()[:36]
    assert detect_period(y.to_numpy()[:, None], 256) == 1
    forecaster = _forecaster(context_length="auto").fit(y, fh=np.arange(1, 13))
    assert (forecaster.sp_, forecaster.context_length_) == (12, 16)
    assert forecaster.combination_weights_ == {"seasonal_naive": 1.0}
    np.testing.assert_allclose(forecaster.predict().to_numpy(), y.to_numpy()[-12:])
    integer = _forecaster(context_length="auto").fit(y.reset_index(drop=True), fh=[1, 2, 3])
    assert integer.sp_ == 1
    for freq, period in [("MS", 12), ("QS", 4), ("W", 52), ("D", 7), ("B", 5), ("h", 24),
                         ("2h", 12), ("30min", 48), ("2MS", 6), ("YS", 1), ("7min", 1)]:
        assert index_period(pd.date_range("2000", periods=4, freq=freq)) == period, freq
    unset = pd.DatetimeIndex(pd.date_range("2000", periods=5, freq="MS").to_list())
    assert unset.freq is None and index_period(unset) == 12  # pandas infers it


def test_untrained_correction_gives_the_base_back():
    """The head starts at zero: with the network forced, an unfitted correction is the base."""
    y = _seasonal(200, n_channels=2)
    forecaster = _forecaster(finetune=False, base="seasonal_ridge").fit(y, fh=[1, 2, 3])
    assert not forecaster.finetuned_ and forecaster.n_epochs_ == 0
    assert forecaster.selected_ in ("seasonal_naive", "base")
    forecaster.selected_ = "base"
    expected = forecaster.predict()
    forecaster.selected_ = "network"
    np.testing.assert_allclose(forecaster.predict(), expected, rtol=1e-4, atol=1e-4)


def test_combination_weights_and_guard_on_rolling_origins():
    """The best candidates at the origins, the fine-tuned network among them, are averaged;
    predict, forecast_windows and the scores agree."""
    from skfm.timeseries.forecasting.combination import (
        CANDIDATES,
        N_COMBINED,
        POOL_RATIO,
    )

    y = _seasonal(300, n_channels=2)
    forecaster = _forecaster(finetune=True, n_origins=4).fit(y, fh=[1, 2, 3])
    scores = forecaster.validation_scores_
    expected = {*CANDIDATES, "combination", "network"} - (
        {"seasonal_naive"} if forecaster.sp_ == 1 else set())
    # the direct linear map is scored where every origin leaves it enough windows
    assert expected - {"linear"} <= set(scores) <= expected
    first, *others = sorted(set(scores) - {"combination"}, key=scores.get)[:N_COMBINED]
    best = [first, *(name for name in others if scores[name] < POOL_RATIO * scores[first])]
    assert forecaster.combination_weights_ == {name: 1 / len(best) for name in sorted(best)}
    assert scores["combination"] <= max(scores[name] for name in best)
    assert forecaster.calibration_residuals_.shape == (4, 2, 3)
    assert forecaster.selected_ == "combination" and forecaster.base_weights_ is None
    windows = np.stack([y.to_numpy()])  # AutoETS's initial level: the window's first value
    np.testing.assert_allclose(forecaster.forecast_windows(windows)[0],
                               forecaster.predict().to_numpy(), atol=0.02)


def test_the_stretch_guard_scores_every_window_with_candidates_fitted_once(monkeypatch):
    """On a long series every candidate is fitted once before the stretch and scored on
    each of its windows, the network on the same windows (an oracle network takes it all)."""
    from skfm.timeseries.forecasting import guard

    values = _seasonal(200, n_channels=2).to_numpy()
    start, horizon = 120, 8
    origins = np.arange(start, 200 - horizon + 1)  # step horizon // 8 = 1
    truths = np.stack([values[o:o + horizon].T for o in origins])  # (O, C, H)
    fits = []
    monkeypatch.setattr(guard, "candidate_forecasts",
                        lambda *args, **kwargs: _counted(fits, *args, **kwargs))
    std = values.std(0)

    def oracle(contexts):
        assert contexts.shape == (len(origins), 2, 16)
        np.testing.assert_allclose(contexts[:, :, -1], values[origins - 1], rtol=1e-6)  # float32
        return truths.copy()

    outcome = guard.guard_on_stretch(values, start, oracle, sp=12, horizon=horizon,
                                     context_length=16, std=std, revin=False,
                                     lookbacks=(16,), n_jobs=1)
    assert len(fits) == 1 and outcome.weights == {"network": 1.0}
    assert outcome.residuals.shape == (len(origins), 2, horizon)
    seasonal = np.stack([values[o - 12 + np.arange(horizon) % 12].T for o in origins])
    np.testing.assert_allclose(outcome.scores["seasonal_naive"], np.mean(
        ((seasonal - truths) / std[:, None]) ** 2), rtol=1e-12)
    assert outcome.scores["network"] == 0.0


def _counted(fits, *args, **kwargs):
    from skfm.timeseries.forecasting.combination import candidate_forecasts

    fits.append(args[0].shape)
    return candidate_forecasts(*args, **kwargs)


def test_a_long_series_is_guarded_on_a_stretch_not_refit_per_origin(monkeypatch):
    """Counted fits: n_origins refits on a short series, one on a long one."""
    from skfm.timeseries.forecasting import guard, parts

    fits = []
    monkeypatch.setattr(guard, "candidate_forecasts",
                        lambda *args, **kwargs: _counted(fits, *args, **kwargs))
    y = _seasonal(300, n_channels=2)
    _forecaster(finetune=False, n_origins=3).fit(y, fh=[1, 2, 3])
    assert len(fits) == 3
    fits.clear()
    monkeypatch.setattr(parts, "LONG_SERIES_WINDOWS", 100)
    long = _forecaster(finetune=False, n_origins=3).fit(y, fh=[1, 2, 3])
    assert fits == [(291, 2)]  # once, on the values before the stretch of 3 x 3
    assert long.calibration_residuals_.shape == (7, 2, 3)  # its windows, step 1


def test_the_network_forecasts_where_the_origins_weigh_it(monkeypatch):
    """The guard hands the network's per-origin MSEs to the weighing with the candidates';
    where it is weighted, predict and forecast_windows add its own forecast in."""
    from skfm.timeseries.forecasting import guard as module

    seen = []

    def network_and_naive(errors):
        seen.append({name: np.asarray(e) for name, e in errors.items()})
        return {"naive": 0.5, "network": 0.5}

    monkeypatch.setattr(module, "combination_weights", network_and_naive)
    y = _seasonal(300)
    forecaster = _forecaster(finetune=True, n_origins=4).fit(y, fh=[1, 2, 3])
    (errors,) = seen
    assert errors["network"].shape == (4,)
    assert errors["network"].mean() == pytest.approx(forecaster.validation_scores_["network"])
    last = y.to_numpy()[-forecaster.context_length_:].astype(np.float32)
    network = forecaster._forecast(last[None, None], "network")[0, 0]  # (H,)
    expected = 0.5 * network + 0.5 * y.to_numpy()[-1]
    np.testing.assert_allclose(forecaster.predict().to_numpy().ravel(), expected, rtol=1e-5)
    windows = np.stack([y.to_numpy()[:, None], y.to_numpy()[:, None] + 1.0])
    np.testing.assert_allclose(forecaster.forecast_windows(windows)[0, :, 0], expected,
                               rtol=1e-5)


def test_finetune_auto_trains_the_network_on_a_long_series(monkeypatch):
    """``finetune="auto"`` fine-tunes where the series gives LONG_SERIES_WINDOWS training
    windows, whatever the complexity diagnostics advise; True and False are as given."""
    from skfm.timeseries.forecasting import parts

    y = _seasonal(300, n_channels=3)
    auto = _forecaster(finetune="auto").fit(y, fh=[1, 2, 3])
    assert not auto.finetuned_ and "network" not in auto.validation_scores_
    monkeypatch.setattr(parts, "LONG_SERIES_WINDOWS", 200)
    long_enough = _forecaster(finetune="auto").fit(y, fh=[1, 2, 3])
    assert long_enough.finetuned_ and "network" in long_enough.validation_scores_
    assert not _forecaster(finetune=False).fit(y, fh=[1, 2, 3]).finetuned_


def test_fine_tuning_loss_is_on_the_standardised_series_not_per_window():
    """The loss de-normalises the forecast and measures it in units of each channel's standard
    deviation, as the official code does: a volatile window's error weighs more than a calm
    one's, unlike an error in each window's own RevIN units."""
    import torch

    from skfm.timeseries.forecasting.network import build_net
    from skfm.timeseries.forecasting.training import forecast_loss

    net = build_net("random:tiny", 0, adapter="linear_probe", adapter_form="residual",
                    context_length=16, horizon=4, n_channels=2, top_k=3, lora_rank=2,
                    lora_alpha=4.0, revin=True, series_loc=np.zeros(2),
                    series_scale=np.array([2.0, 0.5])).eval()  # no dropout
    x = torch.randn(6, 2, 16) * torch.tensor([1.0, 1.0, 1.0, 10.0, 10.0, 10.0])[:, None, None]
    target = torch.randn(6, 2, 4)
    with torch.no_grad():
        expected = ((net(x) - target) / torch.tensor([[2.0], [0.5]])).pow(2).mean()
        assert torch.isclose(forecast_loss(net, x, target), expected)
        out, loc, scale = net.normalised_forecast(x)
        per_window = ((out * scale + loc - target) / scale).pow(2).mean()
        assert not torch.isclose(forecast_loss(net, x, target), per_window, rtol=0.1)


def test_window_stride_auto_caps_the_training_windows(monkeypatch):
    """``window_stride="auto"``: every window up to MAX_TRAINING_WINDOWS, then the smallest step
    that leaves at most that many; an int is used as given."""
    from skfm.timeseries.forecasting import parts

    y = _seasonal(300)
    assert _forecaster(window_stride="auto").fit(y, fh=[1, 2, 3]).window_stride_ == 1
    monkeypatch.setattr(parts, "MAX_TRAINING_WINDOWS", 50)
    capped = _forecaster(window_stride="auto").fit(y, fh=[1, 2, 3])
    n_windows = 300 - capped.context_length_ - 3 + 1
    assert capped.window_stride_ == -(-n_windows // 50)  # ceil
    assert len(range(0, n_windows, capped.window_stride_)) <= 50
    assert _forecaster(window_stride=3).fit(y, fh=[1, 2, 3]).window_stride_ == 3


def test_combination_pools_only_candidates_close_to_the_best():
    """The second candidate joins the best only below three times its MSE at the origins (the
    bound past which an equal mean of two uncorrelated forecasts loses to the better one)."""
    from skfm.timeseries.forecasting.combination import combination_weights

    errors = {"a": np.array([0.1, 0.1]), "b": np.array([0.3, 0.5]), "c": np.array([1.0, 1.0])}
    assert combination_weights(errors) == {"a": 1.0}  # b errs 4 times as much: left out
    errors["b"] = np.array([0.2, 0.38])
    assert combination_weights(errors) == {"a": 0.5, "b": 0.5}
    # an exact best (the seasonal naive of a series that repeats itself) forecasts alone
    assert combination_weights({"a": np.zeros(3), "b": np.full(3, 1e-6)}) == {"a": 1.0}


def test_ridge_candidate_needs_more_training_windows_than_lags():
    """A recursive ridge fitted on fewer windows than lags extrapolates wildly; it is not a
    candidate there (the others still are)."""
    from skfm.timeseries.forecasting.combination import candidate_forecasts, ridge_lags

    values = _seasonal(60).to_numpy()[:, None]
    lags = ridge_lags(12)
    short = candidate_forecasts(values[:2 * lags - 1], ["ridge", "seasonal_naive"], 12, 3)
    assert set(short) == {"seasonal_naive"}
    assert set(candidate_forecasts(values[:2 * lags], ["ridge"], 12, 3)) == {"ridge"}


def test_var_candidate_forecasts_several_channels_only():
    """The vector autoregression forecasts every channel from the lags of all; a single
    channel has none to borrow from, and is left to the univariate candidates."""
    from skfm.timeseries.forecasting.combination import candidate_forecasts

    values = _seasonal(120, n_channels=2).to_numpy()
    forecasts = candidate_forecasts(values, ["var"], 12, 3)
    assert forecasts["var"].shape == (2, 3) and np.isfinite(forecasts["var"]).all()
    assert candidate_forecasts(values[:, :1], ["var"], 12, 3) == {}


def test_var_candidate_needs_more_values_than_twice_its_channels():
    """14 values of 18 channels: no first-order VAR has a full-rank residual covariance, and
    statsmodels' order selection raised a KeyError from inside the forecaster's fit."""
    from skfm.timeseries.forecasting.combination import candidate_forecasts

    rng = np.random.default_rng(0)
    values = np.repeat(rng.normal(size=(14, 2)).cumsum(0), 9, axis=1)  # (14, 18)
    assert set(candidate_forecasts(values, ["var", "naive"], 1, 3)) == {"naive"}
    wide = rng.normal(size=(38, 18)).cumsum(0)
    assert set(candidate_forecasts(wide, ["var"], 1, 3)) == {"var"}


def test_combination_without_rolling_origins_is_the_seasonal_naive():
    """Too short a series for one origin: the seasonal naive forecasts (nothing measured tells
    the candidates apart), its errors give the intervals."""
    y = _seasonal(36)
    forecaster = _forecaster(finetune=False, sp=12).fit(y, fh=[1, 2, 3])
    assert forecaster.validation_scores_ == {} and forecaster.selected_ == "combination"
    assert forecaster.combination_weights_ == {"seasonal_naive": 1.0}
    np.testing.assert_allclose(forecaster.predict().to_numpy().ravel(),
                               y.to_numpy().ravel()[-12:-9])
    assert np.isfinite(forecaster.predict_interval(coverage=0.9).to_numpy()).all()
    assert _forecaster(finetune=False, sp=1).fit(y.iloc[:20], fh=[1, 2, 3]
                                                ).combination_weights_ == {"naive": 1.0}


#: Lengths of the fast subset of the short-series test: the naive fallback (2, 10) and too
#: short for a rolling origin (11 to 13, the transfer entropy of the diagnostics unmeasured
#: up to 12).
SHORT_FAST = (2, 10, 11, 12, 13)


@pytest.mark.parametrize("n_channels", [1, 2])
@pytest.mark.parametrize("n", [pytest.param(n, marks=() if n in SHORT_FAST else pytest.mark.slow)
                               for n in range(2, 21)])
def test_every_short_length_fits_or_is_refused_clearly(n, n_channels):
    """Lengths 2 to 20 with the automatic lookback: shorter than one training window
    (context 8 + horizon 3) forecasts the last value, as sktime's naive, with one warning
    saying so and finite intervals; longer fits, the complexity diagnostics never breaking
    it (up to 12 values the transfer entropy is not measured), and forecasts finite
    values: the naive alone where no rolling origin fits."""
    y = _seasonal(n, n_channels=n_channels)
    forecaster = _forecaster(context_length="auto", n_origins=4)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        forecaster.fit(y, fh=[1, 2, 3])
    fallback = [w for w in caught if "fewer than one training window" in str(w.message)]
    assert len(fallback) == (n < 11)
    assert np.isfinite(forecaster.predict_interval(coverage=0.9).to_numpy()).all()
    if n < 11:
        assert fallback[0].category is UserWarning and "naive (the last value)" in str(
            fallback[0].message)
        assert forecaster.sp_ == 1 and forecaster.context_length_ == n
        last = np.reshape(y.to_numpy(), (n, -1))[-1]
        np.testing.assert_allclose(forecaster.predict().to_numpy().reshape(3, -1),
                                   np.tile(last, (3, 1)), rtol=1e-6)
        return
    assert forecaster.context_length_ == 8
    if n - 3 < forecaster.context_length_ + 3:  # no rolling origin: nothing measured
        assert forecaster.validation_scores_ == {}
        assert forecaster.combination_weights_ == {
            "seasonal_naive" if forecaster.sp_ > 1 else "naive": 1.0}
    else:
        assert "combination" in forecaster.validation_scores_
    unmeasured = n_channels > 1 and n <= 12
    assert np.isnan(forecaster.multichannel_complexity_) == unmeasured
    assert ("not measured" in forecaster.complexity_.reasons[1]) == unmeasured


def test_short_series_falls_back_to_the_seasonal_naive_or_refuses_a_given_lookback():
    """A season and more but less than a training window: the seasonal naive, whose intervals
    widen with the seasons ahead; a context_length the user gave is never shortened."""
    y = _seasonal(14)
    with pytest.warns(UserWarning, match=r"seasonal naive \(the last season, sp=12\)"):
        forecaster = _forecaster(context_length="auto", sp=12).fit(y, fh=np.arange(1, 25))
    np.testing.assert_allclose(forecaster.predict().to_numpy(),
                               np.tile(y.to_numpy()[-12:], 2), rtol=1e-6)
    width = np.diff(forecaster.predict_interval(coverage=0.9).to_numpy(), axis=1).ravel()
    assert np.isfinite(width).all() and width[12] > width[11] > 0
    assert forecaster.forecast_windows(y.to_numpy()[None, :, None]).shape == (1, 24, 1)
    with pytest.raises(ValueError, match=r"needs at least context_length \+ horizon = 16 \+ 3"):
        _forecaster(context_length=16).fit(y, fh=[1, 2, 3])


def test_forecast_windows_fits_each_part_once(monkeypatch):
    """forecast_windows over many windows fits nothing: every candidate of the combination
    and the network were fitted in fit, each once on the whole series."""
    from sktime.forecasting.base import BaseForecaster

    from skfm.timeseries.forecasting import parts

    fits, trainings = [], []
    sktime_fit, train = BaseForecaster.fit, parts.train
    monkeypatch.setattr(BaseForecaster, "fit", lambda self, *a, **k: (
        fits.append(type(self).__name__), sktime_fit(self, *a, **k))[1])
    monkeypatch.setattr(parts, "train", lambda *a, **k: (trainings.append(1), train(*a, **k))[1])
    y = _seasonal(300, n_channels=2)
    forecaster = _forecaster(finetune=True, n_origins=2).fit(y, fh=[1, 2, 3])
    n_fits, n_trainings = len(fits), len(trainings)
    assert n_trainings == 1 and n_fits > 0
    windows = np.stack([y.to_numpy()[s:s + 100] for s in range(0, 200, 10)])  # 20 windows
    forecasts = forecaster.forecast_windows(windows)
    assert forecasts.shape == (20, 3, 2) and np.isfinite(forecasts).all()
    assert (len(fits), len(trainings)) == (n_fits, n_trainings)


@pytest.mark.parametrize("n_channels", [1, 2])
def test_batched_candidates_forecast_their_own_series_as_sktime(n_channels):
    """From the parameters fitted on a series, every candidate forecasts that series as the
    fitted sktime forecaster does; on another window, from that window's values."""
    from skfm.timeseries.forecasting.batched import batched_forecasts, window_parameters
    from skfm.timeseries.forecasting.combination import CANDIDATES, candidate_forecasts

    values = _seasonal(300, n_channels=n_channels).to_numpy().reshape(300, -1) + 3.0
    fitted = {}
    expected = candidate_forecasts(values, CANDIDATES, 12, 5, fitted=fitted, lookbacks=24)
    assert set(expected) == set(CANDIDATES) - ({"var"} if n_channels == 1 else set())
    parameters = {name: window_parameters(name, f, values, 12) for name, f in fitted.items()}
    windows = np.stack([values, np.roll(values, 7, axis=0) + 1.0])
    batched = batched_forecasts(windows, parameters, 12, 5)
    for name, forecast in expected.items():
        np.testing.assert_allclose(batched[name][0], forecast, atol=1e-4, err_msg=name)
        assert not np.allclose(batched[name][1], forecast, atol=1e-2), name


def test_windows_shorter_than_the_lags_of_a_candidate(monkeypatch):
    """A window with fewer values than the ridge's or the VAR's lags gets NaN from that
    candidate (its weight goes to the others), not numpy's broadcasting error."""
    from skfm import TimePEFTForecaster
    from skfm.timeseries.forecasting import guard
    from skfm.timeseries.forecasting.batched import batched_forecasts

    parameters = {
        "ridge": {"coef": np.full((2, 5), 0.2), "intercept": np.zeros(2), "mean": np.zeros(2)},
        "var": {"coefs": np.zeros((6, 2, 2)), "intercept": np.zeros(2), "mean": np.zeros(2),
                "model": None},
        "naive": {},
    }
    out = batched_forecasts(np.ones((3, 4, 2)), parameters, sp=1, horizon=2)
    assert np.isnan(out["ridge"]).all() and np.isnan(out["var"]).all()
    assert out["ridge"].shape == out["var"].shape == out["naive"].shape == (3, 2, 2)
    assert np.isfinite(batched_forecasts(np.ones((3, 6, 2)), parameters, 1, 2)["var"]).all()
    y = pd.Series(np.sin(np.arange(300) / 4))  # sp 25: the ridge reads 50 lags, the context 32
    # the direct linear map, exact on a sine, would be combined instead of the ridge
    monkeypatch.setattr(guard, "CANDIDATES", tuple(c for c in guard.CANDIDATES if c != "linear"))
    forecaster = TimePEFTForecaster(context_length=32, max_epochs=1, window_stride=8).fit(
        y, fh=[1, 2])
    assert forecaster.combination_parameters_["ridge"]["coef"].shape[1] > 32
    windows = np.stack([y.to_numpy()[i:i + 32, None] for i in (0, 50)])
    assert np.isfinite(forecaster.forecast_windows(windows)).all()


def test_guard_keeps_the_best_on_the_held_out_windows():
    y = _seasonal(300, n_channels=2)
    forecaster = _forecaster(finetune=True, base="seasonal_ridge").fit(y, fh=[1, 2, 3])
    scores = forecaster.validation_scores_
    assert set(scores) == {"seasonal_naive", "base", "network"}
    assert forecaster.selected_ == min(scores, key=scores.get)
    assert all(np.isfinite(v) and v > 0 for v in scores.values())
    windows = np.stack([y.to_numpy()[-100:]])
    np.testing.assert_allclose(forecaster.forecast_windows(windows)[0],
                               forecaster.predict().to_numpy(), rtol=1e-5, atol=1e-6)


def test_base_follows_an_affine_change_of_the_series():
    y = _seasonal(200, n_channels=2)
    plain = _forecaster(finetune=False, base="seasonal_ridge").fit(y, fh=[1, 2, 3])
    moved = _forecaster(finetune=False, base="seasonal_ridge").fit(10 * y + 100, fh=[1, 2, 3])
    assert plain.selected_ == moved.selected_
    np.testing.assert_allclose(moved.predict().to_numpy(), 10 * plain.predict().to_numpy() + 100,
                               rtol=1e-6)


def test_exact_season_is_forecast_exactly():
    """A purely periodic series: the seasonal naive (or the base, shrunk to it) is exact."""
    y = pd.Series(np.tile([3.0, 1.0, 4.0, 1.0, 5.0, 9.0, 2.0, 6.0], 30))
    forecaster = _forecaster().fit(y.iloc[:-8], fh=np.arange(1, 9))
    assert forecaster.sp_ == 8
    np.testing.assert_allclose(forecaster.predict(), y.iloc[-8:], atol=1e-2)


def test_update_keeps_the_weights_and_moves_the_cutoff():
    y = _seasonal(200)
    forecaster = _forecaster(finetune=False).fit(y.iloc[:150], fh=[1, 2])
    weights = dict(forecaster.combination_weights_)
    forecaster.update(y.iloc[150:170])
    assert forecaster.combination_weights_ == weights
    pred = forecaster.predict()
    assert list(pred.index) == [170, 171]
    window = y.to_numpy()[:170, None][None]  # the combination is refit on all values seen
    np.testing.assert_allclose(forecaster.forecast_windows(window)[0, :, 0], pred.to_numpy(),
                               atol=0.01)  # up to AutoETS's initial level (the first value)


def test_constant_series_is_forecast_as_the_constant():
    forecaster = _forecaster().fit(pd.Series(np.full(100, 2.5)), fh=[1, 2])
    np.testing.assert_allclose(forecaster.predict(), 2.5, atol=1e-4)
    assert forecaster.sp_ == 1


def test_prediction_intervals_are_calibrated_on_the_held_out_windows():
    """Noise around a season: empirical coverage near the nominal one, nested intervals."""
    rng = np.random.default_rng(0)
    t = np.arange(1200)
    y = pd.Series(np.sin(2 * np.pi * t / 12) + 0.3 * rng.normal(size=len(t)))
    forecaster = _forecaster(n_origins=20).fit(y.iloc[:800], fh=np.arange(1, 7))
    assert forecaster.get_tag("capability:pred_int")
    hits = {0.8: [], 0.95: []}
    for end in range(800, 1194, 6):
        if end > 800:
            forecaster.update(y.iloc[end - 6:end], update_params=False)
        intervals = forecaster.predict_interval(coverage=[0.8, 0.95])
        truth = y.iloc[end:end + 6].to_numpy()
        for c in hits:
            lower, upper = intervals[(0, c, "lower")], intervals[(0, c, "upper")]
            hits[c].append(np.mean((truth >= lower.to_numpy()) & (truth <= upper.to_numpy())))
    assert 0.7 < np.mean(hits[0.8]) < 0.9 and 0.88 < np.mean(hits[0.95]) <= 1.0
    quantiles = forecaster.predict_quantiles(alpha=[0.1, 0.5, 0.9]).to_numpy()
    assert (np.diff(quantiles, axis=1) >= 0).all()


# ---- pretraining --------------------------------------------------------------------------


def test_pretrain_cli_resume_export_and_forecast(tmp_path):
    """``skfm pretrain timeseries-backbone`` trains, resumes, exports; the forecaster loads it."""
    out, target = tmp_path / "run", tmp_path / "tsb.safetensors"
    args = ["pretrain", "timeseries-backbone", "--config", "tiny", "--out", str(out), "--quiet",
            "--device", "cpu", "--threads", "1", "--save-every", "2", "--eval-every", "2"]
    main([*args, "--steps", "2"])
    main([*args, "--steps", "4", "--export", str(target)])
    records = [json.loads(line) for line in (out / "log.jsonl").read_text().splitlines()]
    assert [r["step"] for r in records] == [1, 2, 3, 4]
    assert set(records[-1]["eval_ema"]) == {"mse_16", "mse_32", "mse_64"}
    card = json.loads(target.with_suffix(".json").read_text())
    assert card["model"] == "timeseries-backbone" and card["training"]["steps"] == 4
    assert set(card["held_out_prior_random_init"]) == set(card["held_out_prior"])
    forecaster = _forecaster(checkpoint=str(target), max_epochs=1).fit(_seasonal(100), fh=[1])
    assert np.isfinite(forecaster.predict()).all()


def _tiny_forecast_config(tmp_path, **optim):
    from skfm.pretrain.timeseries_backbone import load_config

    config = load_config("tiny")
    config["optim"].update({"forecast_weight": 0.5, "forecast_lookback": 32,
                            "forecast_horizon": 16, **optim})
    path = tmp_path / "tiny_forecast.json"
    path.write_text(json.dumps(config))
    return path


def test_pretrain_with_forecast_loss_from_an_exported_backbone(tmp_path):
    """``--init`` starts from exported weights; the auxiliary head trains and is not exported."""
    from skfm._weights import load_checkpoint

    base, target = tmp_path / "base.safetensors", tmp_path / "fc.safetensors"
    common = ["pretrain", "timeseries-backbone", "--quiet", "--device", "cpu", "--threads", "1",
              "--steps", "2", "--eval-every", "2"]
    main([*common, "--config", "tiny", "--out", str(tmp_path / "a"), "--export", str(base)])
    main([*common, "--config", str(_tiny_forecast_config(tmp_path)), "--init", str(base),
          "--out", str(tmp_path / "b"), "--export", str(target)])
    records = [json.loads(line) for line in (tmp_path / "b" / "log.jsonl").read_text().splitlines()]
    assert all(r["forecast_loss"] > 0 for r in records)
    card = json.loads(target.with_suffix(".json").read_text())
    assert card["init"]["checkpoint"] == str(base) and card["init"]["steps"] == 2
    assert card["init"]["sha256"] == json.loads(base.with_suffix(".json").read_text())["sha256"]
    assert card["training"]["forecast_weight"] == 0.5
    shipped, started = load_checkpoint(target).state, load_checkpoint(base).state
    assert set(shipped) == set(started)  # the backbone only: no forecasting head
    assert any(not np.array_equal(shipped[k], started[k]) for k in shipped)  # and it trained
    forecaster = _forecaster(checkpoint=str(target), max_epochs=1).fit(_seasonal(100), fh=[1])
    assert np.isfinite(forecaster.predict()).all()


def test_pretrain_with_several_lookbacks_a_family_mixture_and_mixup(tmp_path):
    """Each step draws one of the lookbacks (one head each); the card names the families."""
    from skfm.pretrain import timeseries_backbone

    path = _tiny_forecast_config(tmp_path, forecast_lookback=[16, 32], mixup=0.5)
    config = json.loads(path.read_text())
    config["prior"]["family_weights"] = {"kernel": 1.0, "arma": 1.0, "motif": 1.0}
    path.write_text(json.dumps(config))
    model = timeseries_backbone.build_training_model(config)
    assert sorted(model.heads) == ["16", "32"]
    target = tmp_path / "mix.safetensors"
    main(["pretrain", "timeseries-backbone", "--quiet", "--device", "cpu", "--threads", "1",
          "--steps", "8", "--eval-every", "8", "--config", str(path), "--out",
          str(tmp_path / "run"), "--export", str(target)])
    records = [json.loads(line) for line in (tmp_path / "run" / "log.jsonl").read_text()
               .splitlines()]
    assert {r["lookback"] for r in records} == {16, 32}
    assert all(r["forecast_loss"] > 0 for r in records)
    card = json.loads(target.with_suffix(".json").read_text())
    assert card["prior"]["family_weights"] == config["prior"]["family_weights"]
    assert card["training"]["mixup"] == 0.5


def _exported_tiny(tmp_path):
    target = tmp_path / "tiny.safetensors"
    main(["pretrain", "timeseries-backbone", "--config", "tiny", "--steps", "1", "--quiet",
          "--threads", "1", "--out", str(tmp_path / "tiny_run"), "--export", str(target)])
    return target


def test_pretrain_forecast_settings_and_init_are_checked(tmp_path):
    from skfm.pretrain import timeseries_backbone

    config = json.loads(_tiny_forecast_config(tmp_path, forecast_horizon=48).read_text())
    with pytest.raises(ValueError, match="exceeds series_len=64"):
        timeseries_backbone.build_training_model(config)
    config = json.loads(_tiny_forecast_config(tmp_path, forecast_lookback=20).read_text())
    with pytest.raises(ValueError, match="multiple of patch_len=8"):
        timeseries_backbone.build_training_model(config)
    run = ["--steps", "1", "--out", str(tmp_path / "run"), "--quiet"]
    with pytest.raises(ValueError, match="holds a 'tabswift' model"):
        main(["pretrain", "timeseries-backbone", "--config", "tiny", "--init", "tabswift-v1", *run])
    with pytest.raises(ValueError, match="does not fit the config's architecture"):
        main(["pretrain", "timeseries-backbone", "--config", "small",
              "--init", str(_exported_tiny(tmp_path)), *run])
    with pytest.raises(ValueError, match="holds a 'timeseries-backbone' model"):
        main(["pretrain", "mantis", "--config", "tiny", "--init", "timepeft-backbone-v2", *run])


def test_wrong_checkpoint_kind_is_rejected():
    with pytest.raises(ValueError, match="not a timeseries-backbone"):
        _forecaster(checkpoint="tabswift-v1").fit(_seasonal(100), fh=[1])
