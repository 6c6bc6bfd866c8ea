"""TabSwiftRegressor: in-context regression with a full predictive distribution."""

from __future__ import annotations

from numbers import Integral

import numpy as np
from sklearn.base import RegressorMixin, _fit_context
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import Interval, StrOptions, validate_params
from sklearn.utils.validation import check_is_fitted

from skfm._backend import resolve_device
from skfm._validation import check_target
from skfm.tabular.base import DEFAULT_REGRESSOR_CHECKPOINT, TabSwiftBase
from skfm.tabular.blend import blend_with_boosting, held_out_rows
from skfm.tabular.contexts import sample_in_contexts
from skfm.tabular.finetune import fine_tune_on_table
from skfm.tabular.guard import guard_with_partners
from skfm.tabular.model import buckets
from skfm.tabular.predictive import (
    OUTPUT_TYPES,
    full_output,
    per_batch,
    quantile_levels,
    standardisation,
)


class TabSwiftRegressor(RegressorMixin, TabSwiftBase):
    """Tabular regressor that learns in context and predicts a distribution.

    The model predicts, for every row, probabilities over buckets of the
    standardised target (a bar distribution); the mean, median, mode,
    quantiles and random draws all come from that one forward pass.

    Parameters
    ----------
    n_estimators : int or "auto", default="auto"
        Ensemble members (feature orders and normalisations); their bucket
        probabilities are averaged. ``"auto"``: 8, or 3 on a table blended
        with boosting (see ``large_table``; ``n_estimators_`` says which).
    checkpoint : str, default="tabswift-v2"
        Shipped name, ``.safetensors`` path, ``$SKFM_HOME`` name or
        ``hf://owner/repo/file.safetensors``.
    device : str, default="auto"
        ``"auto"``, ``"cpu"``, ``"cuda"``, ``"cuda:N"`` or ``"mps"``.
    inference_precision : str or torch.dtype, default="auto"
        ``"auto"`` (bf16 on CUDA, fp32 on CPU), ``"fp32"``, ``"bf16"``, ``"fp16"``
        (CUDA only) or ``"fp64"`` (float64 network and inputs; not on MPS).
    early_exit : bool, float or "auto", default="auto"
        Per-sample early exit. ``True`` uses the default agreement
        (``DEFAULT_EXIT_AGREEMENT`` = 0.75), a float in (0, 1] sets it: a
        row leaves after the first layer at which its bucket probabilities
        moved by at most ``1 - agreement`` in total variation over each of
        the last two layers; it keeps the answer of that layer. The rule is
        per row, so predictions never depend on the other rows of the batch.
        What the default saves in depth and costs in R² on 10 small regression
        sets: ``docs/benchmarks/tabswift_regression_exit.md``.
        ``False`` or ``None`` runs every layer. ``"auto"``: every layer, or
        the default agreement on a table blended with boosting
        (``early_exit_`` says which).
    max_layers : int or None, default=None
        Use only the first ``max_layers`` layers.
    max_context_rows : int or "auto", default="auto"
        Each member keeps at most this many context rows (random subsample).
        ``"auto"``: 2,048, or 512 on a table blended with boosting
        (``max_context_rows_`` says which).
    batch_size : int or "auto", default="auto"
        Test rows per forward pass ("auto": from free memory, capped as in
        :class:`TabSwiftClassifier`).
    n_jobs : int or None, default=None
        CPU threads for torch.
    random_state : int, RandomState or None, default=0
        Seeds the ensemble, and fine-tuning's validation split and draws.
    fine_tuning : {"none", "last", "full"}, default="none"
        Fine-tune the network on the training table in ``fit``
        (:mod:`skfm.tabular.finetune`): ``"last"`` trains the registers, the
        prediction head and the last two blocks, ``"full"`` every weight.
        ``validation_fraction`` of the rows (at most 2,048) are held out; the
        network learns from random context/query splits of the other rows,
        with early stopping on the held-out rows, and its weights are kept
        only when they predict these rows better (a higher R² of the
        predicted means, by more than one standard error of the rows'
        paired differences) than the estimator does without fine-tuning,
        the guard's partners included (a kept fine-tuning turns the guard
        off); ``fine_tuned_`` says which. The final context is every
        training row, as without fine-tuning. What it gains and costs on 2
        cores: ``docs/benchmarks/tabswift_finetune.md``.
    time_budget : float, default=60.0
        Seconds that fine-tuning may take (validation and the in-context
        baseline included); the step that ends past them is the last, and
        its epoch is still validated.
    learning_rate : float, default=1e-4
        AdamW learning rate of fine-tuning.
    max_epochs : int, default=100
        Fine-tuning epochs at most (an epoch queries every training row once,
        or more often on small tables, for at least 20 steps).
    n_iter_no_change : int, default=3
        Stop fine-tuning after this many epochs without a higher validation R².
    validation_fraction : float, default=0.2
        Share of the training rows held out to stop fine-tuning and to decide
        whether to keep it.
    verbose : int, default=0
        Show a progress bar of fine-tuning (see :mod:`skfm._progress`).
    large_table : {"blend", "subsample", "retrieve"}, default="blend"
        How a table with more rows than the context holds (2,048, or
        ``max_context_rows`` when set) is used.
        ``"subsample"``: each member reads its own random subsample of
        ``max_context_rows`` rows. ``"blend"``: besides, scikit-learn's
        ``HistGradientBoostingRegressor`` learns from every row, and the
        predicted distribution is moved to a weighted average of both means, TabSwift's
        share chosen on held-out rows that no member reads
        (:mod:`skfm.tabular.blend`);
        ``blend_weight_`` says which. Smaller tables: see ``guard``. With
        the ``"auto"`` sizes, a blend's in-context model is lighter (3
        members of 512 rows with early exit; see :class:`TabSwiftClassifier`).
        ``"retrieve"``: the rows are clustered (k-means, at most 8 clusters of
        about ``max_context_rows`` rows) and each cluster's members read the
        ``max_context_rows`` rows nearest to its centre; a test row is predicted
        by the members of its nearest cluster, whatever else is in the batch
        (:mod:`skfm.tabular.retrieval`; each context's targets standardised on
        its own rows; ``"auto"`` sizes: 4 members of 1,024 rows per cluster).
    guard : bool, default=True
        On a table the context holds (of 10 rows or more, without fine-tuning),
        measure TabSwift (its first two members) against scikit-learn's
        ``RidgeCV`` and (50 rows or more) ``HistGradientBoostingRegressor`` (40
        rounds at a learning rate of 0.25) by 5-fold cross-fitting on the
        training rows, move the predicted distribution's mean towards one
        partner's prediction by the share this chooses (the
        one-standard-error rule keeps TabSwift alone unless a partner helps
        beyond noise), and scale its spread so that its central intervals
        cover the out-of-fold targets (cross-conformal calibration):
        :mod:`skfm.tabular.guard`. ``blend_weight_``, ``linear_``,
        ``booster_`` and ``interval_scale_`` say what was chosen. ``False``:
        the in-context model alone (as ``TabMGPRegressor``'s rollouts always
        draw).

    Attributes
    ----------
    n_features_in_ : int
    feature_names_in_ : ndarray of shape (n_features_in_,)
    y_mean_, y_scale_ : float
        Standardisation of the target (the buckets live on that scale), from the
        rows the members may read (all but the held-out rows of a blend).
    constant_y_ : float or None
        The target when it is constant: every point prediction, quantile and
        draw is then exactly this value, without running the network (whose
        bucket probabilities ``predict_distribution`` and the ``"full"``
        output still give); else None.
    fine_tuned_ : bool
        Whether the fine-tuned weights are used (False without fine-tuning,
        and when they did not beat the checkpoint on the validation rows).
    fine_tuned_weights_ : dict of str to ndarray or None
        The parameters that fine-tuning trained (float32), when they are used.
    validation_scores_ : dict or None
        ``{"in_context": ..., "fine_tuned": ...}``: the R² of the held-out
        rows' predicted means with the checkpoint's weights and with the
        best fine-tuned ones; None when nothing was trained.
    n_epochs_ : int
        Fine-tuning epochs run (0 without fine-tuning).
    blend_weight_ : float
        TabSwift's share of the predicted mean (1.0: TabSwift alone), against
        the booster's on a large table, the ridge's on one the context holds.
    blend_scores_ : dict or None
        ``{"tabswift": ..., "boosting": ..., "blend": ...}`` on a large table:
        the negative mean squared error of the held-out rows for TabSwift, the
        booster and the chosen blend; with the guard, the same cross-fitted on
        every row, with ``"linear"`` for the ridge (and ``"boosting"`` from
        50 rows on); None when neither was considered.
    booster_ : HistGradientBoostingRegressor or None
        The booster, fitted on every row, when it is in the prediction
        (``blend_weight_ < 1``) of a large table or of the guard.
    linear_ : Pipeline or None
        The guard's ridge, fitted on every row, when it is in the
        prediction (``blend_weight_ < 1``).
    interval_scale_ : float
        The guard's factor of the predictive spread about the mean (1.0
        without the guard).
    n_estimators_, max_context_rows_, early_exit_
        The sizes this fit used (``"auto"`` resolved; with retrieval, per cluster).
    members_, member_groups_, retrieved_, retrieval_
        The ensemble recipes and their groups, as :class:`TabSwiftClassifier`'s.

    Examples
    --------
    >>> from sklearn.datasets import load_diabetes
    >>> from skfm import TabSwiftRegressor
    >>> X, y = load_diabetes(return_X_y=True)
    >>> reg = TabSwiftRegressor(n_estimators=2).fit(X[:300], y[:300])
    >>> reg.predict(X[300:]).shape
    (142,)
    >>> reg.predict(X[300:], output_type="quantiles", quantiles=[0.1, 0.9]).shape
    (142, 2)
    >>> reg.sample_y(X[300:305], n_samples=3, random_state=0).shape
    (5, 3)
    >>> full = reg.predict(X[300:], output_type="full", quantiles=[0.1, 0.9])
    >>> sorted(full), full["quantiles"].shape, full["probabilities"].shape
    (['borders', 'mean', 'median', 'mode', 'probabilities', 'quantiles'], (142, 2), (142, 64))
    >>> bool((full["mean"] == reg.predict(X[300:])).all())
    True
    """

    _task = "regression"
    _parameter_constraints: dict = {**TabSwiftBase._parameter_constraints, "guard": ["boolean"]}

    def __init__(
        self,
        n_estimators="auto",
        *,
        checkpoint=DEFAULT_REGRESSOR_CHECKPOINT,
        device="auto",
        inference_precision="auto",
        early_exit="auto",
        max_layers=None,
        max_context_rows="auto",
        batch_size="auto",
        n_jobs=None,
        random_state=0,
        fine_tuning="none",
        time_budget=60.0,
        learning_rate=1e-4,
        max_epochs=100,
        n_iter_no_change=3,
        validation_fraction=0.2,
        verbose=0,
        large_table="blend",
        guard=True,
    ):
        self.n_estimators = n_estimators
        self.checkpoint = checkpoint
        self.device = device
        self.inference_precision = inference_precision
        self.early_exit = early_exit
        self.max_layers = max_layers
        self.max_context_rows = max_context_rows
        self.batch_size = batch_size
        self.n_jobs = n_jobs
        self.random_state = random_state
        self.fine_tuning = fine_tuning
        self.time_budget = time_budget
        self.learning_rate = learning_rate
        self.max_epochs = max_epochs
        self.n_iter_no_change = n_iter_no_change
        self.validation_fraction = validation_fraction
        self.verbose = verbose
        self.large_table = large_table
        self.guard = guard

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y):
        """Store ``X, y`` as the context and cache the model's keys/values.

        Parameters
        ----------
        X : array-like or DataFrame of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)
            Finite numeric targets.

        Returns
        -------
        self : TabSwiftRegressor
        """
        y = check_target(self, y, numeric=True)
        split = held_out_rows(self, len(y), None)  # None: no blend ahead
        self._resolve_sizes(blended=split is not None, n_rows=len(y))
        pool = None if split is None else split[0]  # the rows the members may read
        self._use_fine_tuning(fine_tune_on_table(self, X, y, None))
        self.y_mean_, self.y_scale_ = standardisation(y if pool is None else y[pool])
        self.constant_y_ = float(y[0]) if (y == y[0]).all() else None
        y_std = (y - self.y_mean_) / self.y_scale_
        self._store_context(X, None, y_std, pool=pool)
        self.interval_scale_ = 1.0  # no guard yet
        self._use_partner(blend_with_boosting(self, X, y, split))
        if split is None:
            self._use_partner(guard_with_partners(self, y))
        return self

    def _use_partner(self, outcome) -> None:
        super()._use_partner(outcome)
        self.interval_scale_ = outcome.scale

    def _targets(self, member, rows) -> np.ndarray:
        return (self.y_context_[rows] - member.target_mean) / member.target_scale

    def _read_targets_locally(self, group) -> None:
        # the model reads targets standardised on its context (as pretrained)
        mean, scale = standardisation(self.y_context_[group[0].rows])
        for member in group:
            member.target_mean, member.target_scale = mean, scale

    def _borders(self, n_buckets: int, member=None) -> np.ndarray:
        """Bucket borders on the target's scale (as ``member`` reads its targets)."""
        standardised = buckets.bucket_borders(n_buckets)
        if member is not None:
            standardised = standardised * member.target_scale + member.target_mean
        return standardised * self.y_scale_ + self.y_mean_

    def predict_distribution(self, X) -> tuple[np.ndarray, np.ndarray]:
        """Bucket probabilities and bucket borders on the target's own scale.

        The in-context model's own distribution: with a booster in the blend
        (``blend_weight_ < 1``), :meth:`predict` and :meth:`sample_y` move each
        row's distribution by its shift (see :mod:`skfm.tabular.blend`); this does not.

        Returns
        -------
        probs : ndarray of shape (n_samples, n_buckets)
        borders : ndarray of shape (n_buckets + 1,)
        """
        n_buckets = self._network(resolve_device(self.device)).config.n_buckets
        common = self._borders(n_buckets)
        probs = per_batch(  # retrieved contexts have their own borders: on the common ones
            self, self._rows(X),
            lambda probs, borders, batch: buckets.rebin(probs, borders, common), blended=False)
        return probs, common

    @validate_params(
        {"output_type": [StrOptions(set(OUTPUT_TYPES))], "quantiles": ["array-like", None]},
        prefer_skip_nested_validation=True,
    )
    def predict(self, X, output_type="mean", quantiles=None):
        """Point predictions, quantiles, or all of them and the distribution in one pass.

        Parameters
        ----------
        X : array-like or DataFrame of shape (n_samples, n_features)
        output_type : {"mean", "median", "mode", "quantiles", "full"}, default="mean"
            ``"full"``: a dict with ``"mean"``, ``"median"``, ``"mode"`` (n,),
            ``"quantiles"`` (n, len(quantiles)), what the other output types
            give, and ``"probabilities"`` (n, n_buckets) over ``"borders"``
            (n_buckets + 1,), what :meth:`predict_distribution` gives.
        quantiles : list of float, default=None
            Levels in (0, 1) for ``output_type="quantiles"`` or ``"full"``
            (default 0.1, 0.5, 0.9).

        Returns
        -------
        ndarray of shape (n_samples,) or (n_samples, len(quantiles)), or dict
        """
        qs = quantile_levels(output_type, quantiles)
        rows = self._rows(X)
        if output_type == "full":
            n_buckets = self._network(resolve_device(self.device)).config.n_buckets
            full = full_output(self, rows, qs, self._borders(n_buckets))
            return full if self.constant_y_ is None else {  # see constant_y_
                k: v if k in ("probabilities", "borders") else np.full_like(v, self.constant_y_)
                for k, v in full.items()}
        if self.constant_y_ is not None:  # exactly, without running the network
            return np.full((len(rows), *([len(qs)] if output_type == "quantiles" else [])),
                           self.constant_y_)
        if output_type == "mean" and self.blend_weight_ == 0.0:
            return self._partner_outputs(rows)  # the network's share is nil: do not run it
        if output_type in ("mean", "mode"):
            statistic = getattr(buckets, output_type)
            return per_batch(self, rows, lambda probs, borders, batch: statistic(probs, borders))
        values = per_batch(
            self, rows, lambda probs, borders, batch: buckets.quantiles(probs, borders, qs))
        return values[:, 0] if output_type == "median" else values

    @validate_params(
        {"n_samples": [Interval(Integral, 1, None, closed="left")],
         "random_state": ["random_state"]},
        prefer_skip_nested_validation=True,
    )
    def sample_y(self, X, n_samples=1, random_state=None):
        """Draws from the predictive distribution of each row.

        Returns
        -------
        ndarray of shape (n_samples_X, n_samples)
        """
        rows = self._rows(X)
        if self.constant_y_ is not None:  # exactly, without running the network
            return np.full((len(rows), n_samples), self.constant_y_)
        rng = np.random.default_rng(check_random_state(random_state).randint(2**31 - 1))
        u, within = rng.random((len(rows), n_samples)), rng.random((len(rows), n_samples))
        return per_batch(self, rows, lambda probs, borders, batch: buckets.draw(
            probs, borders, u[batch], within[batch]))

    @validate_params(
        {"context_rows": ["array-like"], "context_y": ["array-like"],
         "query_rows": ["array-like"], "random_state": ["random_state", np.random.Generator]},
        prefer_skip_nested_validation=True,
    )
    def sample_y_in_contexts(self, context_rows, context_y, query_rows, random_state=None):
        """Draws of ``y`` for fitted rows, each set given its own context, many contexts at once.

        A context is a multiset of the rows passed to ``fit`` (by position, repeats allowed)
        with targets of its own; for each context the model predicts the rows ``query_rows``
        as if it had been refitted on that context, and one ``y`` is drawn for each. All
        contexts share each forward pass (contexts x ensemble members form the batch), in
        batches sized from free memory, so many contexts cost far less than as many refits.
        This is the predictive that :class:`~skfm.TabMGPRegressor` resamples from.

        As in a refit, each context is standardised on its own targets (mean and standard
        deviation) and one longer than ``max_context_rows`` is cut to a random subset of that
        many rows. Unlike a refit, the members keep the feature normalisations (and feature
        orders) fitted on the rows passed to ``fit``: every row of a context is one of those,
        so the normalisations see no new values. The guard's choices are kept too, and
        applied as :meth:`sample_y` applies them: each draw's distance to the in-context
        mean is scaled by ``interval_scale_``, and where the guard chose the linear model
        its share ``1 - blend_weight_`` moves the draw towards that model refitted on the
        context (a booster partner is not refitted per context, too slow: its share is
        left out of these draws).

        Parameters
        ----------
        context_rows : array-like of int, shape (n_contexts, n_context_rows)
            Positions, among the rows passed to ``fit``, of every context's rows.
        context_y : array-like of float, shape (n_contexts, n_context_rows)
            The targets of those rows, per context (e.g. imputed ones).
        query_rows : array-like of int, shape (n_contexts, n_queries)
            Positions, among the rows passed to ``fit``, of the rows to draw ``y`` for, per
            context.
        random_state : int, RandomState, numpy Generator or None, default=None
            Seeds the draws (and the subsets of long contexts). A ``numpy.random.Generator``
            is used as it is, and advanced.

        Returns
        -------
        ndarray of shape (n_contexts, n_queries)
            One draw of ``y`` per query row and context, on the target's scale.

        See Also
        --------
        sample_y : draws for new rows, given the fitted context.

        Examples
        --------
        >>> import numpy as np
        >>> from skfm import TabSwiftRegressor
        >>> rng = np.random.default_rng(0)
        >>> X = rng.normal(size=(40, 2))
        >>> y = X[:, 0] + 0.1 * rng.normal(size=40)
        >>> reg = TabSwiftRegressor(n_estimators=1).fit(X, y)
        >>> contexts = rng.integers(0, 40, size=(5, 40))  # 5 bootstrap resamples of the rows
        >>> draws = reg.sample_y_in_contexts(contexts, y[contexts], contexts[:, :3],
        ...                                  random_state=0)
        >>> draws.shape
        (5, 3)
        """
        check_is_fitted(self)
        return sample_in_contexts(self, context_rows, context_y, query_rows, random_state)
