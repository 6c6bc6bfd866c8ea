"""What TabSwiftClassifier and TabSwiftRegressor share: checkpoint, context, cache.

``fit`` encodes the table, fits the ensemble members and computes each
layer's keys and values for the registers and context rows (the KV cache).
``predict`` then runs only the test rows through the layers against that
cache, in batches sized from free memory, so a call costs
O(test rows x context rows x layers). Each batch is encoded, run and reduced
to its output (class probabilities, the requested statistic) before the next,
so the memory beyond that output does not grow with the test rows. The torch
module and the cache are rebuilt on demand and never pickled: a pickled
estimator holds the checkpoint name and numpy arrays only (after fine-tuning,
the trained parameters too: ``fine_tuned_weights_``, see
:mod:`skfm.tabular.finetune`).
"""

from __future__ import annotations

import os
from numbers import Integral, Real

import numpy as np
import pandas as pd
import torch
from sklearn.base import BaseEstimator
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_is_fitted

from skfm._backend import (
    auto_batch_size,
    cast_module,
    inference_context,
    output_numpy,
    resolve_device,
    resolve_precision,
    run_in_batches,
    threads,
    to_device,
    weights_dtype,
)
from skfm._weights import ModelFamily, fresh_model, shared_model
from skfm.tabular.batching import max_batch_rows
from skfm.tabular.encoding import TabularEncoder, tabular_tags
from skfm.tabular.ensemble import Member, build_members
from skfm.tabular.model import TabSwift, TabSwiftConfig
from skfm.tabular.retrieval import RETRIEVAL_CONTEXT_ROWS, RETRIEVAL_MEMBERS, fit_retrieval

# Each task's default is the checkpoint that measured best on its benchmark: tabswift-v3 on
# CC18 (docs/benchmarks/tabswift_cc18.md); tabswift-v2 on the regression suite, where
# tabswift-v3 scored a lower mean R² (docs/pretraining.rst).
DEFAULT_CLASSIFIER_CHECKPOINT = "tabswift-v3"
DEFAULT_REGRESSOR_CHECKPOINT = "tabswift-v2"
DEFAULT_EXIT_AGREEMENT = 0.75
# What the "auto" sizes resolve to. Within the context (and with large_table="subsample"): 8
# members of up to 2,048 rows, every layer. A table blended with boosting (skfm.tabular.blend),
# where a booster learns from every row and the in-context model only adds what it misses: 3
# members of 512 rows with early exit. On the large-table suite (docs/benchmarks/
# tabswift_large.md) that blend took a fifth of the time of one with 8 members of 2,048 rows,
# its mean score 0.003 lower and still above HistGradientBoosting's; 2 members scored below it.
DEFAULT_MEMBERS = 8
DEFAULT_CONTEXT_ROWS = 2048
BLEND_MEMBERS = 3
BLEND_CONTEXT_ROWS = 512
VALUE_CHECK_ROWS = 8192  # rows encoded at a time to check the values before predicting
# Test rows and contexts per forward pass: skfm.tabular.batching.


def _draw_output_projections(model: TabSwift) -> None:
    """Draw the output projections, which start at zero (every block the identity), so that
    ``random:<config>`` is a real random network rather than an embedding followed by the head."""
    for name, p in model.named_parameters():
        if name.endswith(("attn.out.weight", "ffn.2.weight")):
            torch.nn.init.normal_(p, std=0.02)


#: How TabSwift checkpoints become modules (see :mod:`skfm._weights.loader`).
TABSWIFT = ModelFamily(
    "tabswift", lambda config: TabSwift(TabSwiftConfig(**config)), label="tabswift",
    randomize=_draw_output_projections,
)


def exit_agreement(early_exit) -> float | None:
    """The model's ``exit_threshold`` for an estimator's ``early_exit`` setting.

    Examples
    --------
    >>> exit_agreement(True), exit_agreement(False), exit_agreement(0.9)
    (0.75, None, 0.9)
    """
    if isinstance(early_exit, bool | np.bool_):
        return DEFAULT_EXIT_AGREEMENT if early_exit else None
    return None if early_exit is None else float(early_exit)


