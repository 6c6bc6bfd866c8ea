"""Inference-time ensemble of TabSwift: each member sees the table differently.

A member is a fitted recipe: which context rows it keeps (all of them unless
there are more than the model handles), which features it keeps (all unless
there are more than ``max_features``) and in which order, how it normalises
them (``"none"``: z-score; ``"power"``: Yeo-Johnson) with soft clipping of
outliers, and for classifiers an output code: which of the model's outputs
each class is read from. With no more classes than outputs the code is a
cyclic shift of the labels; with more, it merges the classes into as many
groups as the model has outputs (error-correcting output codes), and the
members' codes together tell every pair of classes apart. Averaging members
removes the model's sensitivity to column order and label identity.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np

from skfm.tabular.power import LambdaCache, yeo_johnson

NORM_METHODS = ("none", "power")
OUTLIER_Z = 4.0
MAX_ONE_HOT_LEVELS = 10
PCA_MIN_FEATURES = 15  # tables at least this wide (all numeric) get principal-component members
PCA_COMPONENTS = 32  # at most; fewer when they already explain PCA_VARIANCE of the variance
PCA_VARIANCE = 0.99


def _soft_clip(z: np.ndarray) -> np.ndarray:
    """Keep |z| <= 4 as is and compress the tail logarithmically beyond (inf to 4 + 709.8)."""
    excess = np.minimum(np.maximum(np.abs(z) - OUTLIER_Z, 0.0), np.finfo(np.float64).max)
    return np.where(excess > 0, np.sign(z) * (OUTLIER_Z + np.log1p(excess)), z)


@dataclass
class Member:
    """One ensemble member's view of the data (all numpy, picklable)."""

    rows: np.ndarray  # context row indices kept
    features: np.ndarray  # feature indices, in the member's order
    norm: str
    class_code: np.ndarray | None  # (n_classes,) model output of each class; None: regression
    lambdas: np.ndarray | None  # (F_expanded,) Yeo-Johnson lambdas, or None: no power transform
    mean: np.ndarray
    scale: np.ndarray
    one_hot: dict[int, int]  # categorical column -> number of levels, expanded to indicators
    projection: np.ndarray | None = None  # (F_expanded, k) whitened principal axes, or None
    center: np.ndarray | None = None  # (F_expanded,) mean of the context's z-scores
    # a regressor's targets as this member reads them: (y - target_mean) / target_scale, in
    # the estimator's standardised units (a retrieved context has its own location and spread)
    target_mean: float = 0.0
    target_scale: float = 1.0

    def __setstate__(self, state: dict) -> None:
        """Unpickle, also a member pickled before its lambdas were kept (a fitted
        ``PowerTransformer`` under ``power``)."""
        if "power" in state:
            power = state.pop("power")
            state["lambdas"] = None if power is None else power.lambdas_
        self.__dict__.update(state)

    @property
    def width(self) -> int:
        """Number of columns :meth:`transform` returns."""
        if self.projection is not None:
            return self.projection.shape[1]
        return len(self.features) + sum(n - 1 for n in self.one_hot.values())

    def transform(self, X: np.ndarray) -> np.ndarray:
        """Normalised features of ``X`` (already encoded to float), shape (n, width)."""
        x = _expand(X, self.features, self.one_hot)
        if self.lambdas is not None:
            x = yeo_johnson(x, self.lambdas)
        with np.errstate(over="ignore"):  # beyond 1e308 from the mean: inf, soft-clipped
            z = _soft_clip((x - self.mean) / self.scale)
        if self.projection is not None:  # missing values sit at the mean
            z = _soft_clip((np.nan_to_num(z) - self.center) @ self.projection)
        return z.astype(np.float32)


def _expand(X: np.ndarray, features: np.ndarray, one_hot: dict[int, int]) -> np.ndarray:
    """The member's columns of ``X``, categorical ones in ``one_hot`` as indicator blocks.

    A missing category is missing (NaN) in every indicator of its block.
    """
    blocks = []
    for f in features:
        column = X[:, f]
        if f in one_hot:
            block = (column[:, None] == np.arange(one_hot[f])).astype(np.float64)
            block[np.isnan(column)] = np.nan
            blocks.append(block)
        else:
            blocks.append(column[:, None])
    return np.concatenate(blocks, axis=1)


