"""Draws of a fitted TabSwiftRegressor in many contexts at once (TabMGP's rollouts).

:func:`sample_in_contexts` is :meth:`~skfm.TabSwiftRegressor.sample_y_in_contexts`: a
context is a multiset of the fitted rows with targets of its own, and the model predicts
other fitted rows as if refitted on it. All contexts share each forward pass (contexts x
ensemble members form the batch), in batches sized from free memory and capped on CPU
(:func:`~skfm.tabular.batching.contexts_per_pass`).

Shapes: ``B`` contexts, ``m`` rows per context, ``k`` query rows per context, ``E``
ensemble members, ``C`` buckets.
"""

from __future__ import annotations

import numpy as np
import torch
from sklearn.base import clone
from sklearn.utils import check_random_state

from skfm._backend import (
    auto_batch_size,
    inference_context,
    output_numpy,
    resolve_device,
    resolve_precision,
    run_in_batches,
    threads,
    to_device,
)
from skfm.tabular.base import context_limit, exit_agreement
from skfm.tabular.batching import contexts_per_pass
from skfm.tabular.model import buckets
from skfm.tabular.model.buckets import bucket_probabilities
from skfm.tabular.predictive import moved_by_partners, standardisation


def check_contexts(context_rows, context_y, query_rows, n_fitted: int):
    """The arguments of ``sample_y_in_contexts`` as arrays ``(rows, y, new)``, checked.

    Raises ``ValueError`` naming the argument whose shape does not match, or whose
    positions are not those of the ``n_fitted`` fitted rows.

    Examples
    --------
    >>> rows, y, new = check_contexts([[0, 1]], [[1.0, 2.0]], [[2]], n_fitted=3)
    >>> rows.shape, y.dtype.name, new.tolist()
    ((1, 2), 'float64', [[2]])
    >>> check_contexts([[0, 3]], [[1.0, 2.0]], [[2]], n_fitted=3)
    Traceback (most recent call last):
    ...
    ValueError: context_rows must hold positions of fitted rows, integers in [0, 3)
    """
    rows, new = np.asarray(context_rows), np.asarray(query_rows)
    y = np.asarray(context_y, dtype=np.float64)
    if rows.ndim != 2 or rows.shape[1] == 0 or y.shape != rows.shape:
        raise ValueError(
            "context_rows and context_y must have the same shape (n_contexts, "
            f"n_context_rows), with at least one row; got {rows.shape} and {y.shape}"
        )
    if new.ndim != 2 or len(new) != len(rows):
        raise ValueError(
            f"query_rows must have shape (n_contexts={len(rows)}, n_queries), "
            f"got {new.shape}"
        )
    for name, index in (("context_rows", rows), ("query_rows", new)):
        if index.size and (index.dtype.kind not in "iu" or index.min() < 0
                           or index.max() >= n_fitted):
            raise ValueError(
                f"{name} must hold positions of fitted rows, integers in [0, {n_fitted})"
            )
    return rows, y, new


def sample_in_contexts(regressor, context_rows, context_y, query_rows,
                       random_state=None) -> np.ndarray:
    """One draw of ``y`` (B, k) per query row and context: see
    :meth:`~skfm.TabSwiftRegressor.sample_y_in_contexts` (``regressor``, fitted)."""
    rows, y, new = check_contexts(context_rows, context_y, query_rows,
                                  len(regressor.X_context_))
    if isinstance(random_state, np.random.Generator):
        rng = random_state
    else:
        rng = np.random.default_rng(check_random_state(random_state).randint(2**31 - 1))
    limit = context_limit(regressor)
    if rows.shape[1] > limit:  # as a refit would: a random subset of each context
        keep = np.sort(rng.random(rows.shape).argsort(1)[:, :limit], axis=1)
        rows, y = np.take_along_axis(rows, keep, 1), np.take_along_axis(y, keep, 1)
    probs, mean, scale, borders = distributions_in_contexts(regressor, rows, y, new)
    b, k, c = probs.shape
    probs = probs.reshape(b * k, c)
    draws = buckets.sample(probs, borders, 1, rng).reshape(b, k)
    # on each context's standardised scale: mean and spread back to the target's
    centre = mean[:, None] + scale[:, None] * buckets.mean(probs, borders).reshape(b, k)
    return guarded_draws(regressor, centre, mean[:, None] + scale[:, None] * draws, rows, y,
                         new)


