"""Bar distribution: a regression target as probabilities over fixed buckets.

The model predicts, for each test row, a probability for each of ``C``
buckets of the standardised target (piecewise-constant density). Mean,
median, quantiles, mode and samples all come from those probabilities.
Borders are quantiles of a standard normal, so the buckets are narrow where
standardised targets are dense; the two outer buckets catch everything beyond
``±OUTER``.
"""

from __future__ import annotations

import numpy as np
import torch
from scipy.special import softmax
from scipy.stats import norm

OUTER = 6.0
COMPARE_CHUNK = 1 << 22  # booleans (4 MB) compared at a time in draw()


def bucket_borders(n_buckets: int) -> np.ndarray:
    """Borders of ``n_buckets`` buckets on the standardised target, shape (C + 1,)."""
    inner = norm.ppf(np.linspace(0.0, 1.0, n_buckets + 1)[1:-1])
    return np.concatenate([[-OUTER], inner, [OUTER]])


def bucketize(y: torch.Tensor, borders: torch.Tensor) -> torch.Tensor:
    """Bucket index of each standardised target (outliers go to the outer buckets)."""
    idx = torch.bucketize(y.contiguous(), borders[1:-1].contiguous())
    return idx.clamp(0, len(borders) - 2)


def _centers(borders: np.ndarray) -> np.ndarray:
    """Bucket midpoints, halved before the sum so that borders near the float64 limit
    do not overflow."""
    return borders[:-1] / 2 + borders[1:] / 2


def bucket_probabilities(logits: np.ndarray) -> np.ndarray:
    """The members' logits (B, n, C) as averaged bucket probabilities (n, C), float64."""
    probs = softmax(logits, axis=-1).mean(0).astype(np.float64)
    probs /= probs.sum(axis=1, keepdims=True)  # to 1 in float64: a constant y stays exact
    return probs


def rebin(probs: np.ndarray, borders: np.ndarray, new_borders: np.ndarray) -> np.ndarray:
    """Bucket probabilities (n, C) on ``borders`` moved onto ``new_borders`` (C' + 1,),
    the density uniform within each bucket; mass beyond the new outer borders goes to the
    outer buckets.

    Examples
    --------
    >>> rebin(np.array([[0.5, 0.5]]), np.array([0.0, 1.0, 2.0]), np.array([0.0, 0.5, 2.0]))
    array([[0.25, 0.75]])
    """
    if np.array_equal(borders, new_borders):
        return probs
    cdf = np.concatenate([np.zeros((len(probs), 1)), np.cumsum(probs, 1)], axis=1)
    inner = np.interp(new_borders[1:-1], borders, np.arange(len(borders)))  # fractional index
    k = np.minimum(inner.astype(int), probs.shape[1] - 1)
    cdf_new = cdf[:, k] + (inner - k) * probs[:, k]  # (n, C' - 1)
    return np.diff(np.concatenate([cdf[:, :1], cdf_new, cdf[:, -1:]], axis=1), axis=1)


def mean(probs: np.ndarray, borders: np.ndarray) -> np.ndarray:
    """Expected value, shape (n,), from bucket probabilities of shape (n, C)."""
    return probs @ _centers(borders)


def mode(probs: np.ndarray, borders: np.ndarray) -> np.ndarray:
    """Centre of the bucket with the highest density, shape (n,)."""
    widths = np.diff(borders)
    density = probs / (widths / widths.max())  # relative widths: no overflow on tiny scales
    return _centers(borders)[density.argmax(1)]


def quantiles(probs: np.ndarray, borders: np.ndarray, qs) -> np.ndarray:
    """Quantiles by linear interpolation of the CDF, shape (n, len(qs))."""
    cdf = np.concatenate([np.zeros((len(probs), 1)), np.cumsum(probs, 1)], axis=1)
    cdf /= cdf[:, -1:]
    out = np.empty((len(probs), len(qs)))
    for j, q in enumerate(qs):
        k = np.clip((cdf < q).sum(1) - 1, 0, probs.shape[1] - 1)  # bucket holding q
        lo, hi = cdf[np.arange(len(probs)), k], cdf[np.arange(len(probs)), k + 1]
        frac = np.where(hi > lo, (q - lo) / np.maximum(hi - lo, 1e-12), 0.5)
        out[:, j] = borders[k] + frac * (borders[k + 1] - borders[k])
    return out


def sample(
    probs: np.ndarray, borders: np.ndarray, n_samples: int, rng: np.random.Generator
) -> np.ndarray:
    """Draws from the piecewise-uniform density, shape (n, n_samples)."""
    u = rng.random((len(probs), n_samples))
    return draw(probs, borders, u, rng.random((len(probs), n_samples)))


def draw(probs: np.ndarray, borders: np.ndarray, u: np.ndarray, within: np.ndarray) -> np.ndarray:
    """Draws of shape (n, n_samples) from two uniform draws of that shape.

    ``u`` picks the bucket (by inverting the CDF), ``within`` the place in it;
    row ``i`` of the result depends only on row ``i`` of the arguments. Rows
    are drawn in chunks of at most ``COMPARE_CHUNK`` compared elements (rows x
    samples x buckets), so the memory beyond the output stays bounded however
    many samples are asked for.
    """
    cdf = np.cumsum(probs, 1)
    cdf /= cdf[:, -1:]
    n, n_buckets = probs.shape
    out = np.empty(u.shape)  # (n, n_samples)
    step = max(1, COMPARE_CHUNK // max(1, u.shape[1] * n_buckets))
    for start in range(0, n, step):
        rows = slice(start, start + step)
        k = (u[rows, :, None] > cdf[rows, None, :]).sum(-1)  # (rows, n_samples) bucket index
        np.minimum(k, n_buckets - 1, out=k)
        out[rows] = borders[k] + within[rows] * (borders[k + 1] - borders[k])
    return out