def _column_keys(features: np.ndarray, one_hot: dict[int, int]) -> list[tuple]:
    """(feature, level) of every column :func:`_expand` returns (level None: not one-hot)."""
    return [(f, level) for f in features
            for level in (range(one_hot[f]) if f in one_hot else (None,))]


def _fit_member(X, rows, features, norm, class_code, one_hot, n_components, rng,
                lambda_cache: LambdaCache) -> Member:
    x = _expand(X[rows], features, one_hot)
    lambdas = None
    if norm == "power" and (~np.isnan(x)).any(axis=0).all():  # Yeo-Johnson needs values
        rows_key = rows.tobytes()
        lambdas = lambda_cache.lambdas(
            x, [(rows_key, *key) for key in _column_keys(features, one_hot)])
        x = yeo_johnson(x, lambdas)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all-missing columns
        magnitude = np.nanmax(np.abs(x), axis=0)
        magnitude = np.where(np.isfinite(magnitude) & (magnitude > 0), magnitude, 1.0)
        # moments of x / magnitude: squares of |x| > 1e154 would overflow, of |x| < 1e-154
        # underflow to 0 (and a column on the scale of 1e-13 would look constant)
        mean = np.nanmean(x / magnitude, axis=0) * magnitude
        scale = np.nanstd(x / magnitude, axis=0) * magnitude
    mean = np.nan_to_num(mean)
    scale = np.where(np.isfinite(scale) & (scale > 1e-12 * magnitude), scale, 1.0)
    member = Member(rows, features, norm, class_code, lambdas, mean, scale, one_hot)
    if n_components:
        _add_projection(member, member.transform(X[rows]).astype(np.float64), n_components, rng)
    return member


def _add_projection(member: Member, z: np.ndarray, n_components: int, rng) -> None:
    """Turn ``member`` into one that sees whitened principal components of its columns.

    ``z`` (n_rows, F) are the member's context columns; the components come in a random
    order, like the columns of the other members.
    """
    center = np.nan_to_num(z).mean(0)
    _, singular, axes = np.linalg.svd(np.nan_to_num(z) - center, full_matrices=False)
    spread = singular / np.sqrt(max(len(z) - 1, 1))  # (min(n, F),) component std
    explained = np.cumsum(spread**2) / max(np.sum(spread**2), 1e-300)
    n_keep = min(n_components, int(np.searchsorted(explained, PCA_VARIANCE)) + 1)
    keep = np.flatnonzero(spread > 1e-6 * max(spread[0], 1e-300))[:n_keep]
    if keep.size == 0:
        return  # constant columns: keep the plain view
    projection = axes[keep].T / spread[keep]  # (F, k): unit-variance components
    member.projection, member.center = projection[:, rng.permutation(keep.size)], center


