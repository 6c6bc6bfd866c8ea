"""TabMGP: the martingale posterior of a loss-defined estimand, by predictive resampling.

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

The modules: :mod:`~skfm.tabular.martingale.estimands` (``theta`` on a completed data set),
:mod:`~skfm.tabular.martingale.resampling` (the rollouts and the predictive samplers),
:mod:`~skfm.tabular.martingale.credible` (credible intervals and ellipsoids),
:mod:`~skfm.tabular.martingale.regressor` (:class:`TabMGPRegressor`) and
:mod:`~skfm.tabular.martingale.plotting` (:func:`plot_posterior`).
"""

from skfm.tabular.martingale.credible import CredibleEllipsoid
from skfm.tabular.martingale.estimands import ESTIMANDS
from skfm.tabular.martingale.plotting import plot_posterior
from skfm.tabular.martingale.regressor import TabMGPRegressor
from skfm.tabular.martingale.resampling import predictive_resampling

__all__ = [
    "ESTIMANDS",
    "CredibleEllipsoid",
    "TabMGPRegressor",
    "plot_posterior",
    "predictive_resampling",
]
