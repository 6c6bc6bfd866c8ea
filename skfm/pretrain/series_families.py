"""More families of synthetic series for Mantis pretraining: ARMA with seasons, motifs, a mixture.

The kernel prior (:func:`skfm.pretrain.timeseries_prior.generate_series`) draws
smooth Gaussian-process compositions. Two families add what it lacks:

- :func:`arma_seasonal`: stationary ARMA noise (stable random AR roots), often
  with a seasonal component and a trend, the texture of sensor and economic
  series;
- :func:`motif_series`: a background with a few short shapes (bumps, plateaus,
  sine bursts, spikes, sawtooth) whose shape, place and size are shared, with
  jitter, by the members of a family, the structure of class-labelled series.

:func:`draw_mixture` draws each series from one family with the prior's
``family_weights``; without that key it is exactly the kernel prior.
"""

from __future__ import annotations

import numpy as np
from scipy.signal import lfilter

from skfm.pretrain.timeseries_prior import (
    PERIODS,
    SyntheticConfig,
    _loguniform,
    _standardise,
    generate_series,
)

#: Family names of :func:`draw_mixture`'s ``family_weights``.
FAMILIES = ("kernel", "arma", "motif")
#: Motif shapes of :func:`motif_series`.
SHAPES = ("bump", "plateau", "sine_burst", "spike", "sawtooth")
_MAX_MOTIFS = 3


def synthetic_config(prior: dict) -> SyntheticConfig:
    """The kernel prior's :class:`SyntheticConfig` of a config's ``prior`` section.

    JSON lists become tuples; ``family_weights`` (read by :func:`draw_mixture`) is left out.

    Examples
    --------
    >>> synthetic_config({"max_kernels": 2, "family_weights": {"kernel": 1.0}}).max_kernels
    2
    """
    return SyntheticConfig(**{k: tuple(v) if isinstance(v, list) else v
                              for k, v in prior.items() if k != "family_weights"})


def prior_card(prior: dict) -> dict:
    """The prior of a checkpoint card: every :class:`SyntheticConfig` field (defaults filled in)
    and the ``family_weights`` where the ``prior`` section gives them.

    Examples
    --------
    >>> card = prior_card({"max_kernels": 2, "family_weights": {"kernel": 1.0}})
    >>> card["max_kernels"], card["family_weights"]
    (2, {'kernel': 1.0})
    """
    extra = {"family_weights": prior["family_weights"]} if "family_weights" in prior else {}
    return {**synthetic_config(prior).to_dict(), **extra}


