"""TabMGPRegressor: martingale posterior of a loss-defined estimand, by predictive resampling.

The estimand is ``theta(F) = argmin_theta E_F[loss(x, y, theta)]`` for a loss chosen by the user
(least squares, pinball, squared error to a constant, or any function of a data set). Its
martingale posterior (Fong, Holmes & Walker, 2023; TabMGP, Ng et al., 2026) is the distribution
of ``theta`` computed on the data completed by the model's own predictions. Each of ``B``
rollouts imputes ``N`` future rows, a block of them at a time:

- ``x`` is drawn uniformly from all rows so far, observed and imputed (a Polya urn, that is a
  Bayesian bootstrap of the covariates), so every imputed ``x`` is a copy of an observed row;
- ``y`` is drawn from the in-context learner's predictive given the growing context;

and the rollout's draw is ``theta`` minimised on its ``n + N`` rows with equal weights.
``block_size=1`` is the paper's exact scheme (one model call per imputed row); a block of ``k``
rows draws their ``y`` independently from the same context, ``k`` times fewer model calls. Such a
block leaves out how each imputed row would have moved the predictive of the next ones, which
narrows the posterior most while the context is small; a block that is a fixed fraction of the
current context (``block_size=0.1``: 10% more rows per call) keeps that error about equal at
every step and costs about ``log((n + N) / n) / log(1.1)`` calls per rollout.

With a :class:`~skfm.TabSwiftRegressor` as the base model all rollouts share each model call,
through its :meth:`~skfm.TabSwiftRegressor.sample_y_in_contexts` (every imputed ``x`` is an
observed row, so a rollout's context is a list of observed rows with its own targets). Any
other base regressor with a ``sample_y(X, n_samples, random_state)`` method (e.g.
scikit-learn's ``GaussianProcessRegressor``) is refitted per rollout and per block.
"""

from __future__ import annotations

import numbers
import warnings
from dataclasses import dataclass
from functools import partial

import numpy as np
import pandas as pd
from sklearn.base import BaseEstimator, RegressorMixin, clone
from sklearn.linear_model import QuantileRegressor
from sklearn.utils import check_random_state
from sklearn.utils.validation import check_array, check_is_fitted, column_or_1d

from skfm._progress import progress_bar
from skfm.tabular.encoding import TabularEncoder
from skfm.tabular.regressor import TabSwiftRegressor

ESTIMANDS = ("linear", "quantile", "mean")


# ---- estimands ------------------------------------------------------------------------------


