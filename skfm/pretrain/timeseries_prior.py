"""Synthetic time series: Gaussian-process kernel compositions through random causal graphs.

A CauKer-style generator (KernelSynth kernel bank + structural causal mixing),
vectorised over the whole batch with numpy so that pretraining can draw fresh
series at every step:

1. **Root signals.** Every node of every sample gets a random composition of
   1..``max_kernels`` base kernels joined by ``+`` or ``*`` (products of
   independent draws have the product covariance; sums are exact), plus a
   random mean function (zero, linear, exponential, spikes, level shift).
   Stationary kernels (RBF, Matern 1/2 and 3/2, rational quadratic) are drawn
   by spectral filtering of white noise with one batched inverse FFT;
   periodic kernels as a sum of random harmonics; dot-product kernels as
   random lines; white noise directly.
2. **Causal mixing.** Nodes ``0..n_nodes-1`` form a random DAG (each node has
   up to ``max_parents`` parents among the earlier ones). A node with parents
   is ``act(sum_i w_i z_i + b) + noise * root`` for a random activation
   (sigmoid, sin, mod, tanh, softplus, swish, gaussian, leaky ReLU, identity)
   of its standardised parents ``z_i``.
3. **Output.** ``n_channels`` distinct nodes per sample, each given a random
   scale and offset (``scale_range``) so that raw magnitudes vary.

The prior of Mantis pretraining (one channel per sample, :mod:`.mantis`) and of
the Time-PEFT backbone's (:mod:`.timeseries_backbone`); it lives with
pretraining because no estimator needs it. Reusable by any model that needs
unlabeled synthetic series (several channels with causal links).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

#: Base kernel families, in the order of :attr:`SyntheticConfig.kernel_weights`.
KERNELS = ("rbf", "matern12", "matern32", "rational_quadratic", "periodic", "linear", "white")
#: Periods (in samples of a length-512 series) of the KernelSynth bank.
PERIODS = (4, 7, 12, 14, 24, 30, 48, 52, 60, 96, 128, 168, 256, 365)
_ACTIVATIONS = 9
_STATIONARY = ("rbf", "matern12", "matern32", "rational_quadratic")


@dataclass(frozen=True)
class SyntheticConfig:
    """Parameters of :func:`generate_series` (stored in checkpoint cards).

    Attributes
    ----------
    max_kernels : int
        Largest number of base kernels in one composition (at least one).
    kernel_weights : tuple of float
        Sampling weights of the families in :data:`KERNELS`.
    lengthscale_range : tuple of float
        Log-uniform range of stationary lengthscales, as a fraction of the series.
    p_product : float
        Probability that a composition joins the next kernel with ``*`` (else ``+``).
    n_nodes : int
        Nodes of the random causal graph.
    max_parents : int
        Largest number of parents of a node.
    p_edge : float
        Probability of each candidate edge (earlier node -> node).
    noise_scale : float
        Weight of a node's own root signal added to its causal function.
    p_mean : float
        Probability that a root signal gets a non-zero mean function.
    scale_range : tuple of float
        Log-uniform range of the final per-channel scale (the offset is a
        normal draw times that scale).
    """

    max_kernels: int = 4
    kernel_weights: tuple[float, ...] = (3.0, 0.7, 1.5, 1.5, 3.0, 1.5, 0.5)
    lengthscale_range: tuple[float, float] = (0.01, 1.0)
    p_product: float = 0.35
    n_nodes: int = 4
    max_parents: int = 3
    p_edge: float = 0.4
    noise_scale: float = 0.1
    p_mean: float = 0.3
    scale_range: tuple[float, float] = (0.1, 100.0)

    def to_dict(self) -> dict:
        """The config as a JSON-serialisable dict."""
        return {k: list(v) if isinstance(v, tuple) else v for k, v in asdict(self).items()}


def _loguniform(rng: np.random.Generator, low: float, high: float, size) -> np.ndarray:
    return np.exp(rng.uniform(np.log(low), np.log(high), size))


def _stationary(kinds: np.ndarray, length: int, cfg: SyntheticConfig, rng) -> np.ndarray:
    """Unit-variance stationary GP draws, one per entry of ``kinds``; shape (n, length)."""
    n = len(kinds)
    grid = 2 * length  # generate twice as long and crop: no wrap-around correlation
    omega = 2 * np.pi * np.fft.rfftfreq(grid, d=1.0 / length)  # rad per unit series length
    ls = _loguniform(rng, *cfg.lengthscale_range, (n, 1))
    w2 = np.minimum((omega[None, :] * ls) ** 2, 200.0)  # (n, F); clipped: no denormals
    spectrum = np.empty_like(w2)
    for name, nu in (("matern12", 0.5), ("matern32", 1.5)):
        rows = kinds == name
        spectrum[rows] = (2 * nu + w2[rows]) ** -(nu + 0.5)
    rbf = kinds == "rbf"
    spectrum[rbf] = np.exp(-0.5 * w2[rbf])
    rq = kinds == "rational_quadratic"  # scale mixture of RBFs: two random lengthscale factors
    mix = rng.gamma(1.0, 1.0, (int(rq.sum()), 2))
    spectrum[rq] = np.exp(-0.5 * w2[rq, None, :] * mix[:, :, None]).mean(1)
    spectrum /= spectrum.sum(1, keepdims=True)
    coef = np.sqrt(spectrum) * (rng.standard_normal(w2.shape) + 1j * rng.standard_normal(w2.shape))
    series = np.fft.irfft(coef, n=grid, axis=1)[:, :length] * grid / np.sqrt(2.0)
    return series


def _periodic(n: int, length: int, rng) -> np.ndarray:
    """Random periodic signals (a few harmonics of a KernelSynth period); shape (n, length)."""
    base = np.array(PERIODS, dtype=float) * length / 512.0
    period = np.where(
        rng.random(n) < 0.7,
        rng.choice(base, n) * rng.uniform(0.9, 1.1, n),
        _loguniform(rng, 3.0, length, n),
    )
    period = np.maximum(period, 2.5)[:, None, None]
    harmonics = np.arange(1, 7)[None, :, None]
    decay = _loguniform(rng, 0.05, 3.0, (n, 1, 1))
    weight = np.exp(-(harmonics - 1) / decay)
    weight /= weight.sum(1, keepdims=True)
    t = np.arange(length)[None, None, :]
    phase = rng.uniform(0, 2 * np.pi, (n, 6, 1))
    amp = np.sqrt(2 * weight) * np.abs(rng.standard_normal((n, 6, 1)))
    return (amp * np.cos(2 * np.pi * harmonics * t / period + phase)).sum(1)


def _base_kernels(kinds: np.ndarray, length: int, cfg: SyntheticConfig, rng) -> np.ndarray:
    """One draw per entry of ``kinds`` (names from :data:`KERNELS`); shape (n, length)."""
    out = np.empty((len(kinds), length))
    stationary = np.isin(kinds, _STATIONARY)
    if stationary.any():
        out[stationary] = _stationary(kinds[stationary], length, cfg, rng)
    periodic = kinds == "periodic"
    out[periodic] = _periodic(int(periodic.sum()), length, rng)
    linear = kinds == "linear"
    t = np.linspace(0.0, 1.0, length)[None, :]
    n_lin = int(linear.sum())
    out[linear] = rng.normal(0, 1, (n_lin, 1)) * (t - rng.uniform(0, 1, (n_lin, 1))) * 2 + (
        rng.choice([0.0, 1.0], (n_lin, 1)) * rng.normal(0, 1, (n_lin, 1))
    )
    white = kinds == "white"
    out[white] = rng.standard_normal((int(white.sum()), length)) * rng.choice(
        [0.1, 1.0], (int(white.sum()), 1)
    )
    return out


def _compositions(n: int, length: int, cfg: SyntheticConfig, rng) -> np.ndarray:
    """``n`` random kernel compositions ``k1 op k2 op ...``; shape (n, length)."""
    p = np.asarray(cfg.kernel_weights, dtype=float)
    n_used = rng.integers(1, cfg.max_kernels + 1, n)
    used = np.arange(cfg.max_kernels)[None, :] < n_used[:, None]  # (n, K)
    kinds = rng.choice(np.array(KERNELS), size=int(used.sum()), p=p / p.sum())
    draws = np.zeros((n, cfg.max_kernels, length))
    draws[used] = _base_kernels(kinds, length, cfg, rng)  # only the kernels in use
    product = rng.random((n, cfg.max_kernels)) < cfg.p_product
    out = draws[:, 0]
    for k in range(1, cfg.max_kernels):
        combined = np.where(product[:, k, None], out * draws[:, k], out + draws[:, k])
        out = np.where(used[:, k, None], combined, out)
    return out


def _mean_functions(n: int, length: int, rng) -> np.ndarray:
    """Zero, linear, exponential, spike or level-shift mean functions; shape (n, length)."""
    t = np.linspace(0.0, 1.0, length)[None, :]
    kind = rng.integers(0, 5, n)[:, None]
    slope = rng.normal(0, 2, (n, 1))
    rate = rng.uniform(-4, 4, (n, 1))
    expo = (np.exp(rate * t) - 1) / np.maximum(np.abs(np.exp(rate) - 1), 1e-3)
    spikes = (rng.random((n, length)) < 3.0 / length) * rng.normal(0, 4, (n, length))
    shift = (t > rng.uniform(0.1, 0.9, (n, 1))) * rng.normal(0, 2, (n, 1))
    return np.select([kind == 0, kind == 1, kind == 2, kind == 3], [0 * t, slope * t, expo, spikes],
                     shift)


def _activation(x: np.ndarray, which: np.ndarray, rng) -> np.ndarray:
    """Apply activation ``which[i]`` (0..8) to row ``i`` of ``x``."""
    c = rng.uniform(0.5, 2.0, (len(x), 1))
    with np.errstate(over="ignore"):
        candidates = [
            1 / (1 + np.exp(-x)),
            np.sin(x),
            np.mod(x, c),
            np.tanh(x),
            np.logaddexp(0, x),
            x / (1 + np.exp(-x)),
            np.exp(-(x**2)),
            np.where(x > 0, x, 0.1 * x),
            x,
        ]
    return np.select([which[:, None] == i for i in range(_ACTIVATIONS - 1)], candidates[:-1],
                     candidates[-1])


def _standardise(x: np.ndarray) -> np.ndarray:
    return (x - x.mean(-1, keepdims=True)) / (x.std(-1, keepdims=True) + 1e-6)


def generate_series(
    n_series: int,
    length: int,
    n_channels: int = 1,
    config: SyntheticConfig | None = None,
    random_state: int | np.random.Generator | None = None,
) -> np.ndarray:
    """Draw synthetic series from GP kernel compositions mixed through random causal graphs.

    Parameters
    ----------
    n_series : int
        Number of independent samples (one causal graph each).
    length : int
        Time points per series (at least 8).
    n_channels : int, default=1
        Distinct graph nodes returned per sample (at most ``config.n_nodes``);
        channels of one sample are causally related.
    config : SyntheticConfig or None, default=None
        Generator parameters; ``None`` uses the defaults.
    random_state : int, numpy.random.Generator or None, default=None
        Seed or generator; the same seed gives the same series.

    Returns
    -------
    ndarray of shape (n_series, n_channels, length), dtype float32

    Examples
    --------
    >>> from skfm.pretrain.timeseries_prior import generate_series
    >>> X = generate_series(4, 128, n_channels=2, random_state=0)
    >>> X.shape, X.dtype
    ((4, 2, 128), dtype('float32'))
    """
    cfg = config or SyntheticConfig()
    if length < 8:
        raise ValueError(f"length must be at least 8, got {length}.")
    if not 1 <= n_channels <= cfg.n_nodes:
        raise ValueError(f"n_channels must be in [1, n_nodes={cfg.n_nodes}], got {n_channels}.")
    rng = np.random.default_rng(random_state)
    m = cfg.n_nodes
    roots = _compositions(n_series * m, length, cfg, rng)
    has_mean = rng.random((n_series * m, 1)) < cfg.p_mean
    roots = roots + has_mean * _mean_functions(n_series * m, length, rng)
    roots = _standardise(roots).reshape(n_series, m, length)
    nodes = np.empty_like(roots)
    nodes[:, 0] = roots[:, 0]
    for j in range(1, m):
        score = rng.random((n_series, j)) + (rng.random((n_series, j)) > cfg.p_edge)  # >1: no edge
        rank = np.argsort(np.argsort(score, axis=1), axis=1)
        edges = (score < 1) & (rank < cfg.max_parents)
        weights = rng.normal(0, 1, (n_series, j)) * edges
        pre = np.einsum("bj,bjt->bt", weights, nodes[:, :j]) + rng.normal(0, 0.5, (n_series, 1))
        mixed = _activation(pre, rng.integers(0, _ACTIVATIONS, n_series), rng)
        mixed = _standardise(mixed) + cfg.noise_scale * roots[:, j]
        nodes[:, j] = np.where(edges.any(1)[:, None], _standardise(mixed), roots[:, j])
    pick = np.argsort(rng.random((n_series, m)), axis=1)[:, :n_channels]
    out = np.take_along_axis(nodes, pick[:, :, None], axis=1)
    scale = _loguniform(rng, *cfg.scale_range, (n_series, n_channels, 1))
    offset = rng.normal(0, 1, (n_series, n_channels, 1)) * scale
    return (out * scale + offset).astype(np.float32)
