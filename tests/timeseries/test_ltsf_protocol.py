"""benchmarks/timepeft_ltsf.py: the long-horizon protocol's splits, scaling, windows and scores.

On a synthetic frame of the ETT sets' length (no ETT file needed); nothing is fitted.
"""

import argparse
import importlib.util
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"


@pytest.fixture(scope="module")
def ltsf():
    """The script as a module (it imports ``_common`` and ``timepeft`` from its folder)."""
    sys.path.insert(0, str(BENCHMARKS))
    try:
        spec = importlib.util.spec_from_file_location("timepeft_ltsf",
                                                      BENCHMARKS / "timepeft_ltsf.py")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(BENCHMARKS))
    return module


def periodic_trend(n_rows: int, slope: float, n_channels: int = 2) -> np.ndarray:
    """``t % 24 + slope * t + c``: a daily cycle on a linear trend, one offset per channel."""
    t = np.arange(n_rows, dtype=float)[:, None]
    return t % 24 + slope * t + np.arange(n_channels)


def test_splits_are_12_4_4_months_with_the_lookback_before_validation_and_test(ltsf):
    assert ltsf.borders(512) == {"train": (0, 8640), "val": (8128, 11520),
                                 "test": (11008, 14400)}
    assert ltsf.borders(336)["test"] == (11184, 14400)
    assert ltsf.TEST_END - ltsf.VAL_END == ltsf.VAL_END - ltsf.TRAIN_END == 4 * 30 * 24


def test_every_channel_is_standardised_by_the_training_months_only(ltsf):
    values = periodic_trend(ltsf.TEST_END, slope=0.01)
    values[:, 1] *= 3.0
    frame = pd.DataFrame(values, columns=["a", "b"],
                         index=pd.date_range("2016-07-01", periods=len(values), freq="h"))
    scaled = ltsf.standardised(frame).to_numpy()
    train = values[:ltsf.TRAIN_END]
    np.testing.assert_allclose(scaled, (values - train.mean(0)) / train.std(0))
    np.testing.assert_allclose(scaled[:ltsf.TRAIN_END].mean(0), 0.0, atol=1e-12)
    np.testing.assert_allclose(scaled[:ltsf.TRAIN_END].std(0), 1.0)
    assert (scaled[ltsf.VAL_END:].mean(0) > 1.0).all()  # the trend goes on: not refit there
    changed = frame.copy()
    changed.iloc[ltsf.TRAIN_END:] *= 10.0  # later months do not move the scaling
    np.testing.assert_allclose(ltsf.standardised(changed).to_numpy()[:ltsf.TRAIN_END],
                               scaled[:ltsf.TRAIN_END])


@pytest.mark.parametrize("horizon", [96, 720])
def test_every_test_window_is_scored_once_with_its_lookback_inside_the_test_split(ltsf,
                                                                                 horizon):
    data = periodic_trend(ltsf.TEST_END, slope=0.001)
    origins = ltsf.test_origins(horizon)
    assert len(origins) == 2880 - horizon + 1  # test rows - h + 1
    assert (np.diff(origins) == 1).all()
    assert origins[0] == ltsf.VAL_END and origins[-1] + horizon == ltsf.TEST_END
    windows, truth = ltsf.windows_at(data, origins, horizon)
    assert windows.shape == (len(origins), 512, 2) and truth.shape == (len(origins), horizon, 2)
    np.testing.assert_array_equal(windows[0], data[11008:11520])  # the test split's first rows
    np.testing.assert_array_equal(truth[-1], data[ltsf.TEST_END - horizon:])
    np.testing.assert_array_equal(windows[:, -1], data[origins - 1])
    np.testing.assert_array_equal(truth[:, 0], data[origins])


def test_a_quick_run_keeps_windows_evenly_spread_over_the_whole_test_split(ltsf):
    every = ltsf.test_origins(96)
    some = ltsf.test_origins(96, max_windows=50)
    assert len(some) == 50 and set(some) <= set(every)
    assert some[0] == every[0] and some[-1] == every[-1]
    assert np.ptp(np.diff(some)) <= 1
    np.testing.assert_array_equal(ltsf.test_origins(96, max_windows=10_000), every)


@pytest.mark.filterwarnings("ignore::FutureWarning")  # sktime's, in the check
def test_seasonal_naive_and_naive_scores_match_a_hand_computation(ltsf):
    """On ``t % 24 + s t`` the seasonal naive misses by ``24 s`` over the first day ahead and
    ``48 s`` over the second: MSE ``(24 s)^2 (1 + 4) / 2``, MAE ``(24 s)(1 + 2) / 2``. On a pure
    trend ``s t`` the last value misses by ``k s`` at step ``k``."""
    slope, horizon = 0.01, 48
    data = periodic_trend(ltsf.TEST_END, slope)
    origins = ltsf.test_origins(horizon, max_windows=30)
    _, truth = ltsf.windows_at(data, origins, horizon)
    got = ltsf.scores(ltsf.seasonal_naive(data, origins, horizon, ltsf.SEASON), truth)
    assert got["mse"] == pytest.approx((24 * slope) ** 2 * 5 / 2)  # 0.144
    assert got["mae"] == pytest.approx(24 * slope * 3 / 2)  # 0.36

    trend = slope * np.arange(ltsf.TEST_END, dtype=float)[:, None]
    _, truth = ltsf.windows_at(trend, origins, 3)
    got = ltsf.scores(ltsf.seasonal_naive(trend, origins, 3, 1), truth)
    assert got["mse"] == pytest.approx(slope ** 2 * (1 + 4 + 9) / 3)
    assert got["mae"] == pytest.approx(slope * 2)


def test_the_report_sets_skfm_rows_beside_the_published_ones(ltsf, tmp_path):
    rows = [{"dataset": "ETTh1", "horizon": 96, "model": model, "windows": 50,
             "windows_total": 2785, "mse": mse, "mae": 0.4, "fit_s": 1.0, "forecast_s": 0.1,
             "peak_rss_mb": 500.0, "sp": 24, "finetuned": model == "timepeft",
             "selected": "combination",
             "weights": "linear 0.50, network 0.50" if model == "timepeft" else "ridge 1.00",
             "epochs": 3}
            for model, mse in [("naive", 1.3), ("timepeft_no_network", 0.44),
                               ("timepeft", 0.40)]]
    args = argparse.Namespace(out=tmp_path, stem="ltsf", threads=1, notes_file=None)
    text = ltsf.report(pd.DataFrame(rows), args).read_text()
    assert "| ETTh1 h96 | 0.400 | 0.440 | 1.300 | 0.375 | 0.387 | 1.295 |" in text
    assert "DLinear's published figure: 0 of 1 rows" in text
    assert "is +10.0% relative to the default's" in text
    assert "weighted it in the combination (`combination_weights_[\"network\"]`) on 1" in text
    assert "h96: 50 of 2,785 per dataset; **a subset" in text
    assert (tmp_path / "ltsf.csv").read_text().startswith("# Command: `python ")


def test_a_missing_data_folder_is_named(ltsf, tmp_path):
    with pytest.raises(ValueError, match=r"ETTh1\.csv not found: give the folder"):
        ltsf.load_ett(tmp_path, "ETTh1")