def _linear(Z: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Least-squares coefficients of ``y`` on the design ``Z`` (intercept column included)."""
    return np.linalg.lstsq(Z, y, rcond=None)[0]


def _quantile(Z: np.ndarray, y: np.ndarray, q: float) -> np.ndarray:
    """Linear quantile-regression coefficients (exact pinball-loss minimiser, HiGHS)."""
    reg = QuantileRegressor(quantile=q, alpha=0.0, fit_intercept=False, solver="highs")
    return reg.fit(Z, y).coef_


def _one_hot_design(X_enc: np.ndarray, encoder: TabularEncoder, names: list[str]):
    """Numeric columns as they are, categorical codes one-hot without their first category.

    Returns the design with a leading intercept column, shape (n, 1 + q), and its column names.
    """
    columns, out_names = [np.ones(len(X_enc))], ["intercept"]
    for j, name in enumerate(names):
        if j not in encoder.categories_:
            columns.append(X_enc[:, j])
            out_names.append(name)
            continue
        for code, category in enumerate(encoder.categories_[j][1:], start=1):
            columns.append((X_enc[:, j] == code).astype(float))
            out_names.append(f"{name}={category}")
    return np.column_stack(columns), out_names


# ---- credible sets --------------------------------------------------------------------------


def _check_level(level) -> float:
    if not isinstance(level, numbers.Real) or not 0.0 < float(level) < 1.0:
        raise ValueError(f"level must be a number in (0, 1), got {level!r}")
    return float(level)


def _mahalanobis(theta: np.ndarray, center: np.ndarray, covariance: np.ndarray) -> np.ndarray:
    """Mahalanobis distances of the rows of ``theta`` (m, p) to ``center``, shape (m,)."""
    d = theta - center
    return np.sqrt(np.maximum(np.einsum("ij,jk,ik->i", d, np.linalg.pinv(covariance), d), 0.0))


@dataclass(frozen=True)
class CredibleEllipsoid:
    """Joint credible region ``{theta : (theta - center)' P (theta - center) <= radius**2}``.

    ``P`` is the (pseudo-)inverse of ``covariance``; ``radius`` is the ``level`` quantile of the
    posterior draws' Mahalanobis distances to ``center``, so the region holds that share of the
    draws.

    Attributes
    ----------
    center : ndarray of shape (p,)
        Posterior mean.
    covariance : ndarray of shape (p, p)
        Posterior covariance of the draws.
    radius : float
    level : float
    """

    center: np.ndarray
    covariance: np.ndarray
    radius: float
    level: float

    def contains(self, theta) -> np.ndarray | bool:
        """Whether ``theta`` (shape (p,), or (m, p) for m points) lies in the region."""
        points = np.atleast_2d(np.asarray(theta, dtype=float))
        inside = _mahalanobis(points, self.center, self.covariance) <= self.radius
        return inside if np.ndim(theta) > 1 else bool(inside[0])


# ---- predictive samplers --------------------------------------------------------------------


class _ContextsPredictive:
    """Predictive draws of a regressor with ``sample_y_in_contexts`` (a fitted
    :class:`~skfm.TabSwiftRegressor`): every rollout's context in the same batched calls."""

    def __init__(self, base):
        self.base = base

    def __call__(self, rows, y, new, rng: np.random.Generator) -> np.ndarray:
        """One draw of ``y`` for every row in ``new``, shape (B, k)."""
        return self.base.sample_y_in_contexts(rows, y, new, random_state=rng)


class _RefitPredictive:
    """Predictive draws of any regressor with ``sample_y``: one refit per rollout and block."""

    def __init__(self, base, X):
        self.base = base
        self.X = X.reset_index(drop=True) if isinstance(X, pd.DataFrame) else np.asarray(X)

    def _rows(self, idx: np.ndarray):
        return self.X.iloc[idx] if isinstance(self.X, pd.DataFrame) else self.X[idx]

    def __call__(self, rows, y, new, rng: np.random.Generator) -> np.ndarray:
        seeds = rng.integers(2**31 - 1, size=len(rows))
        out = np.empty(new.shape)
        for b in range(len(rows)):
            model = clone(self.base).fit(self._rows(rows[b]), y[b])
            draw = model.sample_y(self._rows(new[b]), n_samples=1, random_state=int(seeds[b]))
            out[b] = np.asarray(draw).reshape(new.shape[1])
        return out


def predictive_resampling(
    draw_y, y, n_rollouts: int, horizon: int, block_size, rng, verbose: bool = False
) -> tuple[np.ndarray, np.ndarray]:
    """Complete ``n_rollouts`` copies of the data with ``horizon`` imputed rows each.

    Parameters
    ----------
    draw_y : callable
        ``draw_y(rows, y, new, rng) -> (B, k)`` draws targets for the observed-row indices
        ``new`` (B, k) given each rollout's context ``rows`` (B, m) and targets ``y`` (B, m).
    y : ndarray of shape (n,)
        Observed targets; row ``i`` of the observed data has index ``i``.
    n_rollouts, horizon : int
        ``B`` and ``N``.
    block_size : int or float
        Rows imputed per call of ``draw_y``: an int ``k``, or a fraction ``r`` in (0, 1) for
        ``max(1, floor(r * m))`` rows when the context has ``m`` rows. The last block may be
        shorter.
    rng : numpy.random.Generator
    verbose : bool, default=False
        Show a progress bar over the imputed rows.

    Returns
    -------
    rows : ndarray of shape (n_rollouts, n + horizon)
        Observed-row index of every row of every completed data set (the first ``n`` are
        ``0..n-1``).
    targets : ndarray of shape (n_rollouts, n + horizon)
        Their targets (observed, then imputed).
    """
    n = len(y)
    rows = np.empty((n_rollouts, n + horizon), dtype=np.int64)
    rows[:, :n] = np.arange(n)
    targets = np.empty((n_rollouts, n + horizon))
    targets[:, :n] = y
    relative = not isinstance(block_size, numbers.Integral)
    m = n
    with progress_bar(total=horizon, verbose=verbose, desc="TabMGP rollouts", unit="row") as bar:
        while m < n + horizon:
            k = max(1, int(block_size * m)) if relative else block_size
            k = min(k, n + horizon - m)
            urn = rng.integers(0, m, size=(n_rollouts, k))  # Polya urn over all rows so far
            new = np.take_along_axis(rows[:, :m], urn, 1)
            targets[:, m : m + k] = draw_y(rows[:, :m], targets[:, :m], new, rng)
            rows[:, m : m + k] = new
            m += k
            bar.update(k)
    return rows, targets


# ---- estimator ------------------------------------------------------------------------------


class TabMGPRegressor(RegressorMixin, BaseEstimator):
    """In-context regressor with a martingale posterior for a loss-defined estimand.

    ``fit`` fits the base model on ``(X, y)`` for point predictions, then draws the posterior
    of ``theta`` by predictive resampling (see the module docstring): ``n_rollouts`` times,
    ``horizon`` rows are imputed, ``x`` by a Bayesian bootstrap of all rows so far and ``y``
    from the base model's predictive given the growing context, and ``theta`` is minimised on
    the completed data. No prior or likelihood for ``theta`` is needed.

    Parameters
    ----------
    estimator : regressor or None, default=None
        Base model, cloned in ``fit``. ``None`` means ``TabSwiftRegressor(n_estimators=1)``:
        one member, as in the coverage study (``docs/benchmarks/tabmgp_coverage.md``, run on
        the ``tabswift-v1`` checkpoint); the 8 members of ``TabSwiftRegressor()`` cost far
        more (2 CPU cores, B=100, N=250, n=100, 5 features: about 6 s per fit with one member,
        46 s with eight; ``docs/benchmarks/tabmgp_timing.md``). A TabSwiftRegressor runs all
        rollouts batched on its ``device`` with its ``n_estimators`` members (cost grows with
        both); any other regressor needs
        ``sample_y(X, n_samples, random_state)`` and is refitted per rollout and block.
    estimand : {"linear", "quantile", "mean"} or callable, default="linear"
        ``"linear"``: least-squares intercept and slopes of ``y`` on the features as given
        (no rescaling: standardise them yourself, with fixed constants, for comparable
        slopes; categorical columns enter one-hot without their first category; rows with
        missing features are left out of the estimand, with a warning).
        ``"quantile"``: linear quantile-regression intercept and slopes at level ``quantile``
        (pinball loss). ``"mean"``: the mean of ``y``. A callable ``f(X, y) -> theta`` gets a
        completed data set (a DataFrame with the training columns if ``X`` was one, else a
        float array; ``y`` a float array) and returns a scalar or a 1-d array of fixed
        length (a pandas Series names the components).
    quantile : float, default=0.5
        Level of the ``"quantile"`` estimand, in (0, 1).
    n_rollouts : int, default=100
        Posterior draws ``B``, at least 2.
    horizon : int, default=250
        Imputed rows ``N`` per rollout.
    block_size : int or float, default=0.1
        Rows imputed per model call: an int ``k`` (1 is the exact scheme), or a fraction
        ``r`` in (0, 1) of the current context, ``max(1, floor(r * m))`` rows at ``m`` rows.
        A block's rows are drawn independently from the same context: fewer model calls,
        narrower posteriors. On 100 rows of 5 features (2 CPU cores) a fit takes 112 s with
        ``block_size=1``, 11 s with 10, 6 s with 0.1 and 2.5 s with 50; on the same 16 data sets
        the median 95% widths are 0.74, 0.73, 0.72 and 0.65 (``docs/benchmarks/tabmgp_timing.md``).
    random_state : int, RandomState or None, default=0
        Seeds the rollouts (the base model has its own ``random_state``).
    verbose : bool, default=False
        Show a progress bar over the imputed rows (never when the environment
        variable ``SKFM_PROGRESS`` is ``0``).

    Attributes
    ----------
    estimator_ : regressor
        The base model fitted on ``(X, y)``.
    posterior_samples_ : ndarray of shape (n_rollouts, p)
        Posterior draws of ``theta``.
    posterior_names_ : ndarray of str, shape (p,)
        Names of the components: ``"intercept"`` and feature names (``"x0"``... for arrays;
        ``"name=category"`` for one-hot columns), ``"mean"``, or ``"theta0"``... for a callable.
    estimate_ : ndarray of shape (p,)
        ``theta`` on the observed data alone.
    n_features_in_ : int
    feature_names_in_ : ndarray of shape (n_features_in_,)
        Only when ``X`` has string column names.

    See Also
    --------
    TabSwiftRegressor : the default base model.
    plot_posterior : histograms of the marginal posteriors.

    References
    ----------
    K. Ng, E. Fong, D. T. Frazier, J. Knoblauch, S. Wei. "TabMGP: Martingale Posterior with
    TabPFN". ICML 2026, arXiv:2510.25154.
    E. Fong, C. Holmes, S. G. Walker. "Martingale posterior distributions". JRSSB 2023.

    Examples
    --------
    >>> import numpy as np
    >>> from skfm import TabSwiftRegressor
    >>> from skfm.tabular.martingale import TabMGPRegressor
    >>> rng = np.random.default_rng(0)
    >>> X = rng.uniform(-1, 1, size=(40, 2))
    >>> y = 1.0 + 2.0 * X[:, 0] - X[:, 1] + rng.normal(scale=0.5, size=40)
    >>> mgp = TabMGPRegressor(TabSwiftRegressor(n_estimators=1), n_rollouts=10, horizon=20)
    >>> mgp = mgp.fit(X, y)
    >>> mgp.posterior_samples_.shape
    (10, 3)
    >>> mgp.posterior_names_.tolist()
    ['intercept', 'x0', 'x1']
    >>> lower, upper = mgp.credible_interval(level=0.9)
    >>> bool(np.all(lower < upper))
    True
    >>> mgp.predict(X[:3]).shape
    (3,)
    """

    def __init__(
        self,
        estimator=None,
        *,
        estimand="linear",
        quantile=0.5,
        n_rollouts=100,
        horizon=250,
        block_size=0.1,
        random_state=0,
        verbose=False,
    ):
        self.estimator = estimator
        self.estimand = estimand
        self.quantile = quantile
        self.n_rollouts = n_rollouts
        self.horizon = horizon
        self.block_size = block_size
        self.random_state = random_state
        self.verbose = verbose

    def _check_params(self) -> None:
        if not callable(self.estimand) and self.estimand not in ESTIMANDS:
            raise ValueError(
                f"estimand must be one of {ESTIMANDS} or a callable (X, y) -> theta, "
                f"got {self.estimand!r}"
            )
        if self.estimand == "quantile" and not (
            isinstance(self.quantile, numbers.Real) and 0.0 < self.quantile < 1.0
        ):
            raise ValueError(f"quantile must be a level in (0, 1), got {self.quantile!r}")
        for name, minimum in (("n_rollouts", 2), ("horizon", 1)):
            value = getattr(self, name)
            integral = isinstance(value, numbers.Integral) and not isinstance(value, bool)
            if not integral or value < minimum:
                raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}")
        block = self.block_size
        integral = isinstance(block, numbers.Integral) and not isinstance(block, bool)
        fraction = isinstance(block, numbers.Real) and not integral and 0.0 < block < 1.0
        if not (integral and block >= 1 or fraction):
            raise ValueError(
                f"block_size must be an integer >= 1 or a fraction in (0, 1), got {block!r}"
            )
        if self.estimator is not None and not hasattr(self.estimator, "sample_y"):
            raise TypeError(
                f"estimator {type(self.estimator).__name__} has no sample_y(X, n_samples, "
                "random_state) method to draw from its predictive distribution"
            )

    def _theta_function(self, X, X_enc: np.ndarray):
        """``theta(rows, y)`` on observed-row indices, and the components' names."""
        if callable(self.estimand):
            frame = X.reset_index(drop=True) if isinstance(X, pd.DataFrame) else None

            def theta(rows, y):
                data = frame.iloc[rows].reset_index(drop=True) if frame is not None else X_enc[rows]
                return self.estimand(data, y)

            return theta, None
        if self.estimand == "mean":
            return (lambda rows, y: np.array([y.mean()])), ["mean"]
        names = [str(c) for c in getattr(self, "feature_names_in_", [])] or [
            f"x{j}" for j in range(self.n_features_in_)
        ]
        Z, names = _one_hot_design(X_enc, self.encoder_, names)
        complete = ~np.isnan(Z).any(1)
        if not complete.all():
            warnings.warn(
                f"{(~complete).sum()} of {len(Z)} rows have missing features; estimand "
                f"{self.estimand!r} uses the complete rows only (the base model uses all rows)",
                UserWarning,
                stacklevel=3,
            )
            Z[~complete] = 0.0  # never used: those rows are left out below
        if complete.sum() < Z.shape[1]:
            raise ValueError(
                f"estimand {self.estimand!r} has {Z.shape[1]} coefficients (intercept included) "
                f"and needs at least as many complete rows, got n_samples={complete.sum()}"
            )
        rank = np.linalg.matrix_rank(Z[complete])
        if rank < Z.shape[1]:
            warnings.warn(
                f"the training rows identify only {rank} of the {Z.shape[1]} coefficients of "
                f"estimand {self.estimand!r} (constant or collinear columns): every draw is one "
                "minimiser among many, and the non-identified directions mean nothing",
                UserWarning,
                stacklevel=3,
            )
        solve = _linear if self.estimand == "linear" else partial(_quantile, q=self.quantile)

        def theta(rows, y):
            keep = complete[rows]
            return solve(Z[rows[keep]], y[keep])

        return theta, names

    def _as_draw(self, value, size: int | None) -> np.ndarray:
        """Check an estimand's output: finite, 0-d or 1-d, the same length every time."""
        theta = np.atleast_1d(np.asarray(value, dtype=float))
        if theta.ndim != 1 or theta.size == 0 or (size is not None and theta.size != size):
            expected = "a scalar or non-empty 1-d array" if size is None else f"{size} values"
            raise ValueError(
                f"estimand callable must return {expected} every time, "
                f"got an array of shape {theta.shape}"
            )
        if not np.isfinite(theta).all():
            if callable(self.estimand):
                raise ValueError("estimand callable returned non-finite values")
            raise ValueError(
                f"estimand {self.estimand!r} is not finite on these data: X or y hold values too "
                "large for float64 least squares; rescale them (e.g. divide by a constant)"
            )
        return theta

    def fit(self, X, y):
        """Fit the base model and draw the posterior of ``theta``.

        Parameters
        ----------
        X : array-like or DataFrame of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)

        Returns
        -------
        self : TabMGPRegressor
        """
        self._check_params()
        if y is None:
            raise ValueError(
                f"{type(self).__name__} requires y to be passed, but the target y is None"
            )
        y = check_array(y, ensure_2d=False, dtype=np.float64, input_name="y")
        y = column_or_1d(y, warn=True)
        self.encoder_ = TabularEncoder().fit(X, self)
        X_enc = self.encoder_.transform(X, self)
        if len(X_enc) != len(y):
            raise ValueError(f"X has {len(X_enc)} rows but y has {len(y)}; they must match.")
        if len(y) < 2:
            raise ValueError(f"TabMGPRegressor needs at least 2 rows, got n_samples={len(y)}")
        theta_fn, names = self._theta_function(X, X_enc)
        base = TabSwiftRegressor(n_estimators=1) if self.estimator is None else self.estimator
        self.estimator_ = clone(base).fit(X, y)
        if hasattr(self.estimator_, "sample_y_in_contexts"):
            draw_y = _ContextsPredictive(self.estimator_)
        else:
            draw_y = _RefitPredictive(self.estimator_, X)
        rng = np.random.default_rng(check_random_state(self.random_state).randint(2**31 - 1))
        rows, targets = predictive_resampling(
            draw_y, y, self.n_rollouts, self.horizon, self.block_size, rng, self.verbose
        )
        first = theta_fn(np.arange(len(y)), y)
        self.estimate_ = self._as_draw(first, None)
        p = self.estimate_.size
        self.posterior_samples_ = np.stack(
            [self._as_draw(theta_fn(r, t), p) for r, t in zip(rows, targets, strict=True)]
        )
        if names is None:
            index = getattr(first, "index", None)
            names = [f"theta{j}" for j in range(p)] if index is None else [str(i) for i in index]
        self.posterior_names_ = np.asarray(names, dtype=str)
        return self

    def predict(self, X):
        """Posterior predictive mean of ``y`` (the base model's predictive mean).

        Parameters
        ----------
        X : array-like or DataFrame of shape (n_samples, n_features)

        Returns
        -------
        ndarray of shape (n_samples,)
        """
        check_is_fitted(self)
        self.encoder_.transform(X, self)  # same checks on X as in fit, names included
        return self.estimator_.predict(X)

    def credible_interval(self, level=0.95) -> tuple[np.ndarray, np.ndarray]:
        """Equal-tailed marginal credible intervals of ``theta``.

        Parameters
        ----------
        level : float, default=0.95
            Posterior probability of each interval, in (0, 1).

        Returns
        -------
        lower, upper : ndarrays of shape (p,)
            The ``(1 - level) / 2`` and ``(1 + level) / 2`` quantiles of the draws.
        """
        check_is_fitted(self)
        level = _check_level(level)
        lower, upper = np.quantile(self.posterior_samples_, [(1 - level) / 2, (1 + level) / 2], 0)
        return lower, upper

    def credible_region(self, level=0.95) -> CredibleEllipsoid:
        """Joint credible ellipsoid of ``theta`` from the draws' mean and covariance.

        Parameters
        ----------
        level : float, default=0.95
            Share of the posterior draws inside the region, in (0, 1).

        Returns
        -------
        CredibleEllipsoid
            With ``contains(theta)``.
        """
        check_is_fitted(self)
        level = _check_level(level)
        draws = self.posterior_samples_
        center = draws.mean(0)
        covariance = np.atleast_2d(np.cov(draws, rowvar=False))
        radius = float(np.quantile(_mahalanobis(draws, center, covariance), level))
        return CredibleEllipsoid(center, covariance, radius, level)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = True
        tags.input_tags.categorical = True
        tags.input_tags.string = True
        tags.non_deterministic = False
        return tags


def plot_posterior(estimator, level=0.95, names=None, bins=20, axes=None):
    """Histograms of the marginal posteriors of a fitted :class:`TabMGPRegressor`.

    Each panel shows one component's draws, its equal-tailed credible interval (shaded) and
    the estimate on the observed data alone (dashed line).

    Parameters
    ----------
    estimator : TabMGPRegressor
        Fitted.
    level : float, default=0.95
        Level of the shaded interval, in (0, 1).
    names : list of str or None, default=None
        Components to show (default: all).
    bins : int, default=20
    axes : array of matplotlib Axes or None, default=None
        One per component; a new figure with a grid of panels when ``None``.

    Returns
    -------
    axes : ndarray of matplotlib Axes

    Examples
    --------
    >>> import numpy as np
    >>> from skfm import TabSwiftRegressor
    >>> from skfm.tabular.martingale import TabMGPRegressor, plot_posterior
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(30, 1))
    >>> y = X[:, 0] + rng.normal(size=30)
    >>> mgp = TabMGPRegressor(TabSwiftRegressor(n_estimators=1), n_rollouts=10, horizon=20)
    >>> axes = plot_posterior(mgp.fit(X, y))
    >>> axes.shape, [ax.get_title() for ax in axes]
    ((2,), ['intercept', 'x0'])
    >>> import matplotlib.pyplot as plt
    >>> plt.close(axes[0].figure)
    """
    import matplotlib.pyplot as plt

    check_is_fitted(estimator)
    lower, upper = estimator.credible_interval(level)
    all_names = list(estimator.posterior_names_)
    chosen = all_names if names is None else list(names)
    missing = [n for n in chosen if n not in all_names]
    if missing:
        raise ValueError(f"unknown component(s) {missing}; the posterior has {all_names}")
    if axes is None:
        cols = min(len(chosen), 4)
        rows = -(-len(chosen) // cols)
        _, axes = plt.subplots(rows, cols, figsize=(3.2 * cols, 2.6 * rows), squeeze=False)
    axes = np.asarray(axes).ravel()
    for ax, name in zip(axes, chosen, strict=False):
        j = all_names.index(name)
        draws = estimator.posterior_samples_[:, j]
        ax.hist(draws, bins=bins, density=True, color="tab:blue", alpha=0.7)
        ax.axvspan(lower[j], upper[j], color="tab:orange", alpha=0.2, zorder=0,
                   label=f"{level:.0%} CI")
        ax.axvline(estimator.estimate_[j], color="k", ls="--", lw=1, label="observed-data fit")
        ax.set_title(name)
        ax.set_yticks([])
    axes[0].legend(fontsize="small")
    for ax in axes[len(chosen) :]:
        ax.set_visible(False)
    return axes[: len(chosen)]
