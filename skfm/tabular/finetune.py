"""Fine-tuning TabSwift on the training table, kept only when it clearly beats the estimator
without it.

``fit`` with ``fine_tuning="last"`` or ``"full"`` holds out a validation split
(stratified for classifiers) and fits a copy of the estimator, without
fine-tuning, on the rest: its validation loss is the bar to beat (log loss
for classifiers; for regressors ``1 - R²`` of the predicted means, the loss
behind ``score``, as the bucket log-likelihood can improve while the means
get worse). The copy keeps the estimator's guard, whose partners a kept
fine-tuning gives up (:mod:`skfm.tabular.guard`), so fine-tuning must beat
what the estimator would predict without it. A second copy without the
guard holds the in-context network's members and context, which training
reads.

The network is then trained with skfm's early-stopping loop
(:func:`skfm._finetune.fine_tune`) on random context/query splits of the
training rows. An epoch queries every training row once (as many times as it
takes for ``MIN_STEPS_PER_EPOCH`` steps on small tables); every step takes
``QUERY_ROWS`` query rows in the epoch's order, a random context of at most
``CONTEXT_ROWS`` other rows and ``MEMBERS_PER_STEP`` random ensemble members
of the unguarded copy (their feature orders, normalisations and class shifts
are the augmentation), and minimises the cross-entropy of the query rows'
classes or target buckets. After every epoch that copy predicts the validation rows with
the network as it is, through its usual KV cache; the best epoch is restored.
Its weights are kept only when they beat the bar on the validation rows by
more than one standard error of the paired per-row difference of their losses
(the one-standard-error rule): the best epoch was chosen on these same rows,
so its loss there flatters it, and on a few hundred rows a small drop is
noise.

Only the parameters that trained are kept, once, as float32 numpy arrays;
the estimator rebuilds the network from its checkpoint and these
(:func:`~skfm.tabular.base.tuned_model`).
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F
from sklearn.base import clone
from sklearn.model_selection import train_test_split
from sklearn.utils import _safe_indexing
from sklearn.utils.validation import check_consistent_length

from skfm._backend import draw_seed, resolve_device, threads, to_device, torch_generator
from skfm._finetune import FineTuneConfig, fine_tune, param_groups, stratified_split
from skfm._selection import beats_with_margin
from skfm._weights import fresh_model
from skfm.tabular.base import TABSWIFT
from skfm.tabular.losses import row_log_losses
from skfm.tabular.model import TabSwift, buckets

LAST_BLOCKS = 2  # blocks that train with fine_tuning="last", besides the registers and heads
QUERY_ROWS = 128  # query rows per step (fewer on small tables: a fifth of the training rows)
CONTEXT_ROWS = 512  # context rows per step at most (and at most the members' max_context_rows_)
MEMBERS_PER_STEP = 2
MIN_STEPS_PER_EPOCH = 20  # validating after fewer steps would cost more than the steps
MAX_VALIDATION_ROWS = 2048
WEIGHT_DECAY = 0.01
CLIP_GRAD_NORM = 1.0
TOL = 1e-4  # smallest drop of the validation loss that counts as progress (early stopping)


@dataclass(frozen=True)
class FineTuneOutcome:
    """What fine-tuning gives the estimator.

    Attributes
    ----------
    weights : dict of str to ndarray or None
        The parameters that trained, at their best epoch; None when the
        in-context weights are kept.
    scores : dict of str to float or None
        Validation scores, ``"in_context"`` and ``"fine_tuned"`` (higher is
        better): negative log loss, or R²; None when nothing was trained (no
        fine-tuning, or too few rows for a validation split).
    n_epochs : int
        Epochs run.
    seconds : float
        Wall time of fine-tuning, validation included.
    """

    weights: dict[str, np.ndarray] | None = None
    scores: dict[str, float] | None = None
    n_epochs: int = 0
    seconds: float = 0.0


def trainable_names(model: TabSwift, fine_tuning: str, task: str) -> list[str]:
    """Names of the parameters that train: all of them (``"full"``), or the registers, the
    head of ``task`` and the last ``LAST_BLOCKS`` blocks (``"last"``).

    Examples
    --------
    >>> from skfm.tabular.finetune import trainable_names
    >>> from skfm.tabular.model import TabSwift, TabSwiftConfig
    >>> model = TabSwift(TabSwiftConfig(n_layers=3))
    >>> sorted({name.split(".")[0] + "." + name.split(".")[1]
    ...         for name in trainable_names(model, "last", "regression") if "." in name})
    ['blocks.1', 'blocks.2', 'head_norm.bias', 'head_norm.weight', 'heads.regression']
    """
    names = [name for name, _ in model.named_parameters()]
    if fine_tuning == "full":
        return names
    first = len(model.blocks) - min(LAST_BLOCKS, len(model.blocks))
    prefixes = ("registers", "head_norm.", f"heads.{task}.",
                *(f"blocks.{i}." for i in range(first, len(model.blocks))))
    return [name for name in names if name.startswith(prefixes)]


def validation_split(estimator, n: int, strata: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
    """Training and validation rows (at most ``MAX_VALIDATION_ROWS`` of the latter), stratified
    by ``strata`` when given; the same rows for the same integer ``random_state``."""
    if strata is not None:
        train, val = stratified_split(strata, estimator.validation_fraction,
                                      estimator.random_state)
    else:
        n_val = int(round(estimator.validation_fraction * n))
        if n_val < 1 or n - n_val < 2:
            return np.arange(n), np.arange(0)
        train, val = train_test_split(np.arange(n), test_size=n_val,
                                      random_state=draw_seed(estimator.random_state))
    return np.concatenate([train, val[MAX_VALIDATION_ROWS:]]), val[:MAX_VALIDATION_ROWS]


def _row_losses(probe, X_val, y_val) -> np.ndarray:
    """Each validation row's loss of ``probe``'s predictions, as the estimator makes them, shape
    (n_val,): their mean is the log loss, or ``1 - R²`` of the predicted means."""
    if probe._task == "classification":
        return row_log_losses(probe.predict_proba(X_val), np.searchsorted(probe.classes_, y_val))
    spread = np.mean((y_val - np.mean(y_val)) ** 2)
    return (y_val - probe.predict(X_val)) ** 2 / (spread if spread > 0 else 1.0)


def fine_tune_on_table(estimator, X, y: np.ndarray, strata: np.ndarray | None) -> FineTuneOutcome:
    """Fine-tune ``estimator``'s network on ``X, y`` (see the module docstring).

    Parameters
    ----------
    estimator : TabSwiftClassifier or TabSwiftRegressor
        Its parameters say how (``fine_tuning``, ``time_budget``, ``learning_rate``,
        ``max_epochs``, ``n_iter_no_change``, ``validation_fraction``, ``verbose``,
        ``random_state``); it is not changed.
    X : array-like or DataFrame of shape (n_samples, n_features)
    y : ndarray of shape (n_samples,)
        Labels or finite targets, as checked by ``fit``.
    strata : ndarray of shape (n_samples,) or None
        Class indices to stratify the validation split by (classifiers), or None.

    Returns
    -------
    FineTuneOutcome
    """
    if estimator.fine_tuning == "none":
        return FineTuneOutcome()
    start = time.perf_counter()
    check_consistent_length(X, y)
    train, val = validation_split(estimator, len(y), strata)
    if len(val) == 0:
        return FineTuneOutcome()
    device = resolve_device(estimator.device)
    seed = draw_seed(estimator.random_state)
    X_train, X_val, y_val = _safe_indexing(X, train), _safe_indexing(X, val), y[val]
    # the bar: the estimator without fine-tuning, its guard's partners included (beyond the
    # context the blend comes after fine-tuning either way, and the guard does not run)
    without = clone(estimator).set_params(
        fine_tuning="none",
        large_table="subsample" if estimator.large_table == "blend" else estimator.large_table)
    reference = without.fit(X_train, y[train])
    # the in-context model of the training rows alone: no partner of the guard or blend
    probe = (reference if reference.blend_scores_ is None  # the guard did not run
             else clone(without).set_params(guard=False).fit(X_train, y[train]))
    with threads(estimator.n_jobs):
        in_context = _row_losses(reference, X_val, y_val)  # (n_val,)
        net = fresh_model(estimator.checkpoint, TABSWIFT).to(device)
        task = probe._task
        trained = set(trainable_names(net, estimator.fine_tuning, task))
        for name, p in net.named_parameters():
            p.requires_grad_(name in trained)

        def row_losses() -> np.ndarray:
            probe._cache.clear()  # the context's keys and values of the network as it is now
            probe._networks = {str(device): net}  # and no float64 copy of an earlier state
            return _row_losses(probe, X_val, y_val)

        rng = np.random.default_rng(seed)
        x_rows = probe.X_context_
        n_train = len(x_rows)
        context_rows = min(CONTEXT_ROWS, probe.max_context_rows_)
        width = net.config.max_features
        borders = torch.as_tensor(buckets.bucket_borders(net.config.n_buckets),
                                  dtype=torch.float32, device=device)
        n_outputs = probe._n_outputs()

        def batch_loss(rows: np.ndarray) -> torch.Tensor:
            free = np.ones(n_train, dtype=bool)
            free[rows] = False  # a query row is never in its own context
            pool = np.flatnonzero(free)
            context = rng.choice(pool, min(len(pool), context_rows), replace=False)
            chosen = rng.choice(len(probe.members_), min(MEMBERS_PER_STEP, len(probe.members_)),
                                replace=False)
            members = [probe.members_[i] for i in chosen]
            both = np.concatenate([context, rows])
            x = np.zeros((len(members), len(both), width), dtype=np.float32)
            for i, member in enumerate(members):
                view = member.transform(x_rows[both])
                x[i, :, :view.shape[1]] = view
            y_ctx = np.stack([probe._targets(m, context) for m in members])
            y_query = np.stack([probe._targets(m, rows) for m in members])
            n_features = torch.tensor([m.width for m in members], device=device)
            logits = net(to_device(x, device), to_device(y_ctx, device, dtype=torch.float32),
                         n_features, task)  # (members, query rows, outputs)
            if task == "classification":
                target = torch.as_tensor(y_query, dtype=torch.long, device=device)
                logits = logits[..., :n_outputs]
            else:
                target = buckets.bucketize(
                    to_device(y_query, device, dtype=torch.float32), borders)
            return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), target.reshape(-1))

        query_rows = max(1, min(QUERY_ROWS, n_train // 5))
        passes = -(-MIN_STEPS_PER_EPOCH * query_rows // n_train)  # ceil: passes per epoch
        config = FineTuneConfig(
            max_epochs=estimator.max_epochs,
            batch_size=query_rows,
            n_iter_no_change=estimator.n_iter_no_change, tol=TOL, weight_decay=WEIGHT_DECAY,
            clip_grad_norm=CLIP_GRAD_NORM, verbose=estimator.verbose,
            desc="fine-tune tabswift", loss_name="loss",
            time_budget=max(0.0, estimator.time_budget - (time.perf_counter() - start)),
        )
        result = fine_tune(
            net, param_groups([p for p in net.parameters() if p.requires_grad],
                              estimator.learning_rate),
            np.tile(np.arange(n_train), passes), batch_loss, lambda: float(row_losses().mean()),
            config, torch_generator(seed),
        )
        tuned = None if result.validation_loss is None else row_losses()  # the best epoch's
    score = (lambda loss: -loss) if task == "classification" else (lambda loss: 1.0 - loss)
    scores = {"in_context": score(float(in_context.mean())),
              "fine_tuned": -np.inf if tuned is None else score(float(tuned.mean()))}
    weights = None
    if tuned is not None and beats_with_margin(in_context, tuned):
        weights = {name: p.detach().cpu().numpy().astype(np.float32)
                   for name, p in net.named_parameters() if name in trained}
    return FineTuneOutcome(weights, scores, result.n_epochs, time.perf_counter() - start)
