"""Synthetic series generator: shapes, determinism, variety, causal links, bad arguments."""

import numpy as np
import pytest

from skfm.pretrain.timeseries_prior import SyntheticConfig, generate_series


def test_shape_dtype_and_finite():
    X = generate_series(32, 96, n_channels=3, random_state=0)
    assert X.shape == (32, 3, 96) and X.dtype == np.float32
    assert np.isfinite(X).all()


def test_same_seed_same_series_other_seed_other_series():
    a = generate_series(8, 64, random_state=1)
    np.testing.assert_array_equal(a, generate_series(8, 64, random_state=1))
    assert not np.allclose(a, generate_series(8, 64, random_state=2))


def test_series_vary_in_scale_smoothness_and_level():
    X = generate_series(200, 128, random_state=0)[:, 0]
    std = X.std(1)
    assert std.max() / std.min() > 100  # random scales over orders of magnitude
    rough = np.abs(np.diff(X, axis=1)).mean(1) / std  # near 0: smooth; near 1+: noisy
    assert rough.min() < 0.1 and rough.max() > 0.8
    assert np.abs(X.mean(1)).max() > 10


def test_channels_of_one_sample_are_causally_linked():
    """With dense graphs and little noise, channels correlate more than independent series."""
    cfg = SyntheticConfig(n_nodes=3, p_edge=1.0, noise_scale=0.0, max_kernels=1)
    X = generate_series(300, 128, n_channels=3, config=cfg, random_state=0)
    z = (X - X.mean(-1, keepdims=True)) / X.std(-1, keepdims=True)
    within = np.abs((z[:, 0] * z[:, 1]).mean(-1)).mean()
    across = np.abs((z[:-1, 0] * z[1:, 1]).mean(-1)).mean()
    assert within > across + 0.1


def test_config_round_trips_through_a_dict():
    cfg = SyntheticConfig(max_kernels=2)
    d = cfg.to_dict()
    assert d["max_kernels"] == 2 and isinstance(d["kernel_weights"], list)
    restored = SyntheticConfig(**{k: tuple(v) if isinstance(v, list) else v for k, v in d.items()})
    assert restored == cfg


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [({"length": 4}, "length must be at least 8"), ({"n_channels": 9}, "n_channels must be in")],
)
def test_bad_arguments(kwargs, match):
    args = {"n_series": 2, "length": 32, **kwargs}
    with pytest.raises(ValueError, match=match):
        generate_series(**args)