def informative_features(X: np.ndarray) -> np.ndarray:
    """Indices of columns that are not constant (ignoring missing values)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all-missing columns
        spread = np.nanmax(X, axis=0) - np.nanmin(X, axis=0)
    return np.flatnonzero(np.nan_to_num(spread) > 0)


def build_members(
    X: np.ndarray,
    y_codes: np.ndarray | None,
    n_members: int,
    max_features: int,
    max_rows: int,
    rng: np.random.Generator,
    n_classes: int = 0,
    max_outputs: int = 0,
    shuffle_features: bool = True,
    categorical_levels: dict[int, int] | None = None,
    pool: np.ndarray | None = None,
) -> list[Member]:
    """Fit member recipes on the context ``X`` (encoded floats).

    Members cycle through the normalisations, draw a feature order (a random
    subset of ``max_features`` when there are more), an output code for the
    ``n_classes`` classes (see :func:`output_codes`; classification only, when
    ``n_classes > 0``), and a stratified subsample of ``max_rows`` context rows
    when there are more. Context rows come from the indices ``pool`` (all rows
    when None), so that the rows outside it stay unseen. There are
    ``n_members`` members, or more when ``n_classes > max_outputs`` needs more
    codes to tell the classes apart.
    Every other pair of members (2, 3, 6, 7, ...) sees categorical columns of
    3 to ``MAX_ONE_HOT_LEVELS`` levels as one-hot indicators instead of
    ordinal codes, when the widened table still fits in ``max_features``; on
    all-numeric tables with at least ``PCA_MIN_FEATURES`` columns, these
    members see instead the leading principal components of their columns
    that explain ``PCA_VARIANCE`` of the variance (at most ``PCA_COMPONENTS``),
    whitened (the model reads many correlated columns less
    well than a few decorrelated ones; TabPFN v2 adds SVD features likewise).
    """
    kept = informative_features(X)
    if kept.size == 0:
        kept = np.array([0])  # only constant columns: the model sees one (zero) feature
    codes = output_codes(n_classes, max_outputs, n_members, rng) if n_classes else None
    principal_components = kept.size >= PCA_MIN_FEATURES and not categorical_levels
    candidates = np.arange(len(X)) if pool is None else np.sort(pool)
    candidate_codes = None if y_codes is None else y_codes[candidates]
    members, lambda_cache = [], LambdaCache()  # a column's lambda on the same rows: found once
    for i in range(n_members if codes is None else len(codes)):
        if kept.size > max_features:
            features = np.sort(rng.choice(kept, max_features, replace=False))
        else:
            features = kept
        if shuffle_features and i > 0:
            features = rng.permutation(features)
        rows = candidates
        if len(candidates) > max_rows:
            rows = candidates[_subsample_rows(len(candidates), candidate_codes, max_rows, rng)]
        alternative_view = i // 2 % 2 == 1
        one_hot = _one_hot_columns(features, categorical_levels, max_features) \
            if alternative_view else {}
        n_components = PCA_COMPONENTS if alternative_view and principal_components else 0
        norm = NORM_METHODS[i % len(NORM_METHODS)]
        code = None if codes is None else codes[i]
        members.append(_fit_member(X, rows, features, norm, code, one_hot, n_components, rng,
                                   lambda_cache))
    return members


def output_codes(
    n_classes: int, n_outputs: int, n_codes: int, rng: np.random.Generator
) -> np.ndarray:
    """Which model output each class is read from, per member: (n_codes', n_classes).

    With ``n_classes <= n_outputs`` member ``i`` shifts the labels cyclically by
    ``i``. With more classes, each code is a balanced random assignment of the
    classes to the ``n_outputs`` outputs; codes are added (beyond ``n_codes``
    when needed, at least ``2 * ceil(log(n_classes) / log(n_outputs)) + 1``)
    until every pair of classes is separated by at least three codes, so that
    one confused member cannot merge two classes.

    Examples
    --------
    >>> import numpy as np
    >>> output_codes(3, 10, 4, np.random.default_rng(0))
    array([[0, 1, 2],
           [1, 2, 0],
           [2, 0, 1],
           [0, 1, 2]])
    >>> codes = output_codes(26, 10, 4, np.random.default_rng(0))
    >>> codes.shape[1], int(codes.max())
    (26, 9)
    """
    base = np.arange(n_classes)
    if n_classes <= n_outputs:
        return np.stack([(base + i) % n_classes for i in range(n_codes)])
    minimum = 2 * int(np.ceil(np.log(n_classes) / np.log(n_outputs))) + 1
    codes = [rng.permutation(base) % n_outputs for _ in range(max(n_codes, minimum))]
    while True:
        stacked = np.stack(codes)  # (n_codes', n_classes)
        separations = (stacked[:, :, None] != stacked[:, None, :]).sum(0)  # (K, K)
        np.fill_diagonal(separations, len(codes))
        if separations.min() >= min(3, len(codes)):
            return stacked
        codes.append(rng.permutation(base) % n_outputs)


def _one_hot_columns(features, categorical_levels, max_features) -> dict[int, int]:
    """Categorical columns to expand, or none if the expanded table would be too wide."""
    levels = {
        f: n
        for f, n in (categorical_levels or {}).items()
        if f in set(features.tolist()) and 3 <= n <= MAX_ONE_HOT_LEVELS
    }
    width = len(features) + sum(n - 1 for n in levels.values())
    return levels if width <= max_features else {}


def _subsample_rows(
    n: int, y_codes: np.ndarray | None, size: int, rng: np.random.Generator
) -> np.ndarray:
    """``size`` of ``n`` row indices, stratified by class when classes are given."""
    if y_codes is None:
        return np.sort(rng.choice(n, size, replace=False))
    picked = []
    for c in np.unique(y_codes):
        idx = np.flatnonzero(y_codes == c)
        take = max(1, round(size * len(idx) / n))
        picked.append(rng.choice(idx, min(take, len(idx)), replace=False))
    rows = np.concatenate(picked)
    if len(rows) > size:
        rows = rng.choice(rows, size, replace=False)
    return np.sort(rows)
