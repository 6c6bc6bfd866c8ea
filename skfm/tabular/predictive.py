"""The predictive distribution of TabSwiftRegressor: its scale, its summaries, its moves.

The model predicts probabilities over buckets of the target standardised by
:func:`standardisation` (:mod:`skfm.tabular.model.buckets`). ``predict`` reduces them,
batch by batch (:func:`per_batch`), to one of :data:`OUTPUT_TYPES` (the levels of
``"quantiles"`` checked by :func:`quantile_levels`; ``"full"``: all of them at once,
:func:`full_output`), and where the guard or the blend chose a partner
(:mod:`skfm.tabular.guard`, :mod:`skfm.tabular.blend`) every value of the distribution is
moved as :func:`moved_by_partners` says.
"""

from __future__ import annotations

import numbers

import numpy as np

from skfm.tabular.model import buckets

#: What ``TabSwiftRegressor.predict`` returns (``output_type``).
OUTPUT_TYPES = ("mean", "median", "mode", "quantiles", "full")
#: The levels of ``output_type="quantiles"`` when none are given.
DEFAULT_QUANTILES = (0.1, 0.5, 0.9)


def standardisation(y: np.ndarray) -> tuple[float, float]:
    """Mean and standard deviation of ``y``, the buckets' scale, on any float64 magnitude.

    A ``y`` constant to 12 digits gets a scale of ``1e-12 * max|y|`` (at least the
    smallest normal float), so that its constant is predicted to 11 digits. Raises
    ``ValueError`` if the outer bucket borders, mean +- ``buckets.OUTER`` standard
    deviations, do not fit in float64, so that every prediction is finite.

    Examples
    --------
    >>> import numpy as np
    >>> standardisation(np.array([1.0, 3.0]))
    (2.0, 1.0)
    >>> standardisation(np.array([5.0, 5.0]))[1]
    5e-12
    """
    magnitude = float(np.abs(y).max())
    with np.errstate(over="ignore", invalid="ignore"):
        mean, scale = float(y.mean()), float(y.std())
    if not np.isfinite([mean, scale]).all():  # the sum or the squares overflowed
        unit = y / magnitude
        mean, scale = float(unit.mean()) * magnitude, float(unit.std()) * magnitude
    if scale <= 1e-12 * magnitude:
        scale = max(1e-12 * magnitude, np.finfo(np.float64).tiny)
    with np.errstate(over="ignore"):
        outer = mean + np.array([-buckets.OUTER, buckets.OUTER]) * scale
    if not np.isfinite(outer).all():
        raise ValueError(
            f"y has values up to {np.abs(y).max():.3g} in absolute value, too large for "
            f"float64 predictions (mean +- {buckets.OUTER:g} standard deviations); rescale y "
            "(e.g. divide it by a constant)"
        )
    return mean, scale


def quantile_levels(output_type: str, quantiles) -> list[float] | None:
    """The levels ``predict`` computes for ``output_type``: None for the mean and the mode
    (``"full"`` computes the median and these levels).

    Raises ``ValueError`` naming ``quantiles`` unless it is a non-empty list of levels in
    (0, 1) (None: :data:`DEFAULT_QUANTILES`).

    Examples
    --------
    >>> quantile_levels("median", None), quantile_levels("quantiles", None)
    ([0.5], [0.1, 0.5, 0.9])
    >>> quantile_levels("quantiles", [0.05, 1.0])
    Traceback (most recent call last):
    ...
    ValueError: quantiles must be a non-empty list of levels in (0, 1), got [0.05, 1.0]
    """
    if output_type == "median":
        return [0.5]
    if output_type not in ("quantiles", "full"):
        return None
    qs = list(DEFAULT_QUANTILES) if quantiles is None else list(quantiles)
    if not qs or any(not isinstance(q, numbers.Real) or not 0 < q < 1 for q in qs):
        raise ValueError(
            f"quantiles must be a non-empty list of levels in (0, 1), got {quantiles!r}"
        )
    return qs


