"""Complexity diagnostics of a (multichannel) series: is adapter fine-tuning worth it?

The Time-PEFT paper proposes two data-driven measures as proxies for the gain
that fine-tuning brings, used as *diagnostics* (not inside training):

* **temporal complexity** — the normalised spectral entropy of each channel,
  averaged: 0 for a pure sinusoid, 1 for white noise. Distinct, repeating
  patterns (low entropy) are easy for a frozen backbone with a linear head;
  broadband dynamics (high entropy) need more adaptation.
* **multichannel complexity** — the lagged linear-Gaussian transfer entropy
  between channels, averaged over ordered pairs: how much the past of one
  channel tells about the next value of another beyond its own past
  (``0.5 * ln(var(restricted) / var(full))`` of two least-squares fits; Granger
  causality / 2). Channel-independent backbones cannot use that information;
  the channel adapter can.

Series are arrays of shape ``(n_timepoints,)`` or ``(n_timepoints, n_channels)``
(time along the first axis, as in sktime) or pandas objects.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from scipy.signal import welch

#: Defaults of :func:`finetuning_advisable`, set from docs/benchmarks/timepeft.md (its section
#: "Complexity vs Time-PEFT's gain over LoRA" holds the figures): Time-PEFT's gain over LoRA
#: ranked with the multichannel complexity; the sets above this threshold gained or were level,
#: those below lost. The temporal complexity did not rank the gain, so its threshold lies above
#: every dataset there.
TEMPORAL_THRESHOLD = 0.7
MULTICHANNEL_THRESHOLD = 0.05


def _as_2d(y) -> np.ndarray:
    """(T,) or (T, C) numeric data -> standardised float64 array (T, C)."""
    values = np.asarray(y, dtype=float)
    if values.ndim == 1:
        values = values[:, None]
    if values.ndim != 2 or len(values) < 8:
        raise ValueError(
            f"expected a series of shape (n_timepoints >= 8,) or (n_timepoints, n_channels), "
            f"got shape {values.shape}"
        )
    if not np.isfinite(values).all():
        raise ValueError("the series contains NaN or infinite values")
    std = values.std(0)
    return (values - values.mean(0)) / np.where(std > 0, std, 1.0)


def spectral_entropy(y, segment_length: int | None = 256) -> np.ndarray:
    """Normalised spectral entropy of every channel, in [0, 1].

    ``p_k = P_k / sum(P)`` over the non-zero frequencies of the power spectral
    density ``P`` and ``H = -sum(p_k log p_k) / log(K)``.

    Parameters
    ----------
    y : array-like of shape (n_timepoints,) or (n_timepoints, n_channels)
    segment_length : int or None, default=256
        Welch segments of this length (less variance than one periodogram);
        None: the periodogram of the whole series.

    Returns
    -------
    ndarray of shape (n_channels,)

    Examples
    --------
    >>> import numpy as np
    >>> t = np.arange(2048)
    >>> rng = np.random.default_rng(0)
    >>> y = np.c_[np.sin(2 * np.pi * t / 32), rng.normal(size=2048)]
    >>> spectral_entropy(y).round(2)
    array([0.18, 0.99])
    """
    x = _as_2d(y)
    nperseg = len(x) if segment_length is None else min(segment_length, len(x))
    _, psd = welch(x, nperseg=nperseg, axis=0, window="hann" if segment_length else "boxcar")
    psd = psd[1:]  # (K, C) without the zero frequency
    p = psd / np.maximum(psd.sum(0), 1e-300)
    with np.errstate(divide="ignore", invalid="ignore"):
        entropy = -np.where(p > 0, p * np.log(p), 0.0).sum(0)
    return entropy / np.log(len(p))


def temporal_complexity(y, segment_length: int | None = 256) -> float:
    """Mean of :func:`spectral_entropy` over the channels.

    Examples
    --------
    >>> import numpy as np
    >>> round(temporal_complexity(np.sin(np.arange(1024) / 5.0)), 2)
    0.18
    """
    return float(spectral_entropy(y, segment_length).mean())


def _lagged(x: np.ndarray, lags: int) -> np.ndarray:
    """Columns ``x[t-1], ..., x[t-lags]`` for ``t = lags .. T-1``: (T - lags, lags)."""
    return np.column_stack([x[lags - k: len(x) - k] for k in range(1, lags + 1)])


def _residual_variance(design: np.ndarray, target: np.ndarray) -> float:
    design = np.column_stack([np.ones(len(design)), design])
    coef, *_ = np.linalg.lstsq(design, target, rcond=None)
    return float(np.mean((target - design @ coef) ** 2))


def transfer_entropy(y, lags: int = 5) -> np.ndarray:
    """Lagged linear-Gaussian transfer entropy between every ordered pair of channels.

    ``TE[i, j]`` (nats) is the information that the last ``lags`` values of
    channel ``i`` add about the next value of channel ``j`` beyond the last
    ``lags`` values of ``j`` itself: ``0.5 * ln(s_r / s_f)`` with ``s_r``, ``s_f``
    the residual variances of least-squares fits without and with the source.

    Parameters
    ----------
    y : array-like of shape (n_timepoints, n_channels)
    lags : int, default=5

    Returns
    -------
    ndarray of shape (n_channels, n_channels)
        Zero on the diagonal; source on the rows, target on the columns.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> a = rng.normal(size=2000)
    >>> b = np.r_[0.0, a[:-1]] + 0.1 * rng.normal(size=2000)  # b follows a by one step
    >>> te = transfer_entropy(np.c_[a, b])
    >>> bool(te[0, 1] > 1.0 > 0.01 > te[1, 0])
    True
    """
    x = _as_2d(y)
    n_channels = x.shape[1]
    if len(x) <= 2 * lags + 2:
        raise ValueError(f"need more than {2 * lags + 2} time points for lags={lags}")
    pasts = [_lagged(x[:, c], lags) for c in range(n_channels)]  # each (T - lags, lags)
    te = np.zeros((n_channels, n_channels))
    for target in range(n_channels):
        now = x[lags:, target]
        restricted = _residual_variance(pasts[target], now)
        for source in range(n_channels):
            if source != target:
                full = _residual_variance(np.hstack([pasts[target], pasts[source]]), now)
                te[source, target] = 0.5 * np.log(max(restricted, 1e-12) / max(full, 1e-12))
    return np.maximum(te, 0.0)


def multichannel_complexity(y, lags: int = 5) -> float:
    """Mean :func:`transfer_entropy` over ordered pairs of distinct channels (0 if univariate).

    Examples
    --------
    >>> import numpy as np
    >>> multichannel_complexity(np.random.default_rng(0).normal(size=(500, 1)))
    0.0
    """
    te = transfer_entropy(y, lags)
    n = len(te)
    return 0.0 if n < 2 else float(te.sum() / (n * (n - 1)))


@dataclass(frozen=True)
class ComplexityReport:
    """The evidence of :func:`finetuning_advisable`.

    Attributes
    ----------
    advisable : bool
        True if either complexity reaches its threshold.
    temporal_complexity : float
    multichannel_complexity : float
        0 if univariate, NaN where the series is too short to measure it.
    spectral_entropy : ndarray of shape (n_channels,)
    transfer_entropy : ndarray of shape (n_channels, n_channels)
    temporal_threshold, multichannel_threshold : float
    reasons : list of str
        One sentence per measure, comparing it with its threshold.
    """

    advisable: bool
    temporal_complexity: float
    multichannel_complexity: float
    spectral_entropy: np.ndarray = field(repr=False)
    transfer_entropy: np.ndarray = field(repr=False)
    temporal_threshold: float
    multichannel_threshold: float
    reasons: list[str]


def finetuning_advisable(
    y,
    temporal_threshold: float = TEMPORAL_THRESHOLD,
    multichannel_threshold: float = MULTICHANNEL_THRESHOLD,
    lags: int = 5,
) -> ComplexityReport:
    """Whether Time-PEFT's adapters are expected to pay off on ``y``, with the evidence.

    Complex data (high temporal or multichannel complexity) gain most from
    adapter fine-tuning (frequency and channel adapters) over a linear probe or
    LoRA; simple, strongly periodic, channel-independent data gain little.

    Parameters
    ----------
    y : array-like of shape (n_timepoints,) or (n_timepoints, n_channels)
        The training series (time along the first axis).
    temporal_threshold : float, default=0.7
    multichannel_threshold : float, default=0.05
        Defaults set from the datasets of ``docs/benchmarks/timepeft.md``
        (see :data:`TEMPORAL_THRESHOLD`).
    lags : int, default=5
        Lags of the transfer entropy. A series of ``2 * lags + 2`` time points or
        fewer is too short for it: its multichannel complexity (and transfer
        entropy) is NaN, not measured, and only the temporal one can advise
        fine-tuning.

    Returns
    -------
    ComplexityReport

    Examples
    --------
    >>> import numpy as np
    >>> t = np.arange(2000)
    >>> report = finetuning_advisable(np.sin(2 * np.pi * t / 24))
    >>> report.advisable, round(report.temporal_complexity, 2), report.multichannel_complexity
    (False, 0.18, 0.0)
    """
    entropy = spectral_entropy(y)
    temporal = float(entropy.mean())
    n, n_timepoints = len(entropy), len(np.asarray(y))
    if n < 2:
        te, multichannel, note = np.zeros((1, 1)), 0.0, " (univariate)"
    elif n_timepoints > 2 * lags + 2:
        te = transfer_entropy(y, lags)
        multichannel, note = float(te.sum() / (n * (n - 1))), ""
    else:  # too short to measure: not evidence either way
        te, multichannel = np.full((n, n), np.nan), float("nan")
        note = (f" (not measured: {n_timepoints} time points, lags={lags} needs more than "
                f"{2 * lags + 2})")
    reasons = [
        f"temporal complexity {temporal:.3f} {'>=' if temporal >= temporal_threshold else '<'} "
        f"{temporal_threshold}",
        f"multichannel complexity {multichannel:.3f} "
        f"{'>=' if multichannel >= multichannel_threshold else '<'} {multichannel_threshold}"
        + note,
    ]
    return ComplexityReport(
        advisable=temporal >= temporal_threshold or multichannel >= multichannel_threshold,
        temporal_complexity=temporal,
        multichannel_complexity=multichannel,
        spectral_entropy=entropy,
        transfer_entropy=te,
        temporal_threshold=temporal_threshold,
        multichannel_threshold=multichannel_threshold,
        reasons=reasons,
    )
