"""TabMGPRegressor: a regressor whose fit draws the martingale posterior of an estimand."""

from __future__ import annotations

from numbers import Integral, Real

import numpy as np
from sklearn.base import BaseEstimator, RegressorMixin, _fit_context, clone
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import (
    HasMethods,
    Interval,
    RealNotInt,
    StrOptions,
    validate_params,
)
from sklearn.utils.validation import check_is_fitted

from skfm._validation import check_target
from skfm.tabular.encoding import TabularEncoder, tabular_tags
from skfm.tabular.martingale.credible import (
    LEVEL_CONSTRAINT,
    CredibleEllipsoid,
    credible_ellipsoid,
    equal_tailed_interval,
)
from skfm.tabular.martingale.estimands import (
    ESTIMANDS,
    check_draw,
    component_names,
    theta_function,
)
from skfm.tabular.martingale.resampling import predictive_for, predictive_resampling
from skfm.tabular.regressor import TabSwiftRegressor


class TabMGPRegressor(RegressorMixin, BaseEstimator):
    """In-context regressor with a martingale posterior for a loss-defined estimand.

    ``fit`` fits the base model on ``(X, y)`` for point predictions, then draws the posterior
    of ``theta`` by predictive resampling (see :mod:`skfm.tabular.martingale`): ``n_rollouts``
    times, ``horizon`` rows are imputed, ``x`` by a Bayesian bootstrap of all rows so far and
    ``y`` from the base model's predictive given the growing context, and ``theta`` is
    minimised on the completed data. No prior or likelihood for ``theta`` is needed.

    Parameters
    ----------
    estimator : regressor or None, default=None
        Base model, cloned in ``fit``. ``None`` means
        ``TabSwiftRegressor(n_estimators=1, large_table="subsample")``: one member of the
        in-context model with its guard (its rollouts are in-context draws, moved as the
        guard moves its predictions: the spread scaled by ``interval_scale_`` and, where the
        guard chose the ridge, the location moved towards the ridge refitted on each
        rollout's rows). Coverage with the guard: ``docs/benchmarks/tabmgp_coverage_guard.md``
        (``tabswift-v3``) and ``tabmgp_coverage_guard_v2.md`` (the default checkpoint);
        the model alone: ``tabmgp_coverage_v3.md``, ``_v2``, ``_block1`` and
        ``tabmgp_coverage.md``. The 8 members of ``TabSwiftRegressor()`` cost
        proportionally more (time per fit with one and with eight members:
        ``docs/benchmarks/tabmgp_timing.md``). A TabSwiftRegressor runs all
        rollouts batched on its ``device`` with its ``n_estimators`` members (cost grows with
        both); any other regressor needs
        ``sample_y(X, n_samples, random_state)`` and is refitted per rollout and block.
        ``guard=False`` draws from the in-context model alone. A
        ``TabSwiftRegressor(large_table="blend")`` fitted on more than
        ``max_context_rows`` rows blends its point predictions (``predict``) with gradient
        boosting, but its rollouts draw from the in-context model alone (the booster is not
        refitted per rollout), as a booster chosen by the guard on a larger table.
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
        narrower posteriors. Time per fit, coverage and width of each block size on 100 rows
        of 5 features: ``docs/benchmarks/tabmgp_timing.md``.
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
    >>> from skfm import TabMGPRegressor, TabSwiftRegressor
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

    _parameter_constraints: dict = {
        "estimator": [HasMethods(["fit", "sample_y"]), None],
        "estimand": [StrOptions(set(ESTIMANDS)), callable],
        "quantile": [Interval(Real, 0, 1, closed="neither")],
        "n_rollouts": [Interval(Integral, 2, None, closed="left")],
        "horizon": [Interval(Integral, 1, None, closed="left")],
        "block_size": [
            Interval(Integral, 1, None, closed="left"),
            Interval(RealNotInt, 0, 1, closed="neither"),
        ],
        "random_state": ["random_state"],
        "verbose": ["verbose"],
    }

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

    @_fit_context(prefer_skip_nested_validation=False)  # the base model checks its own
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
        y = check_target(self, y, numeric=True)
        self.encoder_ = TabularEncoder().fit(X, self)
        X_enc = self.encoder_.transform(X, self)
        if len(X_enc) != len(y):
            raise ValueError(f"X has {len(X_enc)} rows but y has {len(y)}; they must match.")
        if len(y) < 2:
            raise ValueError(f"TabMGPRegressor needs at least 2 rows, got n_samples={len(y)}")
        feature_names = [str(c) for c in getattr(self, "feature_names_in_", [])] or [
            f"x{j}" for j in range(self.n_features_in_)
        ]
        theta_fn, names = theta_function(
            self.estimand, self.quantile, X, X_enc, self.encoder_, feature_names
        )
        base = (TabSwiftRegressor(n_estimators=1, large_table="subsample")
                if self.estimator is None else self.estimator)
        self.estimator_ = clone(base).fit(X, y)
        draw_y = predictive_for(self.estimator_, X)
        rng = np.random.default_rng(check_random_state(self.random_state).randint(2**31 - 1))
        rows, targets = predictive_resampling(
            draw_y, y, self.n_rollouts, self.horizon, self.block_size, rng, self.verbose
        )
        first = theta_fn(np.arange(len(y)), y)
        self.estimate_ = check_draw(first, None, self.estimand)
        p = self.estimate_.size
        self.posterior_samples_ = np.stack([
            check_draw(theta_fn(r, t), p, self.estimand)
            for r, t in zip(rows, targets, strict=True)
        ])
        self.posterior_names_ = component_names(names, first, p)
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

    @validate_params({"level": LEVEL_CONSTRAINT}, prefer_skip_nested_validation=True)
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
        return equal_tailed_interval(self.posterior_samples_, float(level))

    @validate_params({"level": LEVEL_CONSTRAINT}, prefer_skip_nested_validation=True)
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
        return credible_ellipsoid(self.posterior_samples_, float(level))

    def __sklearn_tags__(self):
        return tabular_tags(super().__sklearn_tags__())