def context_limit(estimator) -> int:
    """The most rows a table may have to be kept whole as every member's context: larger
    tables are subsampled or blended (``large_table``).

    Examples
    --------
    >>> from skfm import TabSwiftClassifier
    >>> context_limit(TabSwiftClassifier()), context_limit(TabSwiftClassifier(max_context_rows=500))
    (2048, 500)
    """
    rows = estimator.max_context_rows
    return DEFAULT_CONTEXT_ROWS if rows == "auto" else int(rows)


def load_model(checkpoint: str, device: torch.device) -> tuple[TabSwift, dict]:
    """The TabSwift module of a checkpoint (name, path, hub id or ``"random:<config>"``) on
    ``device``, shared by all estimators."""
    return shared_model(checkpoint, TABSWIFT, device)


def tuned_model(checkpoint: str, weights: dict[str, np.ndarray], device: torch.device) -> TabSwift:
    """The TabSwift module of a checkpoint with some parameters replaced by ``weights``
    (fine-tuned ones), frozen, in eval mode, on ``device``; the caller's own."""
    model = fresh_model(checkpoint, TABSWIFT)
    state = model.state_dict()
    state.update({name: torch.from_numpy(np.array(value)) for name, value in weights.items()})
    model.load_state_dict(state)
    return model.eval().requires_grad_(False).to(device)