def moved_by_partners(values, mean, partner, interval_scale: float, blend_weight: float):
    """``values`` of predictive distributions of means ``mean`` (same shape, or broadcast)
    moved as the guard or the blend moves the distributions.

    The distance to the mean is scaled by ``interval_scale``, the location moved by
    ``1 - blend_weight`` times ``partner - mean`` (``partner`` None: the location stays).

    Examples
    --------
    >>> import numpy as np
    >>> moved_by_partners(np.array([1.0, 3.0]), 2.0, None, interval_scale=2.0, blend_weight=1.0)
    array([0., 4.])
    >>> moved_by_partners(np.array([1.0, 3.0]), 2.0, 4.0, interval_scale=1.0, blend_weight=0.5)
    array([2., 4.])
    """
    values = values + (interval_scale - 1.0) * (values - mean)
    if partner is not None:
        values = values + (1.0 - blend_weight) * (partner - mean)
    return values


def per_batch(regressor, rows, statistic, blended: bool = True) -> np.ndarray:
    """``statistic(probs, borders, batch)`` of every batch of ``rows`` (see ``_rows``) of
    a fitted ``TabSwiftRegressor``.

    ``probs`` (m, n_buckets) are the bucket probabilities of the m rows ``rows[batch]``
    and ``borders`` the bucket borders on the target's scale; only the statistic of
    each batch is kept. With a booster or a ridge in the blend (and ``blended``), each
    row's statistic moves with its distribution's location: by ``1 - blend_weight_``
    times the partner's prediction minus the distribution's mean; with the guard's
    ``interval_scale_``, its distance to that mean is scaled as well.
    """
    partnered = blended and (regressor.booster_ is not None or regressor.linear_ is not None)
    moved = partnered or (blended and regressor.interval_scale_ != 1.0)

    def reduce(logits, depth, batch, members):
        probs = buckets.bucket_probabilities(logits)
        borders = regressor._borders(probs.shape[1], members[0])  # a group's members: one scale
        values = statistic(probs, borders, batch)
        if not moved:
            return values
        mean = buckets.mean(probs, borders).reshape(-1, *[1] * (values.ndim - 1))
        # the partner's predictions of this batch only: memory stays flat
        partner = (regressor._partner_outputs(rows.iloc[batch]).reshape(mean.shape)
                   if partnered else None)
        return moved_by_partners(values, mean, partner, regressor.interval_scale_,
                                 regressor.blend_weight_)  # (m,) or (m, k)

    return regressor._predict_batches(rows, reduce)


def full_output(regressor, rows, qs: list[float], borders: np.ndarray) -> dict:
    """``predict(X, output_type="full")``: every summary and the distribution, one pass.

    The mean, median, mode and quantiles (levels ``qs``) are those ``predict`` gives for
    each output type (moved as :func:`per_batch` moves them); the probabilities are the
    in-context model's own over ``borders`` (as ``predict_distribution`` gives them).
    """
    def statistic(probs, own, batch):  # (m, 3 + q + n_buckets): the summaries, then probs
        return np.column_stack([
            buckets.mean(probs, own), buckets.mode(probs, own),
            buckets.quantiles(probs, own, [0.5, *qs]), buckets.rebin(probs, own, borders),
        ])

    packed = per_batch(regressor, rows, statistic, blended=False)
    summaries = packed[:, : 3 + len(qs)]  # mean, mode, the median and the quantiles
    partnered = regressor.booster_ is not None or regressor.linear_ is not None
    if partnered or regressor.interval_scale_ != 1.0:
        partner = regressor._partner_outputs(rows)[:, None] if partnered else None
        summaries = moved_by_partners(summaries, summaries[:, :1], partner,
                                      regressor.interval_scale_, regressor.blend_weight_)
    return {"mean": summaries[:, 0], "median": summaries[:, 2], "mode": summaries[:, 1],
            "quantiles": summaries[:, 3:], "probabilities": packed[:, 3 + len(qs):],
            "borders": borders}