def _ar_polynomials(order: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """AR polynomials ``1 + a1 B + a2 B^2 + a3 B^3`` with roots inside the unit circle; (n, 4).

    Order 1 or 3 has a real root, order 2 or 3 a complex pair (an oscillation).
    """
    n = len(order)
    real = rng.uniform(-0.95, 0.95, n) * (order % 2 == 1)  # (n,) root 0: no factor
    radius = rng.uniform(0.3, 0.95, n) * (order >= 2)
    angle = rng.uniform(0.05, np.pi - 0.05, n)
    pair = np.stack([np.ones(n), -2 * radius * np.cos(angle), radius**2], 1)  # (n, 3)
    poly = np.zeros((n, 4))
    poly[:, :3] = pair
    poly[:, 1:] -= real[:, None] * pair  # (1 - real B) * pair
    return poly


def arma_seasonal(n: int, length: int, rng: np.random.Generator, p_seasonal: float = 0.5,
                  periods: tuple[int, ...] = PERIODS) -> np.ndarray:
    """Standardised ARMA(p <= 3, q <= 2) series, some with a season and a trend.

    Every series gets random stable AR roots and MA coefficients. With probability
    ``p_seasonal`` it also gets a period (one of ``periods`` with at least three cycles
    in ``length``) as either a seasonal AR factor ``1 - Phi B^period`` or a fixed random
    profile (a few harmonics) repeated over the noise; half of the series get a random
    linear or curved trend.

    Parameters
    ----------
    n : int
        Number of series.
    length : int
        Time points per series.
    rng : numpy.random.Generator
    p_seasonal : float, default=0.5
        Probability of a seasonal component.
    periods : tuple of int, default=timeseries_prior.PERIODS
        Candidate periods, in samples.

    Returns
    -------
    ndarray of shape (n, length), dtype float32

    Examples
    --------
    >>> import numpy as np
    >>> x = arma_seasonal(4, 100, np.random.default_rng(0))
    >>> x.shape, x.dtype, bool(np.allclose(x.std(1), 1, atol=1e-3))
    ((4, 100), dtype('float32'), True)
    """
    fit = np.array([p for p in periods if 3 * p <= length], dtype=int)
    seasonal = (rng.random(n) < p_seasonal) & (len(fit) > 0)  # (n,)
    period = rng.choice(fit, n) if len(fit) else np.zeros(n, dtype=int)
    seasonal_ar = seasonal & (rng.random(n) < 0.5)
    phi = rng.uniform(0.4, 0.9, n)
    ar = _ar_polynomials(rng.integers(0, 4, n), rng)  # (n, 4)
    ma = rng.uniform(-0.8, 0.8, (n, 3)) * (np.arange(3)[None] <= rng.integers(0, 3, n)[:, None])
    ma[:, 0] = 1.0  # (n, 3): 1 + b1 B + b2 B^2
    burn = 64 + 8 * int(period[seasonal_ar].max(initial=0))  # the seasonal AR forgets its start
    noise = rng.standard_normal((n, burn + length))
    out = np.empty((n, length))
    for i in range(n):  # lfilter takes one filter: one C loop per series
        den = np.convolve(ar[i], np.r_[1.0, np.zeros(period[i] - 1), -phi[i]]) if seasonal_ar[i] \
            else ar[i]
        out[i] = lfilter(ma[i], den, noise[i])[burn:]
    out = _standardise(out)
    t = np.arange(length)[None, :]
    harmonic = np.arange(1, 5)[:, None, None]  # (4, 1, 1)
    amp = rng.standard_normal((4, n, 1)) / harmonic ** rng.uniform(0.5, 2.0, (1, n, 1))
    phase = rng.uniform(0, 2 * np.pi, (4, n, 1))
    profile = (amp * np.cos(2 * np.pi * harmonic * t / np.maximum(period, 1)[:, None]
                            + phase)).sum(0)  # (n, length), repeats every period
    profiled = (seasonal & ~seasonal_ar)[:, None]
    out = out + profiled * _loguniform(rng, 0.5, 3.0, (n, 1)) * _standardise(profile)
    u = np.linspace(-0.5, 0.5, length)[None, :]
    trend = rng.normal(0, 2, (n, 1)) * u + rng.normal(0, 4, (n, 1)) * (u**2 - 1 / 12)
    out = out + (rng.random((n, 1)) < 0.5) * trend
    return _standardise(out).astype(np.float32)


def _background(n: int, length: int, rng: np.random.Generator) -> np.ndarray:
    """Standardised backgrounds: a one-node kernel draw or a random walk, plus noise; (n, length)."""
    smooth = generate_series(n, length, config=SyntheticConfig(max_kernels=2, n_nodes=1),
                             random_state=rng)[:, 0]
    walk = rng.standard_normal((n, length)).cumsum(1)
    base = np.where(rng.random((n, 1)) < 0.5, _standardise(smooth), _standardise(walk))
    return _standardise(base + _loguniform(rng, 0.01, 0.5, (n, 1)) * rng.standard_normal((n, length)))


def _motifs(n: int, length: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """The motif layer of :func:`motif_series` and where its motifs sit; two (n, length) arrays.

    Series are split into families of about four; a family shares 1-3 motifs (shape,
    centre, width, amplitude), and each member jitters their centre, width and amplitude.
    """
    family = rng.integers(0, max(1, -(-n // 4)), n)  # (n,) about four members a family
    k = _MAX_MOTIFS
    n_fam = int(family.max()) + 1
    used = np.arange(k)[None] < rng.integers(1, k + 1, n_fam)[:, None]  # (F, K)
    shape = rng.integers(0, len(SHAPES), (n_fam, k))
    centre = rng.uniform(0.1, 0.9, (n_fam, k))
    width = rng.uniform(0.03, 0.25, (n_fam, k))
    amp = rng.choice([-1.0, 1.0], (n_fam, k)) * _loguniform(rng, 0.7, 3.0, (n_fam, k))
    cycles = rng.integers(1, 5, (n_fam, k))
    used, shape, cycles = used[family], shape[family], cycles[family]  # (n, K) each
    centre = np.clip(centre[family] + rng.uniform(-0.1, 0.1, (n, k)), 0.0, 1.0)
    width = np.clip(width[family] * _loguniform(rng, 0.8, 1.25, (n, k)), 0.03, 0.25)
    amp = amp[family] * _loguniform(rng, 0.7, 1.4, (n, k))
    t = np.linspace(0.0, 1.0, length)[None, None, :]
    u = (t - centre[..., None]) / width[..., None]  # (n, K, length), the motif on [-0.5, 0.5]
    inside = (np.abs(u) < 0.5) & used[..., None]
    hann = 0.5 + 0.5 * np.cos(2 * np.pi * u)
    kind = shape[..., None]
    curves = [hann, np.ones_like(u), np.sin(2 * np.pi * cycles[..., None] * u) * hann,
              np.clip(1 - 2 * np.abs(u), 0, None) ** 3]
    motif = np.select([kind == i for i in range(len(curves))], curves, u + 0.5)  # else: sawtooth
    layer = (amp[..., None] * motif * inside).sum(1)
    return layer, inside.any(1)


def motif_series(n: int, length: int, rng: np.random.Generator) -> np.ndarray:
    """Standardised class-like series: a background with 1-3 short motifs.

    The background is a smooth one-node kernel draw or a random walk, at a random
    noise level; the motifs (:data:`SHAPES`, each 3-25 % of the length) are drawn per
    family of about four series and jittered per member (centre by up to 10 % of the
    length, width by up to 25 %, amplitude by up to 40 %), so that the members of a
    family vary as the members of a class do.

    Parameters
    ----------
    n : int
        Number of series.
    length : int
        Time points per series (at least 8).
    rng : numpy.random.Generator

    Returns
    -------
    ndarray of shape (n, length), dtype float32

    Examples
    --------
    >>> import numpy as np
    >>> x = motif_series(6, 128, np.random.default_rng(0))
    >>> x.shape, x.dtype, bool(np.isfinite(x).all())
    ((6, 128), dtype('float32'), True)
    """
    background = _background(n, length, rng) * _loguniform(rng, 0.1, 1.0, (n, 1))
    layer, _ = _motifs(n, length, rng)
    return _standardise(background + layer).astype(np.float32)


def draw_mixture(n: int, length: int, config: dict, rng: np.random.Generator) -> np.ndarray:
    """``n`` series, each drawn from one family with the prior's ``family_weights``.

    Parameters
    ----------
    n : int
        Number of series.
    length : int
        Time points per series (at least 8).
    config : dict
        A ``prior`` section: the :class:`SyntheticConfig` fields and, optionally,
        ``family_weights``, e.g. ``{"kernel": 0.5, "arma": 0.25, "motif": 0.25}``
        (non-negative weights of :data:`FAMILIES`). Without it every series is a
        kernel series: exactly ``generate_series(n, length, config=...,
        random_state=rng)[:, 0]``. The ARMA and motif series get the kernel
        prior's random scale and offset (``scale_range``).
    rng : numpy.random.Generator

    Returns
    -------
    ndarray of shape (n, length), dtype float32

    Examples
    --------
    >>> import numpy as np
    >>> prior = {"max_kernels": 2, "family_weights": {"kernel": 1, "arma": 1, "motif": 1}}
    >>> draw_mixture(5, 64, prior, np.random.default_rng(0)).shape
    (5, 64)
    """
    cfg = synthetic_config(config)
    if "family_weights" not in config:
        return generate_series(n, length, config=cfg, random_state=rng)[:, 0]
    weights = config["family_weights"]
    if not isinstance(weights, dict):
        raise TypeError(f"family_weights must be a dict of family: weight, got {weights!r}.")
    unknown = set(weights) - set(FAMILIES)
    if unknown:
        raise ValueError(f"family_weights has unknown families {sorted(unknown)}; use {FAMILIES}.")
    p = np.array([float(weights.get(name, 0.0)) for name in FAMILIES])
    if (p < 0).any() or not p.sum() > 0:
        raise ValueError(f"family_weights must be non-negative with a positive sum, got {weights}.")
    if length < 8:
        raise ValueError(f"length must be at least 8, got {length}.")
    family = rng.choice(len(FAMILIES), n, p=p / p.sum())  # (n,)
    out = np.empty((n, length), dtype=np.float32)
    draw = {"kernel": lambda m: generate_series(m, length, config=cfg, random_state=rng)[:, 0],
            "arma": lambda m: arma_seasonal(m, length, rng),
            "motif": lambda m: motif_series(m, length, rng)}
    for index, name in enumerate(FAMILIES):
        rows = family == index
        if rows.any():
            out[rows] = draw[name](int(rows.sum()))
    scale = _loguniform(rng, *cfg.scale_range, (n, 1))
    scaled = family[:, None] != FAMILIES.index("kernel")  # kernel series are scaled already
    return np.where(scaled, out * scale + rng.normal(0, 1, (n, 1)) * scale, out).astype(np.float32)
