"""The bar distribution of TabSwiftRegressor: borders, bucketing and summaries."""

import numpy as np
import pytest
import torch

from skfm.tabular.model import buckets

C = 16
BORDERS = buckets.bucket_borders(C)
CENTERS = (BORDERS[:-1] + BORDERS[1:]) / 2
WIDTHS = np.diff(BORDERS)


def _one_hot(k: int) -> np.ndarray:
    probs = np.zeros((1, C))
    probs[0, k] = 1.0
    return probs


def _uniform() -> np.ndarray:
    return np.full((1, C), 1.0 / C)


def _random_probs(n: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).dirichlet(np.full(C, 0.5), size=n)


@pytest.mark.parametrize("n_buckets", [2, 16, 64])
def test_borders_increasing_symmetric_and_bounded(n_buckets):
    """C + 1 strictly increasing borders, symmetric about 0, from -OUTER to OUTER."""
    borders = buckets.bucket_borders(n_buckets)
    assert borders.shape == (n_buckets + 1,)
    assert np.all(np.diff(borders) > 0)
    np.testing.assert_allclose(borders, -borders[::-1], atol=1e-12)
    assert borders[0] == -buckets.OUTER and borders[-1] == buckets.OUTER


def test_inner_buckets_are_narrow_in_the_middle():
    """Normal-quantile borders: widths grow away from 0."""
    half = WIDTHS[C // 2 :]
    assert np.all(np.diff(half[:-1]) > 0)


def test_bucketize_puts_values_in_their_bucket_and_clamps_outliers():
    """borders[k] <= y <= borders[k + 1]; values beyond ±OUTER land in the outer buckets."""
    borders = torch.tensor(BORDERS, dtype=torch.float32)
    assert torch.equal(buckets.bucketize(torch.tensor(CENTERS, dtype=torch.float32), borders),
                       torch.arange(C))
    y = torch.linspace(-5.9, 5.9, 1001)
    idx = buckets.bucketize(y, borders)
    assert idx.min() >= 0 and idx.max() <= C - 1
    assert torch.all(borders[idx] <= y) and torch.all(y <= borders[idx + 1])
    outliers = torch.tensor([-1e6, -7.0, -6.0, 6.0, 7.0, 1e6])
    assert buckets.bucketize(outliers, borders).tolist() == [0, 0, 0, C - 1, C - 1, C - 1]


def test_bucketize_keeps_shape_of_non_contiguous_input():
    """A (B, M) slice of targets keeps its shape."""
    borders = torch.tensor(BORDERS, dtype=torch.float32)
    y = torch.randn(6, 4).t()  # non-contiguous
    idx = buckets.bucketize(y, borders)
    assert idx.shape == (4, 6)
    assert torch.equal(idx, buckets.bucketize(y.contiguous(), borders))


@pytest.mark.parametrize("k", [0, 3, C // 2, C - 1])
def test_one_hot_distribution(k):
    """All mass in bucket k: mean and mode are its centre, quantiles interpolate inside it."""
    probs = _one_hot(k)
    np.testing.assert_allclose(buckets.mean(probs, BORDERS), [CENTERS[k]])
    np.testing.assert_allclose(buckets.mode(probs, BORDERS), [CENTERS[k]])
    qs = [0.1, 0.5, 0.9]
    expected = BORDERS[k] + np.array(qs) * WIDTHS[k]
    np.testing.assert_allclose(buckets.quantiles(probs, BORDERS, qs), [expected], atol=1e-12)
    draws = buckets.sample(probs, BORDERS, 500, np.random.default_rng(0))
    assert draws.shape == (1, 500)
    assert np.all((draws >= BORDERS[k]) & (draws <= BORDERS[k + 1]))


def test_uniform_distribution():
    """Equal bucket masses: mean 0 by symmetry, quantiles interpolate the borders exactly."""
    probs = _uniform()
    np.testing.assert_allclose(buckets.mean(probs, BORDERS), [0.0], atol=1e-12)
    qs = np.array([0.01, 0.1, 0.25, 0.3, 0.5, 0.77, 0.9, 0.99])
    expected = np.interp(qs, np.linspace(0.0, 1.0, C + 1), BORDERS)
    np.testing.assert_allclose(buckets.quantiles(probs, BORDERS, qs), [expected], atol=1e-9)
    np.testing.assert_allclose(buckets.quantiles(probs, BORDERS, [0.5]), [[0.0]], atol=1e-9)
    # the highest density is in a narrowest (central) bucket
    mode = buckets.mode(probs, BORDERS)[0]
    assert np.isclose(WIDTHS[np.argmin(np.abs(CENTERS - mode))], WIDTHS.min())


def test_mode_uses_density_not_mass():
    """A wide outer bucket with more mass loses against a dense narrow one."""
    probs = np.zeros((1, C))
    probs[0, 0], probs[0, C // 2] = 0.6, 0.4
    assert WIDTHS[0] > 2 * WIDTHS[C // 2]
    np.testing.assert_allclose(buckets.mode(probs, BORDERS), [CENTERS[C // 2]])


def test_quantiles_skip_empty_buckets():
    """Mass split between two distant buckets: the median is the border where mass ends."""
    probs = np.zeros((1, C))
    probs[0, 2] = probs[0, 12] = 0.5
    np.testing.assert_allclose(buckets.quantiles(probs, BORDERS, [0.5]), [[BORDERS[3]]])
    np.testing.assert_allclose(
        buckets.quantiles(probs, BORDERS, [0.75]), [[BORDERS[12] + 0.5 * WIDTHS[12]]]
    )


def test_quantiles_monotone_in_q():
    """For any distribution the quantile function is non-decreasing and inside the borders."""
    probs = _random_probs(50)
    qs = np.linspace(0.01, 0.99, 40)
    out = buckets.quantiles(probs, BORDERS, qs)
    assert out.shape == (50, 40)
    assert np.all(np.diff(out, axis=1) >= -1e-12)
    assert np.all((out >= BORDERS[0]) & (out <= BORDERS[-1]))


def test_unnormalised_probabilities_are_normalised_by_quantiles():
    """Quantiles and samples renormalise the CDF (mean does not: it expects probabilities)."""
    probs = _random_probs(3, seed=1)
    np.testing.assert_allclose(
        buckets.quantiles(3 * probs, BORDERS, [0.2, 0.7]),
        buckets.quantiles(probs, BORDERS, [0.2, 0.7]),
        atol=1e-12,
    )


def test_sample_matches_mean_and_bucket_masses():
    """20k draws: the sample mean is close to ``mean`` and bucket frequencies to ``probs``."""
    probs = _random_probs(3, seed=2)
    draws = buckets.sample(probs, BORDERS, 20_000, np.random.default_rng(0))
    assert draws.shape == (3, 20_000)
    assert np.all((draws >= BORDERS[0]) & (draws <= BORDERS[-1]))
    se = draws.std(1) / np.sqrt(draws.shape[1])
    assert np.all(np.abs(draws.mean(1) - buckets.mean(probs, BORDERS)) < 4 * se)
    for row in range(3):
        freq = np.histogram(draws[row], bins=BORDERS)[0] / draws.shape[1]
        np.testing.assert_allclose(freq, probs[row], atol=0.015)


def test_sample_is_reproducible():
    """The same numpy generator seed gives the same draws."""
    probs = _random_probs(2)
    a = buckets.sample(probs, BORDERS, 10, np.random.default_rng(3))
    b = buckets.sample(probs, BORDERS, 10, np.random.default_rng(3))
    np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("chunk", [1, C * 7, C * 5 * 3])
def test_draw_in_row_chunks_equals_one_comparison(monkeypatch, chunk):
    """Chunking the CDF comparison (memory bound) changes no draw, whatever the chunk size."""
    probs = _random_probs(11, seed=4)
    probs[3, :5] = 0.0  # empty buckets: ties in the CDF
    rng = np.random.default_rng(5)
    u, within = rng.random((11, 7)), rng.random((11, 7))
    cdf = np.cumsum(probs, 1)
    cdf /= cdf[:, -1:]
    k = np.minimum((u[:, :, None] > cdf[:, None, :]).sum(-1), C - 1)  # all rows at once
    expected = BORDERS[k] + within * (BORDERS[k + 1] - BORDERS[k])
    monkeypatch.setattr(buckets, "COMPARE_CHUNK", chunk)
    np.testing.assert_array_equal(buckets.draw(probs, BORDERS, u, within), expected)
    assert buckets.draw(probs[:0], BORDERS, u[:0], within[:0]).shape == (0, 7)
