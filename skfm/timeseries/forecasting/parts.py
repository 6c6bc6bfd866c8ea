"""The parts of the Time-PEFT forecast, fitted and run: lookback, network, base, combination.

:class:`ForecastParts` is what :class:`~.forecaster.TimePEFTForecaster` holds besides the
sktime glue: it chooses the seasonal period and the lookback, fine-tunes the network
(:mod:`.training`; with ``"seasonal_ridge"`` as a correction of that base), refits the combination
(:mod:`.combination`), lets the guard choose (:mod:`.guard` with ``base="combination"``,
:mod:`.selection` with ``"seasonal_ridge"``) and forecasts each part from windows. It
reads the forecaster's parameters and sets its fitted attributes; the network is rebuilt
from the checkpoint and ``trained_state_`` for every forecast, never stored.

Shapes: ``T`` time points, ``C`` channels, ``L`` context length, ``H`` horizon.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pandas as pd
import torch

from skfm._backend import draw_seed, resolve_device, threads, to_device
from skfm.timeseries.forecasting.adapters import ForecastNet
from skfm.timeseries.forecasting.backbone import BackboneConfig
from skfm.timeseries.forecasting.base import (
    ar_base,
    auto_context_length,
    choose_alpha,
    detect_period,
    index_period,
    normalise,
    residual_quantiles,
    seasonal_naive_weights,
    seasonal_period,
    to_raw,
)
from skfm.timeseries.forecasting.batched import batched_forecasts, window_parameters
from skfm.timeseries.forecasting.checks import check_context_length, check_length, check_series
from skfm.timeseries.forecasting.combination import (
    candidate_forecasts,
    gaussian_quantiles,
    rolling_origins,
)
from skfm.timeseries.forecasting.complexity import finetuning_advisable
from skfm.timeseries.forecasting.direct import LONGER_LOOKBACKS
from skfm.timeseries.forecasting.guard import (
    MAX_CALIBRATION_WINDOWS,
    guard_at_origins,
    guard_on_stretch,
)
from skfm.timeseries.forecasting.network import (
    build_net,
    load_state,
    n_backbone_params,
    trainable_state,
)
from skfm.timeseries.forecasting.selection import select_on_held_out
from skfm.timeseries.forecasting.training import sliding_windows, temporal_split, train

#: A long series gives at least this many training windows: ``finetune="auto"`` fine-tunes
#: there (ETT: over 8,000 windows, where Time-PEFT makes its claim; on the short-series suites
#: the network never beat the combination at a test origin, docs/benchmarks/
#: timepeft_network_candidate.md) and the guard scores the windows of a stretch.
LONG_SERIES_WINDOWS = 2000
#: With ``window_stride="auto"`` the network trains on at most this many windows an epoch: on
#: ETTh1 every window (over 9,000) for 10 epochs took over ten minutes on two cores.
MAX_TRAINING_WINDOWS = 2000


class ForecastParts:
    """Fitting and forecasting of the parts; a base class of ``TimePEFTForecaster`` only."""

    # ---- period and lookback ---------------------------------------------------------

    def _choose_lookback(self, values: np.ndarray, index: pd.Index,
                         config: BackboneConfig) -> bool:
        """Set ``sp_`` (as detected, else as the ``index``'s frequency implies; refined in
        :meth:`_combine` / :meth:`_select`) and ``context_length_``; a given ``sp``
        longer than the context is refused. False where the series is shorter than one
        training window with the automatic lookback (see :meth:`_fall_back`); with a
        given ``context_length``, that is refused."""
        sp_given, max_period = self.sp != "auto", config.max_context // 2
        self.sp_ = int(self.sp) if sp_given else detect_period(values, max_period)
        if not sp_given and self.sp_ == 1 and index_period(index) <= max_period:
            self.sp_ = index_period(index)
        if self.context_length == "auto":
            self.context_length_ = auto_context_length(
                self.sp_, len(values), self.horizon_, config.patch_len, config.max_context)
            if len(values) < self.context_length_ + self.horizon_:
                return False
        else:
            check_context_length(self.context_length, config)
            self.context_length_ = int(self.context_length)
        check_length(len(values), self.context_length_, self.horizon_)
        self.window_stride_ = self._training_stride(len(values))
        if self.sp_ > self.context_length_:
            if sp_given:
                raise ValueError(f"sp={self.sp} is longer than the context "
                                 f"({self.context_length_} values): lower sp or raise "
                                 "context_length (or give a longer series)")
            self.sp_ = 1
        return True

    def _training_stride(self, n_timepoints: int) -> int:
        """``window_stride`` as given; ``"auto"``: 1, or the smallest step that leaves at most
        :data:`MAX_TRAINING_WINDOWS` training windows of ``n_timepoints`` values."""
        if self.window_stride != "auto":
            return int(self.window_stride)
        n_windows = n_timepoints - self.context_length_ - self.horizon_ + 1
        return max(1, math.ceil(n_windows / MAX_TRAINING_WINDOWS))

    def _linear_lookbacks(self) -> tuple[int, ...]:
        """The lookbacks the direct linear map chooses from: ``context_length_``, and where
        that was chosen automatically also its multiples ``LONGER_LOOKBACKS``."""
        factors = LONGER_LOOKBACKS if self.context_length == "auto" else (1,)
        return tuple(factor * self.context_length_ for factor in factors)

    def _fall_back(self, values: np.ndarray) -> None:
        """Fit a series shorter than one training window: the seasonal naive, with a warning.

        The seasonal naive where the series holds a season and one value more (else
        the naive, ``sp_ = 1``), on a lookback of the whole series, as sktime's
        ``NaiveForecaster`` forecasts; no network, no candidates, no complexity
        measures (``complexity_`` None). Its one-season-ahead
        errors on the series, growing with the square root of the seasons ahead (a
        random walk over seasons, as sktime's naive intervals), give the intervals.
        """
        n_timepoints, horizon = len(values), self.horizon_
        needed = self.context_length_ + horizon
        self.sp_ = self.sp_ if 1 < self.sp_ < n_timepoints else 1
        self.context_length_, self.window_stride_ = n_timepoints, 1
        warnings.warn(
            f"y has {n_timepoints} time points, fewer than one training window of "
            f"TimePEFTForecaster (context_length + horizon = {needed}): it forecasts as "
            + ("the naive (the last value)" if self.sp_ == 1 else
               f"the seasonal naive (the last season, sp={self.sp_})")
            + "; give a longer series to fit the model", UserWarning, stacklevel=5)
        self._describe(values, measure=False)  # nothing to advise: no fine-tuning
        self.base_weights_ = self.base_intercept_ = self.base_alpha_ = None
        self.finetuned_, self.selected_, self.validation_scores_ = False, "seasonal_naive", {}
        self.trained_state_, self.n_trainable_params_, self.n_backbone_params_ = {}, 0, 0
        self.n_epochs_, self.validation_loss_, self.fit_seconds_ = 0, None, 0.0
        self.combination_weights_ = {"seasonal_naive" if self.sp_ > 1 else "naive": 1.0}
        self.combination_parameters_ = {name: {} for name in self.combination_weights_}
        series = values.T[None].astype(np.float64)  # one window (1, C, T)
        self.combination_forecast_ = self._forecast(series, "seasonal_naive")[0]
        errors = (values[self.sp_:] - values[:-self.sp_]).astype(np.float64)  # (T - sp, C)
        growth = np.sqrt(np.ceil(np.arange(1, horizon + 1) / self.sp_))
        scale = np.reshape(normalise(series, *self._statistics())[2], (-1, 1))  # (C, 1)
        self.calibration_residuals_ = (errors[:, :, None] * growth / scale).astype(np.float32)

    def _describe(self, values: np.ndarray, measure: bool = True) -> None:
        """The series' channels, per-channel mean and standard deviation, and complexity
        (not measured where ``measure`` is False: ``complexity_`` None, NaN measures)."""
        self.n_channels_ = values.shape[1]
        self.series_mean_ = values.mean(0)
        std = values.std(0)
        self.series_std_ = np.where(std > 0, std, 1.0)
        if not measure:
            self.complexity_ = None
            self.temporal_complexity_ = self.multichannel_complexity_ = float("nan")
            return
        self.complexity_ = finetuning_advisable(values)
        self.temporal_complexity_ = self.complexity_.temporal_complexity
        self.multichannel_complexity_ = self.complexity_.multichannel_complexity

    # ---- network and training --------------------------------------------------------

    def _seed(self) -> int:
        return draw_seed(self.random_state)

    def _build_net(self, n_channels: int, seed: int) -> ForecastNet:
        """The network of this configuration at its seeded initialisation (before training)."""
        return build_net(
            self.checkpoint, seed, adapter=self.adapter, adapter_form=self.adapter_form,
            context_length=self.context_length_, horizon=self.horizon_, n_channels=n_channels,
            top_k=self.top_k, lora_rank=self.lora_rank, lora_alpha=self.lora_alpha,
            revin=self.revin, series_loc=self.series_mean_, series_scale=self.series_std_,
            base_weights=self.base_weights_, base_intercept=self.base_intercept_,
        )

    def _trained_net(self, device) -> ForecastNet:
        net = load_state(self._build_net(self.n_channels_, self._seed()), self.trained_state_)
        return net.to(device).eval()

    def _finetune_advised(self, n_windows: int) -> bool:
        """Whether to fine-tune the network, on a series of ``n_windows`` training windows:
        ``finetune`` as given; ``"auto"``: where they are :data:`LONG_SERIES_WINDOWS` or more."""
        if self.finetune != "auto":
            return bool(self.finetune)
        return n_windows >= LONG_SERIES_WINDOWS

    def _train(self, values: np.ndarray, init_state: dict | None, max_epochs: int,
               window_stride: int | None = None) -> None:
        """Fine-tune on the windows of ``values`` (T, C); sets ``trained_state_`` and stats.

        ``max_epochs=0``: no fine-tuning, the network's initial weights. Windows
        ``window_stride`` apart (None: ``window_stride_``).
        """
        seed = self._seed()
        net = self._build_net(values.shape[1], seed)
        if init_state is not None:
            load_state(net, init_state)
        result = None
        if max_epochs:
            result = train(
                net, values, context_length=self.context_length_, horizon=self.horizon_,
                window_stride=window_stride or self.window_stride_,
                validation_fraction=self.validation_fraction, learning_rate=self.learning_rate,
                backbone_learning_rate=self.backbone_learning_rate,
                learning_rate_schedule=self.learning_rate_schedule, max_epochs=max_epochs,
                batch_size=self.batch_size, n_iter_no_change=self.n_iter_no_change,
                verbose=self.verbose, device=resolve_device(self.device), seed=seed,
            )
        self.trained_state_ = trainable_state(net)
        self.n_trainable_params_ = int(sum(v.size for v in self.trained_state_.values()))
        self.n_backbone_params_ = n_backbone_params(net)
        self.n_epochs_ = 0 if result is None else result.n_epochs
        self.validation_loss_ = None if result is None else result.validation_loss
        self.fit_seconds_ = 0.0 if result is None else result.seconds

    def _network_forecasts(self) -> bool:
        """Whether the fitted forecast uses the network (selected, or weighted in the combination)."""
        return self.selected_ == "network" or (
            self.base == "combination" and "network" in self.combination_weights_)

    def _statistics(self):
        """``(loc, scale)`` given to :func:`~.base.normalise`: None for RevIN, else the series'."""
        return (None, None) if self.revin else (self.series_mean_, self.series_std_)

    # ---- forecasts of the parts ------------------------------------------------------

    def _forecast(self, contexts: np.ndarray, kind: str | None = None) -> np.ndarray:
        """The forecast (n, C, horizon_) from windows (n, C, context_length_).

        ``kind``: "seasonal_naive", "base" or "network"; None: ``selected_`` (of
        ``base="seasonal_ridge"`` or ``None``; the combination forecasts by
        :meth:`_combined` and :meth:`_combined_windows`).
        """
        kind = kind or self.selected_
        if kind == "network":
            device = resolve_device(self.device)
            with threads(self.n_jobs), torch.no_grad():
                net = self._trained_net(device)
                parts = [net(to_device(contexts[s:s + 256], device)).cpu().numpy()
                         for s in range(0, len(contexts), 256)]
            return np.concatenate(parts).astype(np.float64) if parts else np.empty(
                (0, self.n_channels_, self.horizon_))
        contexts = contexts.astype(np.float64)
        if kind == "seasonal_naive":
            return contexts @ seasonal_naive_weights(self.context_length_, self.horizon_,
                                                     self.sp_)
        return contexts @ self.base_weights_ + self.base_intercept_

    def _network_windows(self, windows: np.ndarray) -> np.ndarray:
        """The network's forecasts (n, C, horizon_) after windows (n, T, C)."""
        contexts = windows[:, -self.context_length_:].transpose(0, 2, 1)
        return self._forecast(contexts.astype(np.float32), "network")

    def _combined(self, values: np.ndarray) -> np.ndarray:
        """The combination's forecast (C, horizon_) after ``values`` (T, C), by its weights.

        Fits the combined classical candidates on ``values`` and keeps their
        parameters (``combination_parameters_``, see :mod:`.batched`); the network,
        where weighted, forecasts from the last window as trained. The weights of
        candidates that fail on ``values`` go to the others; the seasonal naive of
        the last window if all fail.
        """
        weights, fitted = self.combination_weights_, {}
        forecasts = candidate_forecasts(values, [name for name in weights if name != "network"],
                                        self.sp_, self.horizon_, self.n_jobs, fitted,
                                        lookbacks=self._linear_lookbacks())
        self.combination_parameters_ = {name: window_parameters(name, f, values, self.sp_)
                                        for name, f in fitted.items()}
        if "network" in weights:
            forecasts["network"] = self._network_windows(values[None])[0]
        if not forecasts:
            return self._forecast(values[-self.context_length_:].T[None], "seasonal_naive")[0]
        total = sum(weights[name] for name in forecasts)
        return sum(weights[name] * forecast for name, forecast in forecasts.items()) / total

    def _combined_windows(self, windows: np.ndarray) -> np.ndarray:
        """The combination's forecasts (n, C, horizon_) after windows (n, T, C), nothing refit.

        Each classical candidate forecasts from the parameters fitted on the whole
        series (:func:`~.batched.batched_forecasts`), the network as trained; in a window
        where one cannot, its weight goes to the others, and where none can, the
        seasonal naive forecasts.
        """
        forecasts = batched_forecasts(windows, self.combination_parameters_, self.sp_,
                                      self.horizon_)
        if "network" in self.combination_weights_:
            forecasts["network"] = self._network_windows(windows)
        fallback = self._forecast(windows[:, -self.context_length_:].transpose(0, 2, 1),
                                  "seasonal_naive")
        if not forecasts:
            return fallback
        stack = np.stack(list(forecasts.values()))  # (k, n, C, H)
        weights = np.array([self.combination_weights_[name] for name in forecasts])[:, None] * (
            np.isfinite(stack).all(axis=(2, 3)))  # (k, n)
        total = weights.sum(0)
        combined = np.einsum("kn,knch->nch", weights, np.nan_to_num(stack)) / np.where(
            total > 0, total, 1.0)[:, None, None]
        return np.where((total > 0)[:, None, None], combined, fallback)

    def _forecast_windows(self, windows: np.ndarray) -> np.ndarray:
        """The ``selected_`` forecasts (n, horizon_, C) after checked windows (n, T, C)."""
        if self.base == "combination":
            return self._combined_windows(windows).transpose(0, 2, 1)
        contexts = windows[:, -self.context_length_:].transpose(0, 2, 1)  # (n, C, L)
        return self._forecast(contexts).transpose(0, 2, 1)

    def _context(self) -> np.ndarray:
        """The last ``context_length_`` values seen, as one window (1, C, L)."""
        return self.recent_.to_numpy(np.float32)[-self.context_length_:].T[None]

    def _current(self) -> np.ndarray:
        """The forecast (C, H) from the cutoff."""
        if self.base == "combination":
            return self.combination_forecast_
        return self._forecast(self._context())[0]

    def _quantiles(self, alpha) -> np.ndarray:
        """Forecast quantiles (len(alpha), C, H) from the cutoff.

        The errors (``calibration_residuals_``) are in the units of each window's
        scale, so they are rescaled by the scale of the current context. Their
        empirical quantiles; with ``base="combination"`` (a few rolling origins),
        Student's t quantiles from their root mean square
        (:func:`~.combination.gaussian_quantiles`).
        """
        scale = normalise(self._context().astype(np.float64), *self._statistics())[2]
        few = self.base == "combination" or not self.validation_scores_ and (
            self.selected_ == "seasonal_naive")  # a few origins, or a short series' errors
        spread = gaussian_quantiles if few else residual_quantiles
        return self._current() + scale.reshape(-1, 1) * spread(self.calibration_residuals_,
                                                                alpha)

    # ---- fitting -----------------------------------------------------------------------

    def _fit_base(self, standardised: np.ndarray, train_end: int) -> None:
        """``base_weights_``, ``base_intercept_``: the seasonal ridge of regularisation
        ``base_alpha_`` on ``standardised[:train_end]``, as a map of raw windows."""
        self.base_weights_, self.base_intercept_ = to_raw(
            *ar_base(standardised[:train_end], self.sp_, self.context_length_, self.horizon_,
                     self.base_alpha_), self.series_mean_, self.series_std_)

    def _combine(self, values: np.ndarray, sp_given: bool) -> None:
        """Fit the combination, the fine-tuned network a candidate of it, weighed at the origins.

        Sets ``sp_`` (auto: as in :meth:`_select`, on all windows), the network
        (trained on the values before the first rolling origin, with no base:
        ``base_weights_`` None), ``combination_weights_``, ``validation_scores_``,
        ``calibration_residuals_`` and ``combination_forecast_``; ``selected_`` is
        "combination". The classical candidates are refit at every origin
        (:func:`~.guard.guard_at_origins`; on a long series fitted once before the origins'
        stretch, :func:`~.guard.guard_on_stretch`) and on the whole series."""
        length, horizon = self.context_length_, self.horizon_
        inputs, targets = sliding_windows(values.astype(np.float64), length, horizon,
                                          self.window_stride_)
        z, loc, scale = normalise(inputs, *self._statistics())
        if not sp_given:
            self.sp_ = seasonal_period(z, (targets - loc) / scale, self.sp_, horizon)
        origins = rolling_origins(len(values), horizon, self.n_origins,
                                  max(length + horizon, 3 * self.sp_))
        train_end = int(origins[0]) if len(origins) else len(values)
        self.base_weights_ = self.base_intercept_ = self.base_alpha_ = None
        n_windows = train_end - length - horizon + 1  # training windows before the origins
        self.finetuned_ = self._finetune_advised(n_windows)
        self._train(values[:train_end], None, int(self.max_epochs) if self.finetuned_ else 0)
        network = (lambda x: self._forecast(x, "network")) if self.finetuned_ else None
        long = n_windows >= LONG_SERIES_WINDOWS
        outcome = (guard_on_stretch if long else guard_at_origins)(
            values, train_end if long else origins, network, sp=self.sp_, horizon=horizon,
            context_length=length, std=self.series_std_, revin=self.revin, n_jobs=self.n_jobs,
            lookbacks=self._linear_lookbacks())
        self.combination_weights_, self.selected_ = outcome.weights, "combination"
        self.validation_scores_, residuals = outcome.scores, outcome.residuals
        if residuals is None:  # nothing measured: the seasonal naive's errors on all windows
            residuals = (targets - self._forecast(inputs, "seasonal_naive")) / (
                scale if self.revin else self.series_std_[:, None])
        self.calibration_residuals_ = residuals[-MAX_CALIBRATION_WINDOWS:].astype(np.float32)
        self.combination_forecast_ = self._combined(values)

    def _select(self, values: np.ndarray, sp_given: bool) -> None:
        """Fit the base, fine-tune its correction, pick the best on the held-out windows.

        Sets ``sp_`` (auto: the detected period or 1, whichever seasonal naive
        errs less on the training windows), the base, the network, ``selected_``,
        ``validation_scores_`` and ``calibration_residuals_``
        (:func:`~.selection.select_on_held_out`); a selected base is then refit on
        the whole series (the network stays on the base it was trained on).
        """
        length, horizon, stride = self.context_length_, self.horizon_, self.window_stride_
        inputs, targets = sliding_windows(values.astype(np.float64), length, horizon, stride)
        train_idx, val_idx = temporal_split(len(inputs), self.validation_fraction, horizon,
                                            stride)
        z, loc, scale = normalise(inputs, *self._statistics())
        if not sp_given:
            self.sp_ = seasonal_period(z[train_idx], ((targets - loc) / scale)[train_idx],
                                       self.sp_, horizon)
        mean, std = self.series_mean_[:, None], self.series_std_[:, None]
        standardised = (values - self.series_mean_) / self.series_std_
        train_end = int(train_idx[-1]) * stride + length + horizon if len(val_idx) else len(values)
        self.base_weights_ = self.base_intercept_ = self.base_alpha_ = None
        if self.base is not None:
            self.base_alpha_ = choose_alpha(
                standardised, self.sp_, (inputs[val_idx] - mean) / std,
                (targets[val_idx] - mean) / std, train_end)[0]
            self._fit_base(standardised, train_end)
        self.finetuned_ = self.base is None or self._finetune_advised(len(inputs) * stride)
        self._train(values, None, int(self.max_epochs) if self.finetuned_ else 0)
        kinds = (() if self.base is None
                 else ("seasonal_naive", "base", "network")[:3 if self.finetuned_ else 2])
        self.selected_, self.validation_scores_, rows = select_on_held_out(
            inputs, targets, val_idx, kinds, "network" if self.finetuned_ else "base", std,
            self._forecast)
        window_scale = scale[rows] if self.revin else scale
        self.calibration_residuals_ = (
            (targets[rows] - self._forecast(inputs[rows].astype(np.float32))) / window_scale
        ).astype(np.float32)
        if self.selected_ == "base" and len(val_idx):
            self._fit_base(standardised, len(values))

    def _extend(self, y: pd.DataFrame, update_params: bool) -> None:
        """Add the new values ``y`` (``update``); with ``update_params``, fine-tune on them.

        The new values extend ``recent_`` (the last ``context_length_ + horizon_``
        values seen; all of them with ``base="combination"``, whose candidates are
        refit on them, with their weights as fitted). With ``update_params`` and
        the network forecasting, one epoch continues from the trained weights over
        every window whose target holds new values (at stride 1, whatever
        ``window_stride_``: they are few); the base, the selection and the intervals
        stay as fitted.
        """
        check_series(y)
        combined = pd.concat([self.recent_, y[self.recent_.columns]])
        combined = combined[~combined.index.duplicated(keep="last")].sort_index()
        span = self.context_length_ + self.horizon_
        n_new = int((~y.index.isin(self.recent_.index)).sum())
        if update_params and n_new and self._network_forecasts():
            with threads(self.n_jobs):
                self._train(check_series(combined.iloc[-(span + n_new - 1):]),
                            self.trained_state_, 1, window_stride=1)
        if self.base == "combination":
            self.recent_ = combined
            self.combination_forecast_ = self._combined(check_series(combined))
        else:
            self.recent_ = combined.iloc[-span:]
