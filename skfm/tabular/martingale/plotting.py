"""plot_posterior: histograms of a fitted TabMGPRegressor's marginal posteriors."""

from __future__ import annotations

import numpy as np
from sklearn.utils.validation import check_is_fitted

from skfm._optional import import_matplotlib_pyplot


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
        One per component; a new figure with a grid of panels when ``None`` (matplotlib, the
        ``plot`` extra: ``pip install 'skfm[plot]'``).

    Returns
    -------
    axes : ndarray of matplotlib Axes

    Examples
    --------
    >>> import numpy as np
    >>> from skfm import TabMGPRegressor, TabSwiftRegressor
    >>> from skfm.tabular import plot_posterior
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
    check_is_fitted(estimator)
    lower, upper = estimator.credible_interval(level)
    all_names = list(estimator.posterior_names_)
    chosen = all_names if names is None else list(names)
    missing = [n for n in chosen if n not in all_names]
    if missing:
        raise ValueError(f"unknown component(s) {missing}; the posterior has {all_names}")
    if axes is None:
        plt = import_matplotlib_pyplot()
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