def guarded_draws(regressor, centre, draws, rows, y, new) -> np.ndarray:
    """``draws`` (B, k) around the in-context means ``centre`` (B, k), moved as the
    guard moves ``sample_y``; its linear partner is refitted on each context."""
    linear = regressor.linear_ is not None and regressor.blend_weight_ < 1.0
    if not linear and regressor.interval_scale_ == 1.0:
        return draws
    X = regressor.X_context_
    partner = (np.stack([clone(regressor.linear_).fit(X[r], t).predict(X[q])
                         for r, t, q in zip(rows, y, new, strict=True)]) if linear else None)
    return moved_by_partners(draws, centre, partner, regressor.interval_scale_,
                             regressor.blend_weight_)


def distributions_in_contexts(regressor, rows, y, new):
    """Bucket probabilities of the fitted rows ``new`` given each context.

    Parameters
    ----------
    regressor : TabSwiftRegressor
        Fitted.
    rows : ndarray of shape (B, m)
        Fitted-row position of every row of every context.
    y : ndarray of shape (B, m)
        Their targets.
    new : ndarray of shape (B, k)
        Fitted-row positions of the rows to predict.

    Returns
    -------
    probs : ndarray of shape (B, k, C)
        On each context's standardised target scale.
    mean, scale : ndarrays of shape (B,)
        That scale: ``y = mean + scale * standardised``.
    borders : ndarray of shape (C + 1,)
        The bucket borders on the standardised scale.
    """
    device = resolve_device(regressor.device)
    model = regressor._network(device)
    dtype = resolve_precision(device, regressor.inference_precision)
    cfg = model.config
    members = regressor.members_
    x_fitted = regressor._member_tensors(regressor.X_context_, device,
                                         cfg.max_features)  # (E, n, F)
    all_features = torch.tensor([m.width for m in members], device=device)  # (E,)
    # each context standardised as fit standardises the table: on any magnitude, and
    # refused (ValueError naming y) where its outer bucket borders overflow float64
    mean, scale = np.array([standardisation(context) for context in y]).T  # (B,) each
    y_std = (y - mean[:, None]) / scale[:, None]
    n_members, _, width = x_fitted.shape
    m = rows.shape[1]
    tokens = m + cfg.n_registers  # float32 activations and one head's attention scores
    per_context = 4 * n_members * tokens * (12 * cfg.d_model + cfg.n_heads * tokens)
    batch = auto_batch_size(
        device, per_context, len(rows),
        max_batch=contexts_per_pass(device, n_members * tokens),
    )

    def run(start: int, stop: int) -> np.ndarray:
        b = stop - start
        r = torch.as_tensor(rows[start:stop], device=device)
        x_ctx = x_fitted[:, r].reshape(n_members * b, m, width)  # (E*b, m, F)
        q = torch.as_tensor(new[start:stop], device=device)
        x_new = x_fitted[:, q].reshape(n_members * b, q.shape[1], width)  # (E*b, k, F)
        y_ctx = to_device(y_std[start:stop], device, dtype=torch.float32)
        y_ctx = y_ctx.expand(n_members, b, m).reshape(n_members * b, m)
        n_features = all_features.repeat_interleave(b)
        with inference_context(device, dtype):
            cache = model.context_cache(x_ctx, y_ctx, n_features, regressor._task)
            logits, _ = model.predict_from_cache(
                x_new, x_ctx, cache, n_features, regressor._task,
                max_layers=regressor.max_layers,
                exit_threshold=exit_agreement(regressor.early_exit_),
            )
        logits = output_numpy(logits)  # (E*b, k, C)
        k = q.shape[1]
        return bucket_probabilities(logits.reshape(n_members, b * k, -1)).reshape(b, k, -1)

    with threads(regressor.n_jobs):
        probs = np.concatenate(run_in_batches(run, len(rows), batch, device=device))
    return probs, mean, scale, buckets.bucket_borders(cfg.n_buckets)
