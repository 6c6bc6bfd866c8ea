"""TimePEFTForecaster: parameter-efficient fine-tuning of a pretrained backbone, for sktime.

The sktime glue only: the checks of data and horizons are in :mod:`.checks`, the
network's assembly in :mod:`.network`, fine-tuning in :mod:`.training`, the
backbone checkpoints in :mod:`.loading`.

Imported lazily (``skfm.TimePEFTForecaster``) because importing sktime takes
seconds. The fitted forecaster holds no torch objects: the trained weights are
numpy arrays (``trained_state_``), the frozen backbone comes from the
checkpoint, and the network is rebuilt for every prediction. Its pickled
state holds pandas objects as plain values (:mod:`._plain_state`), so pickle,
``copy.deepcopy`` and ``skops.io`` round-trip.
"""

from __future__ import annotations

import os
from numbers import Integral, Real

import numpy as np
import pandas as pd
import torch
from sklearn.utils._param_validation import Interval, StrOptions, validate_parameter_constraints
from sktime.forecasting.base import BaseForecaster

from skfm._backend import draw_seed, resolve_device, threads, to_device
from skfm._selection import significantly_better
from skfm.timeseries.forecasting._plain_state import from_plain, to_plain
from skfm.timeseries.forecasting.adapters import FORMS, ForecastNet
from skfm.timeseries.forecasting.base import (
    ar_base,
    auto_context_length,
    choose_alpha,
    detect_period,
    normalise,
    residual_quantiles,
    seasonal_naive_weights,
    seasonal_period,
    to_raw,
)
from skfm.timeseries.forecasting.checks import (
    MAX_HORIZON,
    check_context_length,
    check_length,
    check_series,
    check_steps,
    check_windows,
    refuse_text_columns,
    resolve_horizon,
)
from skfm.timeseries.forecasting.combination import (
    CANDIDATES,
    candidate_forecasts,
    combination_weights,
    gaussian_quantiles,
    rolling_origins,
)
from skfm.timeseries.forecasting.complexity import finetuning_advisable
from skfm.timeseries.forecasting.loading import DEFAULT_CHECKPOINT, backbone_config
from skfm.timeseries.forecasting.network import (
    ADAPTERS,
    build_net,
    load_state,
    n_backbone_params,
    trainable_state,
)
from skfm.timeseries.forecasting.training import SCHEDULES, sliding_windows, temporal_split, train

#: Bases of the forecast (``base`` parameter); None: the network alone, as in the paper.
BASES = ("combination", "seasonal_ridge")
#: Windows whose errors give the prediction intervals: at most the last 500; the held-out
#: ones where there are at least 30 of them (else all, whose errors are partly in-sample).
MAX_CALIBRATION_WINDOWS, MIN_CALIBRATION_WINDOWS = 500, 30


