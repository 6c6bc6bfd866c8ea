"""TabSwiftClassifier: in-context classification with a shipped checkpoint."""

from __future__ import annotations

from numbers import Real

import numpy as np
from scipy.special import log_softmax, softmax
from sklearn.base import ClassifierMixin, _fit_context
from sklearn.utils._param_validation import Interval
from sklearn.utils.validation import check_is_fitted

from skfm._validation import check_target, class_labels, probability_rows
from skfm.tabular.base import DEFAULT_CLASSIFIER_CHECKPOINT, TabSwiftBase
from skfm.tabular.blend import blend_with_boosting, held_out_rows
from skfm.tabular.finetune import fine_tune_on_table
from skfm.tabular.guard import guard_with_partners


class TabSwiftClassifier(ClassifierMixin, TabSwiftBase):
    """Tabular classifier that learns in context, without training.

    ``fit`` stores the (encoded) training rows as the context of a pretrained
    TabSwift transformer and caches its per-layer keys and values;
    ``predict_proba`` reads the labels of new rows off one forward pass per
    ensemble member. Pandas input with categorical or string columns and
    missing values is accepted as it is.

    Parameters
    ----------
    n_estimators : int or "auto", default="auto"
        Ensemble members; ``"auto"``: 8, or 3 on a table blended with boosting
        (see ``large_table``; ``n_estimators_`` says which). Each sees its own
        feature order, normalisation (z-score or Yeo-Johnson) and cyclic class
        shift; their logits are averaged. More members: better and slower (linear cost). With more
        classes than the checkpoint's head has outputs (10 for the shipped
        one), each member instead merges the classes into 10 groups by a
        random output code, and enough members are used (at least 2 *
        ceil(log(n_classes) / log(10)) + 1) for their codes to separate every
        pair of classes three times; class scores are the members' mean
        log-probabilities of the groups holding each class.
    checkpoint : str, default="tabswift-v3"
        Shipped checkpoint name, path to a ``.safetensors`` file (with its
        ``.json`` card beside it), a name in ``$SKFM_HOME``, or a
        ``hf://owner/repo/file.safetensors`` hub id (needs network and
        ``huggingface_hub``).
    device : str, default="auto"
        ``"auto"``, ``"cpu"``, ``"cuda"``, ``"cuda:N"`` or ``"mps"``.
    inference_precision : str or torch.dtype, default="auto"
        ``"auto"`` (bf16 autocast on CUDA, fp32 on CPU), ``"fp32"``, ``"bf16"``,
        ``"fp16"`` (CUDA only) or ``"fp64"`` (a float64 copy of the network and
        its inputs; not on MPS, which has no float64).
    softmax_temperature : float, default=0.9
        Temperature of the final softmax; below 1 sharpens probabilities.
    average_logits : bool, default=True
        Average member logits (True) or member probabilities (False).
    early_exit : bool, float or "auto", default="auto"
        Per-sample early exit. ``True`` uses the default agreement
        (``DEFAULT_EXIT_AGREEMENT`` = 0.75), a float in (0, 1] sets it: a
        row leaves after the first layer at which its class probabilities
        moved by at most ``1 - agreement`` in total variation over each of
        the last two layers; it keeps the answer of that layer. The rule is
        per row, so predictions never depend on the other rows of the batch.
        What the default saves in depth and costs in ROC-AUC on OpenML-CC18:
        ``docs/benchmarks/tabswift_early_exit.md``.
        ``False`` or ``None`` runs every layer. ``"auto"``: every layer, or
        the default agreement on a table blended with boosting
        (``early_exit_`` says which).
    max_layers : int or None, default=None
        Use only the first ``max_layers`` layers (anytime inference).
    max_context_rows : int or "auto", default="auto"
        Each member keeps at most this many context rows (stratified
        subsample). ``"auto"``: 2,048 (the checkpoint's pretraining
        curriculum ends at 2,048 rows), or 512 on a table blended with
        boosting (``max_context_rows_`` says which).
    batch_size : int or "auto", default="auto"
        Test rows per forward pass; "auto" sizes it from free memory, up to
        8,192 rows (on CPU up to 4,096 rows x ``n_estimators``, at least 1,024,
        which keeps activations in cache). On CUDA out-of-memory the batch is
        halved and retried. The batch size changes speed and memory only
        (outputs agree to float rounding).
    n_jobs : int or None, default=None
        CPU threads for torch (-1: all cores; None: torch's default).
    random_state : int, RandomState or None, default=0
        Seeds the ensemble's feature orders and subsamples, and fine-tuning's
        validation split and draws.
    fine_tuning : {"none", "last", "full"}, default="none"
        Fine-tune the network on the training table in ``fit``
        (:mod:`skfm.tabular.finetune`): ``"last"`` trains the registers, the
        prediction head and the last two blocks, ``"full"`` every weight.
        ``validation_fraction`` of the rows (at most 2,048, stratified by class)
        are held out; the network learns from random context/query splits
        of the other rows, with early stopping on the held-out rows, and its
        weights are kept only when they predict these rows better (a lower
        log loss, by more than one standard error of the rows' paired
        differences) than the estimator does without fine-tuning, the
        guard's partners included (a kept fine-tuning turns the guard off);
        ``fine_tuned_`` says which. The final context is every training row,
        as without fine-tuning. What it gains and costs on 2 cores:
        ``docs/benchmarks/tabswift_finetune.md``.
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
        Stop fine-tuning after this many epochs without a lower validation loss.
    validation_fraction : float, default=0.2
        Share of the training rows held out to stop fine-tuning and to decide
        whether to keep it.
    verbose : int, default=0
        Show a progress bar of fine-tuning (see :mod:`skfm._progress`).
    large_table : {"blend", "subsample", "retrieve"}, default="blend"
        How a table with more rows than the context holds (2,048, or
        ``max_context_rows`` when set) is used.
        ``"subsample"``: each member reads its own stratified subsample of
        ``max_context_rows`` rows. ``"blend"``: besides, scikit-learn's
        ``HistGradientBoostingClassifier`` learns from every row, and the
        predicted probabilities are a weighted average of both, TabSwift's
        share chosen on held-out rows that no member reads
        (:mod:`skfm.tabular.blend`);
        ``blend_weight_`` says which. Smaller tables: see ``guard``. With
        the ``"auto"`` sizes, a blend's in-context model is lighter (3
        members of 512 rows with early exit): on nine real tables of 10,000
        to 40,000 rows its mean score was above HistGradientBoosting's (0.673
        against 0.667), at about a fifth of the time of 8 members of 2,048 rows
        (``docs/benchmarks/tabswift_large.md``).
        ``"retrieve"``: the rows are clustered (k-means, at most 8 clusters of
        about ``max_context_rows`` rows) and each cluster's members read the
        ``max_context_rows`` rows nearest to its centre; a test row is predicted
        by the members of its nearest cluster, whatever else is in the batch
        (:mod:`skfm.tabular.retrieval`; ``"auto"`` sizes: 4 members of 1,024
        rows per cluster). On that suite it was ahead of random contexts of the
        same size on 2 tables of 9 and behind on the mean.
    guard : bool, default=True
        On a table the context holds (of 50 rows or more, two classes or more,
        without fine-tuning), measure TabSwift (its first two members) against
        scikit-learn's ``HistGradientBoostingClassifier`` (40 rounds at a
        learning rate of 0.25) and ``LogisticRegression`` by 5-fold
        cross-fitting on the training rows and predict the weighted average
        of TabSwift and one of them: the candidate of largest TabSwift share
        whose cross-fitted log loss is within one standard error of the best
        candidate's (:mod:`skfm.tabular.guard`); ``blend_weight_``,
        ``booster_`` and ``linear_`` say which. Its effect on OpenML-CC18 and
        on tables nobody tuned for: ``docs/benchmarks/tabswift_cc18.md``,
        ``docs/benchmarks/heldout_tables.md``. ``False``: the in-context
        model alone.

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
    n_features_in_ : int
    feature_names_in_ : ndarray of shape (n_features_in_,)
        Only when ``X`` has string column names.
    members_ : list of Member
        The fitted ensemble recipes (each with its ``class_code``).
    member_groups_ : ndarray of int
        Group ``g`` (retrieval's cluster ``g``; one group otherwise) is
        ``members_[member_groups_[g]:member_groups_[g + 1]]``.
    retrieved_ : bool
        Whether the contexts were retrieved (``large_table="retrieve"`` on a
        table larger than the context).
    retrieval_ : Retrieval or None
        The z-scoring and cluster centres that send a row to its group.
    fine_tuned_ : bool
        Whether the fine-tuned weights are used (False without fine-tuning,
        and when they did not beat the checkpoint on the validation rows).
    fine_tuned_weights_ : dict of str to ndarray or None
        The parameters that fine-tuning trained (float32), when they are used.
    validation_scores_ : dict or None
        ``{"in_context": ..., "fine_tuned": ...}``: the negative log loss of
        the held-out rows with the checkpoint's weights and with the best
        fine-tuned ones (higher is better); None when nothing was trained.
    n_epochs_ : int
        Fine-tuning epochs run (0 without fine-tuning).
    blend_weight_ : float
        TabSwift's share of the predictions (1.0: TabSwift alone), chosen by
        the blend of a large table or the guard of one the context holds.
    blend_scores_ : dict or None
        ``{"tabswift": ..., "boosting": ..., "blend": ...}``: the negative
        log loss for TabSwift, the booster and the chosen blend, of the
        held-out rows (large table); with the guard, cross-fitted on every
        row, and ``"linear"`` for the logistic regression as well; None when
        neither was considered.
    booster_ : HistGradientBoostingClassifier or None
        The booster, fitted on every row, when it is in the prediction
        (``blend_weight_ < 1``).
    linear_ : Pipeline or None
        The guard's logistic regression, fitted on every row, when it is in
        the prediction (``blend_weight_ < 1``).
    n_estimators_, max_context_rows_, early_exit_
        The sizes this fit used (``"auto"`` resolved; with retrieval, per cluster).

    See Also
    --------
    TabSwiftRegressor : the same model for regression.

    Notes
    -----
    A category of a categorical or text column that ``fit`` did not see is
    accepted at prediction without a warning and read as a missing value (as
    scikit-learn's encoders do with ``handle_unknown="ignore"``): the row is
    predicted as if that cell were empty, and the guard's or the blend's
    partner reads it as missing too. Check new categories yourself where they
    signal a change in the data.

    Examples
    --------
    >>> from sklearn.datasets import load_breast_cancer
    >>> from sklearn.model_selection import train_test_split
    >>> from skfm import TabSwiftClassifier
    >>> X, y = load_breast_cancer(return_X_y=True)
    >>> X_train, X_test, y_train, y_test = train_test_split(X, y, random_state=0)
    >>> clf = TabSwiftClassifier(n_estimators=2).fit(X_train, y_train)
    >>> clf.predict_proba(X_test).shape
    (143, 2)
    >>> bool(clf.score(X_test, y_test) > 0.85)
    True
    """

    _task = "classification"

    _parameter_constraints: dict = {
        **TabSwiftBase._parameter_constraints,
        "softmax_temperature": [Interval(Real, 0, None, closed="neither")],
        "average_logits": ["boolean"],
        "guard": ["boolean"],
    }

    def __init__(
        self,
        n_estimators="auto",
        *,
        checkpoint=DEFAULT_CLASSIFIER_CHECKPOINT,
        device="auto",
        inference_precision="auto",
        softmax_temperature=0.9,
        average_logits=True,
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
        self.softmax_temperature = softmax_temperature
        self.average_logits = average_logits
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

        Returns
        -------
        self : TabSwiftClassifier
        """
        y = check_target(self, y)
        self.classes_, y_codes = class_labels(y)
        split = held_out_rows(self, len(y), y_codes)  # None: no blend ahead
        self._resolve_sizes(blended=split is not None, n_rows=len(y))
        self._use_fine_tuning(fine_tune_on_table(self, X, y, y_codes))
        self._store_context(X, y_codes, y_codes, len(self.classes_),
                            pool=None if split is None else split[0])
        self._use_partner(blend_with_boosting(self, X, y_codes, split))
        if split is None:
            self._use_partner(guard_with_partners(self, y_codes))
        return self

    def _targets(self, member, rows) -> np.ndarray:
        return member.class_code[self.y_context_[rows]]

    def _n_outputs(self) -> int:
        # the members' codes use every output in 0..G-1: G = n_classes, or the head's size
        return 1 + max(int(member.class_code.max()) for member in self.members_)

    def predict_proba(self, X):
        """Class probabilities, shape (n_samples, n_classes): float64 rows that sum to one."""
        rows, n_outputs = self._rows(X), self._n_outputs()
        partner = self._partner_outputs(rows)
        if partner is not None and self.blend_weight_ == 0.0:
            return probability_rows(partner)  # the network's share is nil: do not run it
        proba = self._predict_batches(
            rows, lambda logits, depth, batch, members: self._proba(logits, n_outputs, members)
        )
        if partner is not None:
            proba = self.blend_weight_ * proba + (1.0 - self.blend_weight_) * partner
        return probability_rows(proba)

    def _proba(self, logits: np.ndarray, n_outputs: int, members=None) -> np.ndarray:
        """Combine the logits (B, n, C_max) of ``members`` (default: all) into
        probabilities (n, K)."""
        output_codes = len(self.classes_) > n_outputs  # classes share the head's outputs
        scaled = logits[:, :, :n_outputs] / self.softmax_temperature  # (B, n, G)
        if output_codes:
            scaled = log_softmax(scaled, axis=-1)
        aligned = np.stack(
            [member_out[:, member.class_code] for member_out, member in
             zip(scaled, self.members_ if members is None else members, strict=True)]
        )  # (B, n, K): column c is original class c
        if output_codes or self.average_logits:
            return softmax(aligned.mean(0), axis=-1)
        return softmax(aligned, axis=-1).mean(0)

    def predict(self, X):
        """Most probable class for each row, shape (n_samples,)."""
        check_is_fitted(self)
        return self.classes_[self.predict_proba(X).argmax(1)]