class TabSwiftBase(BaseEstimator):
    """Shared machinery; see TabSwiftClassifier / TabSwiftRegressor."""

    _task: str

    # Checked by scikit-learn at the start of fit. The device, precision and checkpoint
    # strings are parsed where they are used (skfm._backend, skfm._weights), which accept
    # more spellings ("CUDA:0", "float32", paths) than a list of options would.
    _parameter_constraints: dict = {
        "n_estimators": [Interval(Integral, 1, None, closed="left"), StrOptions({"auto"})],
        "checkpoint": [str, os.PathLike],
        "device": [str, torch.device, None],
        "inference_precision": [str, torch.dtype],
        "early_exit": ["boolean", Interval(Real, 0, 1, closed="right"), None,
                       StrOptions({"auto"})],
        "max_layers": [Interval(Integral, 1, None, closed="left"), None],
        "max_context_rows": [Interval(Integral, 2, None, closed="left"), StrOptions({"auto"})],
        "batch_size": [StrOptions({"auto"}), Interval(Integral, 1, None, closed="left")],
        "n_jobs": [Integral, None],
        "random_state": ["random_state"],
        "fine_tuning": [StrOptions({"none", "last", "full"})],
        "time_budget": [Interval(Real, 0, None, closed="left")],
        "learning_rate": [Interval(Real, 0, None, closed="neither")],
        "max_epochs": [Interval(Integral, 1, None, closed="left")],
        "n_iter_no_change": [Interval(Integral, 1, None, closed="left")],
        "validation_fraction": [Interval(Real, 0, 1, closed="neither")],
        "verbose": ["verbose"],
        "large_table": [StrOptions({"blend", "subsample", "retrieve"})],
    }

    def _resolve_sizes(self, blended: bool, n_rows: int) -> None:
        """Set the sizes of this fit (``n_estimators_``, ``max_context_rows_``,
        ``early_exit_``): the parameters, with ``"auto"`` resolved for a table of ``n_rows``
        rows that is ``blended`` with boosting, or whose contexts are retrieved, or
        neither; and whether they are (``retrieved_``)."""
        self.retrieved_ = self.large_table == "retrieve" and n_rows > context_limit(self)
        sizes = {"members": (DEFAULT_MEMBERS, BLEND_MEMBERS, RETRIEVAL_MEMBERS),
                 "rows": (DEFAULT_CONTEXT_ROWS, BLEND_CONTEXT_ROWS, RETRIEVAL_CONTEXT_ROWS),
                 "exit": (False, True, False)}
        kind = 1 if blended else 2 if self.retrieved_ else 0

        def pick(value, name):
            return sizes[name][kind] if isinstance(value, str) else value
        self.n_estimators_ = pick(self.n_estimators, "members")
        self.max_context_rows_ = pick(self.max_context_rows, "rows")
        self.early_exit_ = pick(self.early_exit, "exit")

    def _use_fine_tuning(self, outcome) -> None:
        """Keep what fine-tuning gave (a :class:`~skfm.tabular.finetune.FineTuneOutcome`)."""
        self.fine_tuned_weights_ = outcome.weights
        self.fine_tuned_ = outcome.weights is not None
        self.validation_scores_ = outcome.scores
        self.n_epochs_ = outcome.n_epochs

    def _use_partner(self, outcome) -> None:
        """Keep what the blend or the guard chose (a
        :class:`~skfm.tabular.blend.PartnerOutcome`)."""
        self.blend_weight_, self.blend_scores_ = outcome.weight, outcome.scores
        self.booster_, self.linear_ = outcome.booster, outcome.linear

    def _partner_outputs(self, rows: pd.DataFrame) -> np.ndarray | None:
        """The booster's or the guard's linear model's class probabilities (classifiers)
        or predictions of the checked ``rows`` (see :meth:`_rows`), or None when the
        in-context model predicts alone."""
        partner = self.booster_ if self.linear_ is None else self.linear_
        if partner is None:
            return None
        return self._on_encoded(rows, partner.predict_proba
                                if self._task == "classification" else partner.predict)

    def _on_encoded(self, rows: pd.DataFrame, predict) -> np.ndarray:
        """``predict`` of the checked ``rows`` encoded (see :meth:`_rows`), chunk by chunk."""
        return np.concatenate([
            predict(self.encoder_.encode(rows.iloc[start:start + VALUE_CHECK_ROWS]))
            for start in range(0, len(rows), VALUE_CHECK_ROWS)
        ])

    def _store_context(self, X, y_codes: np.ndarray | None, y_ctx: np.ndarray, n_classes: int = 0,
                       pool: np.ndarray | None = None):
        """Encode X, fit the members and store their numpy contexts.

        ``n_classes`` > 0 gives the classification members their output codes; ``pool``
        (row indices, None: all) are the rows the members may take as context.
        """
        self.encoder_ = TabularEncoder().fit(X, self)
        X_enc = self.encoder_.transform(X, self)
        if X_enc.shape[0] != len(y_ctx):
            raise ValueError(
                f"X has {X_enc.shape[0]} rows but y has {len(y_ctx)}; they must match."
            )
        device = resolve_device(self.device)
        self._networks = {}  # str(device) -> module; rebuilt after unpickling
        model = self._network(device)
        cfg = model.config
        rng = np.random.default_rng(self.random_state)
        contexts = [pool]  # the rows each group of members may read
        self.retrieval_ = None
        if self.retrieved_:
            self.retrieval_, contexts = fit_retrieval(
                X_enc, np.arange(len(X_enc)) if pool is None else pool, self.max_context_rows_,
                rng)
        groups = [build_members(
            X_enc, y_codes, self.n_estimators_, cfg.max_features, self.max_context_rows_, rng,
            n_classes=n_classes, max_outputs=cfg.max_classes,
            categorical_levels={j: len(c) for j, c in self.encoder_.categories_.items()},
            pool=rows,
        ) for rows in contexts]
        self.members_: list[Member] = [member for group in groups for member in group]
        # members of group g (retrieval's cluster g): members_[bounds[g]:bounds[g + 1]]
        self.member_groups_ = np.cumsum([0] + [len(group) for group in groups])
        self.X_context_ = X_enc
        self.y_context_ = y_ctx
        if self.retrieved_:
            for group in groups:
                self._read_targets_locally(group)
        self._cache = {}  # (device, dtype) -> context tensors; rebuilt after unpickling
        self._context(device, model)
        # the in-context model alone, until the blend or the guard chooses a partner
        self.blend_weight_, self.blend_scores_ = 1.0, None
        self.booster_ = self.linear_ = None
        return self

    # ---- torch side, rebuilt lazily and never pickled -----------------------------

    def __getstate__(self):
        state = self.__dict__.copy()
        state.pop("_cache", None)
        state.pop("_networks", None)
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)
        if "X_context_" in state:
            self._cache = {}
            self._networks = {}

    def _network(self, device) -> TabSwift:
        """The module that predicts: the checkpoint's shared one, or the fine-tuned one;
        with ``inference_precision`` float64, a float64 copy of it."""
        key = str(device)
        if key not in self._networks:
            weights = getattr(self, "fine_tuned_weights_", None)
            self._networks[key] = (load_model(self.checkpoint, device)[0] if weights is None
                                   else tuned_model(self.checkpoint, weights, device))
        dtype = resolve_precision(device, self.inference_precision)
        if weights_dtype(dtype) is torch.float32:
            return self._networks[key]
        if f"{key}/float64" not in self._networks:
            self._networks[f"{key}/float64"] = cast_module(self._networks[key], dtype)
        return self._networks[f"{key}/float64"]

    def _member_tensors(self, X_enc: np.ndarray, device, width: int, members=None):
        """Stack the views of ``X_enc`` of ``members`` (default: all) into (B, n, width),
        zero-padded."""
        members = self.members_ if members is None else members
        out = np.zeros((len(members), len(X_enc), width), dtype=np.float32)
        for i, member in enumerate(members):
            x = member.transform(X_enc)
            out[i, :, : x.shape[1]] = x
        return to_device(out, device)

    def _context(self, device, model):
        """(cache, x_ctx, n_features) for the members, built once per device and precision."""
        dtype = resolve_precision(device, self.inference_precision)
        key = (str(device), str(dtype))
        if key in self._cache:
            return self._cache[key]
        width = model.config.max_features
        per_member = []
        for member in self.members_:
            x = member.transform(self.X_context_[member.rows])
            per_member.append(np.pad(x, ((0, 0), (0, width - x.shape[1]))))
        x_ctx = to_device(np.stack(per_member), device)  # (B, N, F)
        y = np.stack([self._member_targets(m) for m in self.members_])  # (B, N)
        y_ctx = to_device(y, device, dtype=torch.float32)
        n_features = torch.tensor([m.width for m in self.members_], device=device)
        with inference_context(device, dtype):
            cache = model.context_cache(x_ctx, y_ctx, n_features, self._task)
        self._cache[key] = (cache, x_ctx, n_features)
        return self._cache[key]

    def _member_targets(self, member: Member) -> np.ndarray:
        return self._targets(member, member.rows)

    def _read_targets_locally(self, group: list[Member]) -> None:
        """Set how a group of members with one retrieved context reads its targets
        (regressors standardise them on that context; nothing to do for classes)."""

    def _targets(self, member: Member, rows: np.ndarray) -> np.ndarray:
        """What ``member`` reads as the targets of the context rows ``rows``."""
        raise NotImplementedError

    def _n_outputs(self) -> int | None:
        """Model outputs in use: classes (or class groups) for classifiers, None for regression."""
        return None

    def _rows(self, X) -> pd.DataFrame:
        """``X`` checked against the fitted columns and values, to encode batch by batch.

        Its values are encoded once here, in chunks that are dropped, so that infinite
        or non-numeric values raise before the model runs on any row.
        """
        check_is_fitted(self)
        rows = self.encoder_.check(X, self)
        for start in range(0, len(rows), VALUE_CHECK_ROWS):
            self.encoder_.encode(rows.iloc[start:start + VALUE_CHECK_ROWS])
        return rows

    def _predict_batches(self, rows: pd.DataFrame, reduce) -> np.ndarray:
        """The members' outputs for ``rows``, each batch reduced to its final form at once.

        Parameters
        ----------
        rows : DataFrame of shape (n_samples, n_features)
            From :meth:`_rows`.
        reduce : callable
            ``reduce(logits, depth, batch, members)`` gets the logits (B, m, C; float32,
            float64 with ``inference_precision="fp64"``)
            and exit depths (B, m) of the m rows ``rows.iloc[batch]`` (``batch`` is a
            slice, or positions where retrieval sends the rows of a batch to different
            members) by the B ``members`` that predict them, and returns their output,
            one entry per row. Only these outputs are kept, so memory grows with the rows
            through the output alone, not the members' logits or the encoded features.

        Returns
        -------
        ndarray
            The outputs of the batches, concatenated along the first axis.
        """
        device = resolve_device(self.device)
        model = self._network(device)
        dtype = resolve_precision(device, self.inference_precision)
        bounds = self.member_groups_
        with threads(self.n_jobs):
            cache, x_ctx, n_features = self._context(device, model)
            _, n_ctx, width = x_ctx.shape
            b = int(np.diff(bounds).max())  # members that predict a row
            if self.batch_size == "auto":
                bytes_per_row = 4 * b * (n_ctx + model.config.n_registers) * (
                    model.config.n_heads + 8
                )
                batch = auto_batch_size(
                    device, bytes_per_row, len(rows), max_batch=max_batch_rows(device, b)
                )
            else:
                batch = int(self.batch_size)

            def run_group(X_enc: np.ndarray, group: int, batch):
                lo, hi = bounds[group], bounds[group + 1]
                members = self.members_[lo:hi]
                x = self._member_tensors(X_enc, device, width, members)
                with inference_context(device, dtype):
                    logits, depth = model.predict_from_cache(
                        x, x_ctx[lo:hi], [(k[lo:hi], v[lo:hi]) for k, v in cache],
                        n_features[lo:hi], self._task,
                        max_layers=self.max_layers,
                        exit_threshold=exit_agreement(self.early_exit_),
                        n_outputs=self._n_outputs(),
                    )
                logits, depth = output_numpy(logits), depth.cpu().numpy()
                return reduce(logits, depth, batch, members)

            def run(start: int, stop: int):
                X_enc = self.encoder_.encode(rows.iloc[start:stop])
                if self.retrieval_ is None:
                    return run_group(X_enc, 0, slice(start, stop))
                clusters = self.retrieval_.assign(X_enc)  # (m,) from each row alone
                out = None
                for group in np.unique(clusters):
                    local = np.flatnonzero(clusters == group)
                    part = run_group(X_enc[local], group, start + local)
                    if out is None:
                        out = np.empty((stop - start, *part.shape[1:]), dtype=part.dtype)
                    out[local] = part
                return out

            return np.concatenate(run_in_batches(run, len(rows), batch, device=device))

    def _logits_in_context(self, context: np.ndarray, query: np.ndarray,
                           n_members: int | None = None) -> np.ndarray:
        """The logits (B, k, C; float64 at fp64) of the first ``n_members`` members (None:
        all) of the fitted rows ``query``, each reading the fitted rows ``context`` (m
        positions; x_ctx (B, m, F)) as its context with the targets ``fit`` stored: the
        in-context model as if refitted on those rows (the members' feature views stay those
        fitted on every row). Cross-fitting's predictions (:mod:`skfm.tabular.guard`)."""
        members = self.members_[:n_members]
        device = resolve_device(self.device)
        model = self._network(device)
        dtype = resolve_precision(device, self.inference_precision)
        width = model.config.max_features
        n_features = torch.tensor([m.width for m in members], device=device)
        targets = np.stack([self._targets(m, context) for m in members])  # (B, m)
        step = max_batch_rows(device, len(members))
        with threads(self.n_jobs):
            x_ctx = self._member_tensors(self.X_context_[context], device, width, members)
            with inference_context(device, dtype):
                cache = model.context_cache(
                    x_ctx, to_device(targets, device, dtype=torch.float32), n_features,
                    self._task)
            logits = []
            for start in range(0, len(query), step):
                x = self._member_tensors(self.X_context_[query[start:start + step]], device,
                                         width, members)  # (B, k', F)
                with inference_context(device, dtype):
                    out, _ = model.predict_from_cache(
                        x, x_ctx, cache, n_features, self._task, max_layers=self.max_layers,
                        exit_threshold=exit_agreement(self.early_exit_),
                        n_outputs=self._n_outputs(),
                    )
                logits.append(output_numpy(out))
        return np.concatenate(logits, axis=1)

    def exit_depth(self, X) -> np.ndarray:
        """Number of layers each row of ``X`` used, averaged over members.

        Equals the model depth (or ``max_layers``) unless early exit is on (``early_exit_``).

        Returns
        -------
        ndarray of shape (n_samples,)
        """
        return self._predict_batches(self._rows(X),
                                     lambda logits, depth, batch, members: depth.mean(0))

    def __sklearn_tags__(self):
        return tabular_tags(super().__sklearn_tags__())