class TimePEFTForecaster(BaseForecaster):
    """Forecaster: a combination of classical forecasters plus a correction by an adapted backbone.

    By default (``base="combination"``) the forecast is

    1. a **combination** of classical forecasters fitted by sktime
       (:data:`~skfm.timeseries.forecasting.combination.CANDIDATES`: an
       ``AutoETS`` on the deseasonalised series, ``ThetaForecaster``, a
       recursive ridge on the lags from ``make_reduction``, the seasonal
       naive and the naive ``NaiveForecaster``, and for several channels a
       ``VAR`` on the deseasonalised series, at the period ``sp_``): the
       equal mean of the two that forecast best at the rolling origins (see
       3.; ``combination_weights_``), or the best alone where the second errs
       three times as much or more there;
    2. plus a **correction** by the adapted backbone: the last
       ``context_length_`` values, normalised, cut into patches and embedded
       by a small transformer (MOMENT-like, pretrained with ``skfm pretrain
       timeseries-backbone`` on synthetic series; see ``checkpoint``), then a
       linear head that starts at zero. The network is fine-tuned to correct a
       seasonal autoregression (a ridge from the last lags of the standardised
       series to what the seasonal naive misses one step ahead, run
       recursively), and what it adds to that is added to the combination, so
       that an untrained correction gives the combination back;
    3. a **guard** on rolling origins: at up to ``n_origins`` origins, one
       horizon apart at the end of the series, every candidate is refit on
       everything before the origin and forecasts the horizon after it (the
       ridge and the network see only the values before the first origin).
       The correction is kept only where it lowers the combination's MSE at
       the origins significantly: a one-sided paired t-test of the MSEs per
       origin at the 5 % level (with 4 origins the mean gain must exceed 2.35
       of its standard errors; ``selected_`` is ``"network"``, else
       ``"combination"``; the MSEs are in ``validation_scores_``). The errors
       of the kept forecast at the origins, in units of each window's scale, give the prediction
       intervals (``predict_interval``, ``predict_quantiles``): Student's t
       quantiles of their root mean square per step and channel.

    ``base="seasonal_ridge"`` forecasts the seasonal autoregression plus the
    correction, with the older guard: the last ``validation_fraction`` of the
    windows is held out, the seasonal naive, the autoregression and the
    network are compared on it and the best is kept; the empirical quantiles
    of its errors there give the intervals. ``base=None``: the network alone,
    as in the Time-PEFT paper.

    The seasonal period is detected (``sp="auto"``: sktime's ``SeasonalityACF``
    on the first differences) and sets the lookback (``context_length="auto"``:
    four seasons, at least 96 values). ``finetune="auto"`` fine-tunes only
    where the complexity diagnostics (:func:`~skfm.timeseries.forecasting.finetuning_advisable`)
    advise it. Measured against sktime's forecasters in
    ``docs/benchmarks/timepeft_suite.md``.

    Only small modules are fine-tuned on the series given to ``fit``, on all
    its sliding windows:

    * ``adapter="timepeft"``: LoRA on the attention ``q``, ``k``, ``v``
      projections, the frequency adapter (top-``k`` rFFT filtering along the
      patches), the channel adapter (shared down-, per-channel up-projection)
      and the linear forecasting head;
    * ``"lora"``: LoRA and the head; ``"linear_probe"``: the head only;
      ``"full"``: every weight of the backbone and the head.

    Channels are forecast jointly only through the channel adapter; otherwise
    each channel is a separate series through the same network. Fine-tuning
    uses AdamW, a temporal validation tail for early stopping (the best weights
    are kept) and a fixed seed.

    Parameters
    ----------
    adapter : {"timepeft", "lora", "linear_probe", "full"}, default="timepeft"
        What is trained (see above).
    adapter_form : {"residual", "paper"}, default="residual"
        ``"paper"``: the channel adapter's output replaces the backbone
        embeddings (official code). ``"residual"``: it is added to them, from
        a zero-initialised up-projection (training starts from the backbone's
        embeddings). Only used with ``adapter="timepeft"``.
    checkpoint : str, default="timepeft-backbone-v2"
        Backbone: a shipped name (``"timepeft-backbone-v2"``, pretrained on a
        CPU; its size and recipe are on its card), a path to a
        ``.safetensors`` file with its card (e.g. exported by
        ``skfm pretrain timeseries-backbone``), a name in
        ``$SKFM_HOME``, a ``hf://`` id, or ``"random:<config>"``
        (``"random:small"``: the same architecture at a fixed random
        initialisation, seed 0 -- the baseline of the release gate in
        ``docs/benchmarks/timepeft.md``).
    sp : "auto" or int, default="auto"
        Seasonal period of the seasonal naive forecast in the base. ``"auto"``:
        the period with the most significant autocorrelation of the first
        differences (sktime's ``SeasonalityACF``, per channel, the most common
        over the channels; at most half the backbone's longest context), or
        1 (the last value) where that forecasts the training windows better,
        or where the period does not fit in the context. An int is used as
        given (it must fit in the context).
    context_length : "auto" or int, default="auto"
        Lookback window: the last ``context_length_`` values are the input of
        every forecast. ``"auto"``: four seasons (``4 * sp_``), at least 96
        values, rounded up to the backbone's patch length (8), at most its
        longest context (512) and at most half of what the series leaves
        after one horizon. An int: a multiple of the patch length, at most the
        longest context.
    horizon : int or None, default=None
        Length of the forecasting head, hence the largest step ``predict``
        accepts (at most 720). None: the largest step of the ``fh`` passed to
        ``fit``, or 24 if ``fit`` gets no ``fh``.
    base : {"combination", "seasonal_ridge"} or None, default="combination"
        The base the network corrects (see above). None: the network alone,
        as in the paper (no guard; the network is always fine-tuned and used).
    finetune : "auto" or bool, default="auto"
        Fine-tune the correction: ``"auto"`` where the complexity
        diagnostics advise it (``complexity_.advisable``), True always, False
        never (the forecast is then the base, or with ``"seasonal_ridge"``
        the seasonal naive where that did better). Ignored with ``base=None``.
    n_origins : int, default=4
        Rolling origins of the guard with ``base="combination"`` (fewer where
        the series is short: each leaves at least ``context_length_ +
        horizon_`` and three seasons before it). Without any, the combination
        is the seasonal naive alone (the naive where ``sp_ == 1``), the
        network is used where fine-tuned, and the intervals come from the
        seasonal naive's errors on all windows.
    top_k : int, default=3
        Frequency bins kept by the frequency adapter.
    lora_rank : int, default=8
    lora_alpha : float, default=16.0
        LoRA update scale ``lora_alpha / lora_rank``.
    max_epochs : int, default=10
        Passes over the training windows at most.
    batch_size : int, default=64
        Windows per optimiser step.
    learning_rate : float, default=1e-3
        AdamW learning rate of the adapters and the head.
    backbone_learning_rate : float, default=1e-4
        AdamW learning rate of the backbone for ``adapter="full"``.
    learning_rate_schedule : {"constant", "step"}, default="constant"
        ``"step"``: halve both learning rates every 5 epochs, as the official
        Time-PEFT code does (``StepLR(step_size=5, gamma=0.5)``); it is meant
        for a large ``max_epochs`` with early stopping. ``"constant"``: keep
        them. On the chaotic benchmark sets it gave Time-PEFT and LoRA about
        the mean error of a constant rate with a shorter budget, with less
        spread between seeds, and made full fine-tuning and the linear probe
        worse (figures in ``docs/benchmarks/timepeft_step_lr.md``).
    window_stride : int, default=1
        Step between the starts of consecutive training windows (larger:
        fewer windows, faster fine-tuning).
    validation_fraction : float, default=0.1
        Share of the windows, at the end of the series, held out for early
        stopping (and, with ``base="seasonal_ridge"``, for the guard and the
        intervals); the training windows end before the held-out targets begin. 0 or
        fewer than 10 windows: no held-out windows, the network is used
        (the base where not fine-tuned) and the intervals come from the
        errors on the training windows (too narrow where the network or the
        base fit them closely).
    n_iter_no_change : int, default=3
        Stop after this many epochs without a lower validation loss.
    revin : bool, default=True
        Normalise every input window by its own mean and standard deviation
        (reversible instance normalisation, as in pretraining) and fine-tune
        on errors in those units. False: standardise every channel with the
        mean and standard deviation of the series given to ``fit``
        (``series_mean_``, ``series_std_``) and fine-tune on errors in those
        units, so that the network sees each window's level. That suits
        stationary series whose level carries information (the chaotic
        systems) and fails on trending ones (figures in
        ``docs/benchmarks/timepeft_no_revin.md``).
    verbose : bool, default=False
        Show a progress bar while fine-tuning (never when the environment
        variable ``SKFM_PROGRESS`` is ``0``).
    device : str, default="auto"
        ``"auto"``, ``"cpu"``, ``"cuda"``, ``"cuda:N"`` or ``"mps"``.
    n_jobs : int or None, default=None
        CPU threads for torch (-1: all cores).
    random_state : int, RandomState or None, default=0
        Seeds the adapters' initialisation, dropout and the window order.

    Attributes
    ----------
    horizon_ : int
        Length of the trained head: the largest step ``predict`` accepts.
    sp_ : int
        Seasonal period of the seasonal naive forecast (1: the last value).
    context_length_ : int
        Lookback used.
    base_weights_, base_intercept_ : ndarray of shape (context_length, horizon) and (n_channels, horizon)
        The base as an affine map of the raw window, ``window @ base_weights_ +
        base_intercept_`` (None if ``base=None``).
    base_alpha_ : float or None
        Regularisation of the seasonal ridge: the one that forecasts the
        held-out windows best with ``"seasonal_ridge"`` (``RidgeCV``'s choice
        on the one-step data without them, and with ``"combination"``).
    combination_weights_ : dict of str to float
        With ``base="combination"``: the weight of each candidate combined.
    combination_forecast_ : ndarray of shape (n_channels, horizon)
        With ``base="combination"``: the combination's forecast from the cutoff.
    finetuned_ : bool
        Whether the correction was fine-tuned.
    selected_ : {"combination", "network"} or {"seasonal_naive", "base", "network"}
        The forecast ``predict`` gives, chosen at the rolling origins (on the
        held-out windows with ``base="seasonal_ridge"``).
    validation_scores_ : dict of str to float
        MSE at the rolling origins of every candidate, the combination and
        (when fine-tuned) the network (of the seasonal naive, the base and the
        network on the held-out windows with ``"seasonal_ridge"``), in units
        of the series' standard deviation per channel (empty without origins,
        held-out windows or base).
    calibration_residuals_ : ndarray of shape (n_windows, n_channels, horizon)
        Errors of the selected forecast at the rolling origins (on the
        held-out windows with ``"seasonal_ridge"``; on all windows for the
        seasonal naive or with too few of them; the last 500 at most),
        divided by each window's scale: the intervals' source.
    n_channels_ : int
    trained_state_ : dict of str to ndarray
        The trained weights (adapters, LoRA, head; all weights for ``"full"``).
    n_trainable_params_ : int
    n_backbone_params_ : int
        Parameters of the (frozen unless ``"full"``) backbone.
    n_epochs_ : int
        Epochs run (early stopping may end fine-tuning before ``max_epochs``).
    series_mean_, series_std_ : ndarray of shape (n_channels,)
        Per-channel mean and standard deviation (1 where constant) of the
        series given to ``fit``; used when ``revin=False``.
    validation_loss_ : float or None
        Best validation MSE, in the units the network normalises to (each
        window's RevIN scale; the series' with ``revin=False``); None
        without a validation tail.
    fit_seconds_ : float
        Wall time of fine-tuning.
    complexity_ : ComplexityReport
        Complexity diagnostics of the training series
        (:func:`~skfm.timeseries.forecasting.complexity.finetuning_advisable`).
    temporal_complexity_ : float
        Mean normalised spectral entropy of the channels.
    multichannel_complexity_ : float
        Mean lagged transfer entropy between channels (0 if univariate).

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> from skfm import TimePEFTForecaster
    >>> t = np.arange(400)
    >>> y = pd.Series(np.sin(2 * np.pi * t / 24) + 0.01 * t)
    >>> forecaster = TimePEFTForecaster(max_epochs=2, window_stride=4)
    >>> forecaster = forecaster.fit(y, fh=np.arange(1, 13))
    >>> forecaster.predict().shape
    (12,)
    >>> forecaster.sp_, forecaster.context_length_
    (24, 96)
    >>> forecaster.selected_ in forecaster.validation_scores_
    True
    >>> forecaster.predict_interval(coverage=0.9).shape
    (12, 2)
    """

    _tags = {
        "authors": ["skfm"],
        "python_dependencies": ["torch"],
        "y_inner_mtype": "pd.DataFrame",
        "X_inner_mtype": "pd.DataFrame",
        "capability:multivariate": True,
        "capability:exogenous": False,
        "requires-fh-in-fit": False,
        "capability:missing_values": False,
        "capability:insample": False,
        "capability:pred_int": True,
        "capability:random_state": True,
        "property:randomness": "derandomized",
        "capability:update": True,
    }

    def __init__(
        self,
        adapter="timepeft",
        adapter_form="residual",
        checkpoint=DEFAULT_CHECKPOINT,
        sp="auto",
        context_length="auto",
        horizon=None,
        base="combination",
        finetune="auto",
        n_origins=4,
        top_k=3,
        lora_rank=8,
        lora_alpha=16.0,
        max_epochs=10,
        batch_size=64,
        learning_rate=1e-3,
        backbone_learning_rate=1e-4,
        learning_rate_schedule="constant",
        window_stride=1,
        validation_fraction=0.1,
        n_iter_no_change=3,
        revin=True,
        verbose=False,
        device="auto",
        n_jobs=None,
        random_state=0,
    ):
        self.adapter = adapter
        self.adapter_form = adapter_form
        self.checkpoint = checkpoint
        self.sp = sp
        self.context_length = context_length
        self.horizon = horizon
        self.base = base
        self.finetune = finetune
        self.n_origins = n_origins
        self.top_k = top_k
        self.lora_rank = lora_rank
        self.lora_alpha = lora_alpha
        self.max_epochs = max_epochs
        self.batch_size = batch_size
        self.learning_rate = learning_rate
        self.backbone_learning_rate = backbone_learning_rate
        self.learning_rate_schedule = learning_rate_schedule
        self.window_stride = window_stride
        self.validation_fraction = validation_fraction
        self.n_iter_no_change = n_iter_no_change
        self.revin = revin
        self.verbose = verbose
        self.device = device
        self.n_jobs = n_jobs
        self.random_state = random_state
        super().__init__()

    # ---- persistence -------------------------------------------------------------

    def __getstate__(self):
        """The state with pandas objects as plain values, so that ``skops.io`` can store it."""
        return to_plain(self.__dict__)

    def __setstate__(self, state):
        self.__dict__.update(from_plain(state))

    # ---- parameters --------------------------------------------------------------

    #: Checked at the start of ``fit`` (scikit-learn's validation); an int
    #: ``context_length`` against the backbone's patch length and reach in ``_fit``.
    _parameter_constraints: dict = {
        "adapter": [StrOptions(set(ADAPTERS))],
        "adapter_form": [StrOptions(set(FORMS))],
        "checkpoint": [str, os.PathLike],
        "sp": [StrOptions({"auto"}), Interval(Integral, 1, None, closed="left")],
        "context_length": [StrOptions({"auto"}), Interval(Integral, 1, None, closed="left")],
        "horizon": [Interval(Integral, 1, MAX_HORIZON, closed="both"), None],
        "base": [StrOptions(set(BASES)), None],
        "finetune": [StrOptions({"auto"}), "boolean"],
        "n_origins": [Interval(Integral, 1, None, closed="left")],
        "top_k": [Interval(Integral, 1, None, closed="left")],
        "lora_rank": [Interval(Integral, 1, None, closed="left")],
        "lora_alpha": [Interval(Real, 0, None, closed="neither")],
        "max_epochs": [Interval(Integral, 1, None, closed="left")],
        "batch_size": [Interval(Integral, 1, None, closed="left")],
        "learning_rate": [Interval(Real, 0, None, closed="neither")],
        "backbone_learning_rate": [Interval(Real, 0, None, closed="neither")],
        "learning_rate_schedule": [StrOptions(set(SCHEDULES))],
        "window_stride": [Interval(Integral, 1, None, closed="left")],
        "validation_fraction": [Interval(Real, 0, 1, closed="left")],
        "n_iter_no_change": [Interval(Integral, 1, None, closed="left")],
        "revin": ["boolean"],
        "verbose": ["verbose"],
        "device": [str, torch.device, None],
        "n_jobs": [Integral, None],
        "random_state": ["random_state"],
    }

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

    def _train(self, values: np.ndarray, init_state: dict | None, max_epochs: int) -> None:
        """Fine-tune on all windows of ``values`` (T, C); sets ``trained_state_`` and stats.

        ``max_epochs=0``: no fine-tuning, the network's initial weights.
        """
        seed = self._seed()
        net = self._build_net(values.shape[1], seed)
        if init_state is not None:
            load_state(net, init_state)
        result = None
        if max_epochs:
            result = train(
                net, values, context_length=self.context_length_, horizon=self.horizon_,
                window_stride=self.window_stride, validation_fraction=self.validation_fraction,
                learning_rate=self.learning_rate,
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

    def _statistics(self):
        """``(loc, scale)`` given to :func:`~.base.normalise`: None for RevIN, else the series'."""
        return (None, None) if self.revin else (self.series_mean_, self.series_std_)

    def _forecast(self, contexts: np.ndarray, kind: str | None = None,
                  combination: np.ndarray | None = None) -> np.ndarray:
        """The forecast (n, C, horizon_) from windows (n, C, context_length_).

        ``kind``: "seasonal_naive", "base", "combination" or "network"; None:
        ``selected_``. ``combination`` (n, C, horizon_): the combination's
        forecasts after the windows (``base="combination"``); the network then
        adds its correction (its output minus the seasonal ridge it was
        trained on) to them.
        """
        kind = kind or self.selected_
        if kind == "combination":
            return combination
        if kind == "network":
            device = resolve_device(self.device)
            with threads(self.n_jobs), torch.no_grad():
                net = self._trained_net(device)
                parts = [net(to_device(contexts[s:s + 256], device)).cpu().numpy()
                         for s in range(0, len(contexts), 256)]
            out = np.concatenate(parts).astype(np.float64) if parts else np.empty(
                (0, self.n_channels_, self.horizon_))
            if combination is None:
                return out
            return combination + out - self._forecast(contexts, "base")
        contexts = contexts.astype(np.float64)
        if kind == "seasonal_naive":
            return contexts @ seasonal_naive_weights(self.context_length_, self.horizon_,
                                                     self.sp_)
        return contexts @ self.base_weights_ + self.base_intercept_

    def _combined(self, values: np.ndarray) -> np.ndarray:
        """The combination's forecast (C, horizon_) after ``values`` (T, C), by its weights.

        The weights of candidates that fail on ``values`` go to the others;
        the seasonal naive of the last window if all fail.
        """
        weights = self.combination_weights_
        forecasts = candidate_forecasts(values, weights, self.sp_, self.horizon_, self.n_jobs)
        if not forecasts:
            return self._forecast(values[-self.context_length_:].T[None], "seasonal_naive")[0]
        total = sum(weights[name] for name in forecasts)
        return sum(weights[name] * forecast for name, forecast in forecasts.items()) / total

    def _combine(self, values: np.ndarray, sp_given: bool) -> None:
        """Fit the combination and the correction; keep the correction if it beats it clearly.

        Sets ``sp_`` (auto: as in :meth:`_select`, on all windows), the
        seasonal ridge (the base the network is trained on), the network,
        ``combination_weights_``, ``selected_``, ``validation_scores_``,
        ``calibration_residuals_`` and ``combination_forecast_``. The ridge and
        the network see only the values before the first rolling origin; the
        candidates are refit at every origin and on the whole series.
        """
        length, horizon = self.context_length_, self.horizon_
        inputs, targets = sliding_windows(values.astype(np.float64), length, horizon,
                                          self.window_stride)
        z, loc, scale = normalise(inputs, *self._statistics())
        if not sp_given:
            self.sp_ = seasonal_period(z, (targets - loc) / scale, self.sp_, horizon)
        origins = rolling_origins(len(values), horizon, self.n_origins,
                                  max(length + horizon, 3 * self.sp_))
        train_end = int(origins[0]) if len(origins) else len(values)
        standardised = (values - self.series_mean_) / self.series_std_
        self.base_alpha_ = choose_alpha(standardised, self.sp_, inputs[:0], targets[:0],
                                        train_end)[0]
        self.base_weights_, self.base_intercept_ = to_raw(
            *ar_base(standardised[:train_end], self.sp_, length, horizon, self.base_alpha_),
            self.series_mean_, self.series_std_)
        advisable = self.complexity_.advisable if self.finetune == "auto" else self.finetune
        self.finetuned_ = bool(advisable)
        self._train(values[:train_end], None, int(self.max_epochs) if self.finetuned_ else 0)

        std = self.series_std_[:, None]
        truths = np.stack([values[o:o + horizon].T for o in origins]) if len(origins) else None
        at_origins = [candidate_forecasts(values[:o], CANDIDATES, self.sp_, horizon,
                                          self.n_jobs) for o in origins]
        errors = {}  # each candidate's MSE per origin: those that forecast at every origin
        for name in CANDIDATES:
            if at_origins and all(name in f for f in at_origins):
                forecasts = np.stack([f[name] for f in at_origins])
                errors[name] = np.mean(((forecasts - truths) / std) ** 2, axis=(1, 2))
        # no origin, nothing measured: the seasonal naive (the naive without a season) alone,
        # the baseline a forecaster must not lose to
        self.combination_weights_ = (combination_weights(errors) if errors else
                                     {"seasonal_naive" if self.sp_ > 1 else "naive": 1.0})
        scores, residuals = {name: float(e.mean()) for name, e in errors.items()}, None
        self.selected_ = "network" if self.finetuned_ else "combination"
        if errors:
            combined = np.stack([sum(w * f[name] for name, w in self.combination_weights_.items())
                                 for f in at_origins])
            contexts = np.stack([values[o - length:o].T for o in origins]).astype(np.float32)
            kinds = ("combination", "network")[:2 if self.finetuned_ else 1]
            forecasts = {kind: self._forecast(contexts, kind, combined) for kind in kinds}
            by_origin = {kind: np.mean(((f - truths) / std) ** 2, axis=(1, 2))
                         for kind, f in forecasts.items()}
            scores.update({kind: float(e.mean()) for kind, e in by_origin.items()})
            self.selected_ = ("network" if self.finetuned_ and significantly_better(
                by_origin["combination"], by_origin["network"]) else "combination")
            window_scale = (normalise(contexts.astype(np.float64))[2] if self.revin
                            else std[None])
            residuals = (truths - forecasts[self.selected_]) / window_scale
        else:  # no origin: the seasonal naive's errors on all windows
            residuals = (targets - self._forecast(inputs, "seasonal_naive")) / (
                scale if self.revin else std)
        self.validation_scores_ = scores
        self.calibration_residuals_ = residuals[-MAX_CALIBRATION_WINDOWS:].astype(np.float32)
        self.combination_forecast_ = self._combined(values)

    def _select(self, values: np.ndarray, sp_given: bool) -> None:
        """Fit the base, fine-tune the correction, pick the best on the held-out windows.

        Sets ``sp_`` (auto: the detected period or 1, whichever seasonal naive
        errs less on the training windows), the base, the network, ``selected_``,
        ``validation_scores_`` and ``calibration_residuals_``; a selected base is
        then refit on the whole series (the network stays on the base it was
        trained on).
        """
        length, horizon, stride = self.context_length_, self.horizon_, self.window_stride
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
            self.base_weights_, self.base_intercept_ = to_raw(
                *ar_base(standardised[:train_end], self.sp_, length, horizon, self.base_alpha_),
                self.series_mean_, self.series_std_)
        advisable = self.complexity_.advisable if self.finetune == "auto" else self.finetune
        self.finetuned_ = self.base is None or bool(advisable)
        self._train(values, None, int(self.max_epochs) if self.finetuned_ else 0)
        scores = {}
        if self.base is not None and len(val_idx):  # in units of the series' std
            kinds = ("seasonal_naive", "base", "network")[:3 if self.finetuned_ else 2]
            contexts = inputs[val_idx].astype(np.float32)
            scores = {kind: float(np.mean(((self._forecast(contexts, kind) - targets[val_idx])
                                           / std) ** 2)) for kind in kinds}
        self.validation_scores_ = scores
        self.selected_ = (min(scores, key=scores.get) if scores
                          else "network" if self.finetuned_ else "base")
        held_out = self.selected_ != "seasonal_naive" and len(val_idx) >= MIN_CALIBRATION_WINDOWS
        rows = (val_idx if held_out else np.arange(len(inputs)))[-MAX_CALIBRATION_WINDOWS:]
        window_scale = scale[rows] if self.revin else scale
        self.calibration_residuals_ = (
            (targets[rows] - self._forecast(inputs[rows].astype(np.float32))) / window_scale
        ).astype(np.float32)
        if self.selected_ == "base" and len(val_idx):
            self.base_weights_, self.base_intercept_ = to_raw(
                *ar_base(standardised, self.sp_, length, horizon, self.base_alpha_),
                self.series_mean_, self.series_std_)

    # ---- sktime interface ----------------------------------------------------------

    def fit(self, y, X=None, fh=None):
        """Fine-tune the adapters on ``y`` (sktime's ``fit``; see :meth:`BaseForecaster.fit`).

        Parameters
        ----------
        y : pd.Series, pd.DataFrame or np.ndarray
            The series (one column per channel), numeric, regular index.
        X : ignored
            Exogenous data is not used.
        fh : ForecastingHorizon, int or array-like, optional
            The horizon; needed here or in ``predict``.

        Returns
        -------
        self : TimePEFTForecaster

        Raises
        ------
        sklearn.utils._param_validation.InvalidParameterError
            A parameter has a wrong type or value (a ``ValueError``).
        TypeError
            ``y`` has non-numeric columns (named in the message); checked before
            sktime's own conversion, whose message names none.
        """
        validate_parameter_constraints(self._parameter_constraints, self.get_params(deep=False),
                                       caller_name=type(self).__name__)
        refuse_text_columns(y)
        return super().fit(y, X=X, fh=fh)

    def update(self, y, X=None, update_params=True):
        """Add new values of ``y`` (sktime's ``update``; see :meth:`BaseForecaster.update`).

        Parameters
        ----------
        y : pd.Series, pd.DataFrame or np.ndarray
            New values, continuing the index seen so far.
        X : ignored
        update_params : bool, default=True
            Also fine-tune one epoch on the new values.

        Returns
        -------
        self : TimePEFTForecaster
        """
        refuse_text_columns(y)
        return super().update(y, X=X, update_params=update_params)

    def _fit(self, y, X=None, fh=None):
        config = backbone_config(self.checkpoint)
        values = check_series(y)
        self.horizon_ = resolve_horizon(self.horizon,
                                        None if fh is None else fh.to_relative(self.cutoff))
        sp_given = self.sp != "auto"
        self.sp_ = int(self.sp) if sp_given else detect_period(values, config.max_context // 2)
        if self.context_length == "auto":
            self.context_length_ = auto_context_length(
                self.sp_, len(values), self.horizon_, config.patch_len, config.max_context)
        else:
            check_context_length(self.context_length, config)
            self.context_length_ = int(self.context_length)
        check_length(len(values), self.context_length_, self.horizon_)
        if self.sp_ > self.context_length_:
            if sp_given:
                raise ValueError(f"sp={self.sp} is longer than the context "
                                 f"({self.context_length_} values): lower sp or raise "
                                 "context_length (or give a longer series)")
            self.sp_ = 1
        self.n_channels_ = values.shape[1]
        self.series_mean_ = values.mean(0)
        std = values.std(0)
        self.series_std_ = np.where(std > 0, std, 1.0)
        self.complexity_ = finetuning_advisable(values)
        self.temporal_complexity_ = self.complexity_.temporal_complexity
        self.multichannel_complexity_ = self.complexity_.multichannel_complexity
        with threads(self.n_jobs):
            if self.base == "combination":
                self._combine(values, sp_given)
            else:
                self._select(values, sp_given)
        self.recent_ = y.copy() if self.base == "combination" else y.iloc[
            -(self.context_length_ + self.horizon_):].copy()
        return self

    def _context(self) -> np.ndarray:
        """The last ``context_length_`` values seen, as one window (1, C, L)."""
        return self.recent_.to_numpy(np.float32)[-self.context_length_:].T[None]

    def _current(self) -> np.ndarray:
        """The forecast (C, H) from the cutoff."""
        combination = (None if self.base != "combination"
                       else self.combination_forecast_[None])
        return self._forecast(self._context(), combination=combination)[0]

    def _predict(self, fh, X=None):
        steps = np.asarray(fh.to_relative(self.cutoff), dtype=int)
        check_steps(steps, self.horizon_)
        forecast = self._current().T[steps - 1]  # (len(fh), C)
        index = fh.to_absolute_index(self.cutoff)
        return pd.DataFrame(forecast, index=index, columns=self.recent_.columns)

    def _predict_quantiles(self, fh, X, alpha):
        """Forecast plus quantiles of the held-out errors, per step and channel.

        The errors (``calibration_residuals_``) are in the units of each window's
        scale, so they are rescaled by the scale of the current context. Their
        empirical quantiles; with ``base="combination"`` (a few rolling origins),
        Student's t quantiles from their root mean square
        (:func:`~.combination.gaussian_quantiles`).
        """
        steps = np.asarray(fh.to_relative(self.cutoff), dtype=int)
        check_steps(steps, self.horizon_)
        context = self._context()
        point = self._current()  # (C, H)
        scale = normalise(context.astype(np.float64), *self._statistics())[2].reshape(-1, 1)
        spread = gaussian_quantiles if self.base == "combination" else residual_quantiles
        quantiles = point + scale * spread(self.calibration_residuals_, alpha)
        values = quantiles[:, :, steps - 1].transpose(2, 1, 0)  # (len(fh), C, len(alpha))
        return pd.DataFrame(values.reshape(len(steps), -1),
                            index=fh.to_absolute_index(self.cutoff),
                            columns=self._get_columns(method="predict_quantiles", alpha=alpha))

    def forecast_windows(self, windows) -> np.ndarray:
        """Forecast ``horizon_`` steps after each of many windows at once (no state change).

        A path for backtesting: every window is a separate history; the
        forecast is the one ``predict`` gives (the ``selected_`` one). With
        ``base="combination"`` the combination's candidates are refit on each
        whole window (slow for many windows); otherwise only the last
        ``context_length_`` values of each are used (fast).

        Parameters
        ----------
        windows : array-like of shape (n_windows, n_timepoints, n_channels)
            ``n_timepoints >= context_length_``; channels in the order of ``fit``.

        Returns
        -------
        ndarray of shape (n_windows, horizon_, n_channels)

        Examples
        --------
        >>> import numpy as np, pandas as pd
        >>> from skfm import TimePEFTForecaster
        >>> y = pd.Series(np.sin(np.arange(300) / 4))
        >>> f = TimePEFTForecaster(context_length=32, max_epochs=1, window_stride=8).fit(y, fh=[1, 2])
        >>> f.forecast_windows(np.stack([y.to_numpy()[i:i + 32, None] for i in (0, 50)])).shape
        (2, 2, 1)
        """
        self.check_is_fitted()
        windows = check_windows(windows, self.context_length_, self.n_channels_)
        contexts = windows[:, -self.context_length_:].transpose(0, 2, 1)  # (n, C, L)
        combination = None
        if self.base == "combination":
            combination = np.stack([self._combined(w.astype(np.float64)) for w in windows])
        return self._forecast(contexts, combination=combination).transpose(0, 2, 1)

    def _update(self, y, X=None, update_params=True):
        """Forecast from the new cutoff; with ``update_params``, fine-tune on the new values.

        The new values extend ``recent_`` (the last ``context_length_ + horizon_``
        values seen; all of them with ``base="combination"``, whose candidates are
        refit on them, with their weights as fitted). With ``update_params`` and
        the network selected, one epoch continues from the trained weights over
        the windows whose targets hold new values; the base, the selection and
        the intervals stay as fitted.
        """
        check_series(y)
        combined = pd.concat([self.recent_, y[self.recent_.columns]])
        combined = combined[~combined.index.duplicated(keep="last")].sort_index()
        span = self.context_length_ + self.horizon_
        n_new = int((~y.index.isin(self.recent_.index)).sum())
        if update_params and n_new and self.selected_ == "network":
            with threads(self.n_jobs):
                self._train(check_series(combined.iloc[-(span + n_new - 1):]),
                            self.trained_state_, 1)
        if self.base == "combination":
            self.recent_ = combined
            self.combination_forecast_ = self._combined(check_series(combined))
        else:
            self.recent_ = combined.iloc[-span:]
        return self

    @classmethod
    def get_test_params(cls, parameter_set="default"):
        """Cheap, offline parameter sets: the tiny backbone at random initialisation.

        Parameters
        ----------
        parameter_set : str, default="default"

        Returns
        -------
        list of dict
        """
        tiny = {"checkpoint": "random:tiny", "context_length": 8, "horizon": 6,
                "max_epochs": 2, "batch_size": 8, "device": "cpu", "n_origins": 2}
        return [
            tiny,
            {**tiny, "adapter": "lora", "lora_rank": 2, "base": None},
            {**tiny, "adapter": "linear_probe", "horizon": None, "validation_fraction": 0.0,
             "context_length": "auto"},
            {**tiny, "adapter_form": "paper", "top_k": 1, "sp": 1, "finetune": True,
             "base": "seasonal_ridge"},
        ]
