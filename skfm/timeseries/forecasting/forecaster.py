"""TimePEFTForecaster: parameter-efficient fine-tuning of a pretrained backbone, for sktime.

Imported lazily (``skfm.TimePEFTForecaster``) because importing sktime takes
seconds. The fitted forecaster holds no torch objects: the trained weights are
numpy arrays (``trained_state_``), the frozen backbone comes from the
checkpoint, and the network is rebuilt for every prediction. Its pickled
state holds pandas objects as plain values (:mod:`._plain_state`), so pickle,
``copy.deepcopy`` and ``skops.io`` round-trip.
"""

from __future__ import annotations

import math
import numbers

import numpy as np
import pandas as pd
import torch
from sktime.forecasting.base import BaseForecaster

from skfm._backend import resolve_device, seeded, threads, to_device, torch_generator
from skfm._finetune import FineTuneConfig, fine_tune, param_groups
from skfm._weights import ModelFamily, fresh_model, load_weights
from skfm.timeseries._panel import MAX_MAGNITUDE
from skfm.timeseries.forecasting._plain_state import from_plain, to_plain
from skfm.timeseries.forecasting.adapters import FORMS, ForecastNet, add_lora
from skfm.timeseries.forecasting.backbone import (
    BackboneConfig,
    TimeSeriesBackbone,
    revin_denormalise,
)
from skfm.timeseries.forecasting.complexity import finetuning_advisable

#: Masked reconstruction plus an auxiliary forecasting loss (its card gives the recipe); it
#: passes the release gate of docs/benchmarks/timepeft.md: every adapter mode has a lower
#: mean MSE over the dev sets than on the random initialisation ``"random:small"``.
DEFAULT_CHECKPOINT = "timepeft-backbone-v2"
ADAPTERS = ("timepeft", "lora", "linear_probe", "full")
SCHEDULES = ("constant", "step")
#: The official code's StepLR: the learning rates halve every 5 epochs.
STEP_EPOCHS, STEP_FACTOR = 5, 0.5
#: Head length used when neither ``horizon`` nor an ``fh`` in ``fit`` gives one.
DEFAULT_HORIZON = 24
#: Largest head length (``horizon``) accepted.
MAX_HORIZON = 720
#: How backbone checkpoints become modules (see :mod:`skfm._weights.loader`).
BACKBONE = ModelFamily(
    "timeseries-backbone", lambda config: TimeSeriesBackbone(BackboneConfig(**config)),
    label="a timeseries-backbone",
)


def load_backbone(checkpoint: str) -> TimeSeriesBackbone:
    """A fresh :class:`TimeSeriesBackbone` with the weights of ``checkpoint``.

    ``checkpoint`` is a shipped name, a path, a name in ``$SKFM_HOME``, a
    ``hf://`` id, or ``"random:<config>"`` (``"random:small"``,
    ``"random:tiny"`` or a config json path): the architecture at a fixed
    random initialisation, the baseline a pretrained backbone must beat.
    """
    return fresh_model(checkpoint, BACKBONE)


def _backbone_config(checkpoint: str) -> BackboneConfig:
    return BackboneConfig(**load_weights(checkpoint, BACKBONE).config)


def _regular_index(index: pd.Index) -> bool:
    if isinstance(index, pd.PeriodIndex) or len(index) < 3:
        return True
    if isinstance(index, pd.DatetimeIndex):
        return index.freq is not None or pd.infer_freq(index) is not None
    steps = np.diff(np.asarray(index, dtype=float))
    return bool(np.all(steps == steps[0]))


def _refuse_text_columns(y) -> None:
    """TypeError naming the columns of a pandas ``y`` that do not hold numbers (booleans neither)."""
    frame = y.to_frame() if isinstance(y, pd.Series) else y
    if not isinstance(frame, pd.DataFrame):
        return
    bad = {str(c): str(t) for c, t in frame.dtypes.items()
           if not pd.api.types.is_numeric_dtype(t) or pd.api.types.is_bool_dtype(t)}
    if bad:
        raise TypeError(
            "TimePEFTForecaster forecasts numeric series; y has non-numeric (categorical, text "
            "or boolean) column(s) " + ", ".join(f"{c!r} ({t})" for c, t in bad.items())
            + ": convert them to numbers (pd.to_numeric) or drop them"
        )


class TimePEFTForecaster(BaseForecaster):
    """Forecaster fine-tuning adapters on a frozen time-series backbone (Time-PEFT).

    The last ``context_length`` values of every channel are normalised (RevIN),
    cut into patches and embedded by a small transformer (MOMENT-like, pretrained
    with ``skfm pretrain timeseries-backbone`` on synthetic series by masked
    reconstruction and an auxiliary forecasting loss; see ``checkpoint``).
    Only small modules are trained on the series given to ``fit``, on all its
    sliding windows:

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
        Backbone: a shipped name (``"timepeft-backbone-v2"``: 205k parameters,
        pretrained on a CPU), a path to a ``.safetensors`` file with its card
        (e.g. exported by ``skfm pretrain timeseries-backbone``), a name in
        ``$SKFM_HOME``, a ``hf://`` id, or ``"random:<config>"``
        (``"random:small"``: the same architecture at a fixed random
        initialisation, seed 0 -- the baseline of the release gate in
        ``docs/benchmarks/timepeft.md``).
    context_length : int, default=96
        Lookback window: the last ``context_length`` values are the input of
        every forecast. A multiple of the backbone's patch length (8), at most
        its longest context (512).
    horizon : int or None, default=None
        Length of the forecasting head, hence the largest step ``predict``
        accepts (at most 720). None: the largest step of the ``fh`` passed to
        ``fit``, or 24 if ``fit`` gets no ``fh``.
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
        them. On the chaotic benchmark sets, with up to 100 epochs, it gave
        Time-PEFT and LoRA about the mean MSE of a constant rate with up to 20
        epochs, with far less spread between seeds, and made full fine-tuning
        and the linear probe worse (``docs/benchmarks/timepeft_step_lr.md``).
    window_stride : int, default=1
        Step between the starts of consecutive training windows (larger:
        fewer windows, faster fine-tuning).
    validation_fraction : float, default=0.1
        Share of the windows, at the end of the series, held out for early
        stopping; the training windows end before the held-out targets begin.
        0 or fewer than 10 windows: no early stopping.
    n_iter_no_change : int, default=3
        Stop after this many epochs without a lower validation loss.
    revin : bool, default=True
        Normalise every input window by its own mean and standard deviation
        (reversible instance normalisation, as in pretraining) and fine-tune
        on errors in those units. False: standardise every channel with the
        mean and standard deviation of the series given to ``fit``
        (``series_mean_``, ``series_std_``) and fine-tune on errors in those
        units, so that the network sees each window's level. That suits
        stationary series whose level carries information (chaotic systems:
        Lorenz h96 MSE 0.35 -> 0.18) and fails on trending ones
        (EuStockMarkets 0.96 -> 15.5; ``docs/benchmarks/timepeft_no_revin.md``).
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
    >>> forecaster = TimePEFTForecaster(context_length=48, max_epochs=2, window_stride=4)
    >>> forecaster = forecaster.fit(y, fh=np.arange(1, 13))
    >>> forecaster.predict().shape
    (12,)
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
        "capability:pred_int": False,
        "capability:random_state": True,
        "property:randomness": "derandomized",
        "capability:update": True,
    }

    def __init__(
        self,
        adapter="timepeft",
        adapter_form="residual",
        checkpoint=DEFAULT_CHECKPOINT,
        context_length=96,
        horizon=None,
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
        self.context_length = context_length
        self.horizon = horizon
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

    # ---- checks ------------------------------------------------------------------

    def _check_params(self, config: BackboneConfig) -> None:
        def positive_int(name, value):
            if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 1:
                raise ValueError(f"{name} must be a positive integer, got {value!r}")

        for name, allowed in (("adapter", ADAPTERS), ("adapter_form", FORMS),
                              ("learning_rate_schedule", SCHEDULES)):
            if getattr(self, name) not in allowed:
                raise ValueError(f"{name} must be one of {allowed}, got {getattr(self, name)!r}")
        for name in ("context_length", "top_k", "lora_rank", "max_epochs", "batch_size",
                     "window_stride", "n_iter_no_change"):
            positive_int(name, getattr(self, name))
        if self.context_length % config.patch_len or self.context_length > config.max_context:
            raise ValueError(
                f"context_length must be a multiple of the backbone's patch length "
                f"{config.patch_len} and at most {config.max_context}, got {self.context_length}"
            )
        if not isinstance(self.revin, (bool, np.bool_)):
            raise ValueError(f"revin must be True or False, got {self.revin!r}")
        if self.horizon is not None:
            positive_int("horizon", self.horizon)
        for name in ("learning_rate", "backbone_learning_rate", "lora_alpha"):
            if not float(getattr(self, name)) > 0:
                raise ValueError(f"{name} must be positive, got {getattr(self, name)!r}")
        if not 0.0 <= float(self.validation_fraction) < 1.0:
            raise ValueError(
                f"validation_fraction must be in [0, 1), got {self.validation_fraction!r}"
            )

    @staticmethod
    def _check_y(y: pd.DataFrame) -> np.ndarray:
        values = y.to_numpy(dtype=np.float64)
        if not np.isfinite(values).all():
            raise ValueError("y contains NaN or infinite values; impute them first")
        if np.abs(values).max(initial=0.0) > MAX_MAGNITUDE:  # checked before the float32 cast
            raise ValueError(
                f"y has values up to {np.abs(values).max():.3g} in absolute value; the model "
                f"computes in float32 and accepts at most {MAX_MAGNITUDE:.0e}: rescale y "
                "(e.g. divide by a constant)"
            )
        if not _regular_index(y.index):
            raise ValueError(
                "y has an irregular time index (unequal steps); resample it to a regular "
                "frequency first, e.g. y.asfreq(...) and interpolate"
            )
        return values.astype(np.float32)

    def _resolve_horizon(self, fh) -> int:
        if self.horizon is not None:
            horizon = int(self.horizon)
        elif fh is not None:
            horizon = int(max(fh.to_relative(self.cutoff)))
            if horizon < 1:
                raise ValueError("TimePEFTForecaster forecasts only future steps (fh >= 1)")
        else:
            horizon = DEFAULT_HORIZON
        if horizon > MAX_HORIZON:
            raise ValueError(f"horizon must be at most {MAX_HORIZON}, got {horizon}")
        return horizon

    # ---- network -----------------------------------------------------------------

    def _seed(self) -> int:
        return int(torch_generator(self.random_state).initial_seed())

    def _build_net(self, n_channels: int, seed: int) -> ForecastNet:
        """The network of this configuration at its seeded initialisation (before training)."""
        backbone = load_backbone(self.checkpoint)
        with seeded(seed):
            if self.adapter != "full":
                backbone.requires_grad_(False)
            if self.adapter in ("timepeft", "lora"):
                add_lora(backbone, self.lora_rank, float(self.lora_alpha))
            return ForecastNet(
                backbone, self.context_length, self.horizon_, n_channels,
                adapters=self.adapter == "timepeft", form=self.adapter_form, top_k=self.top_k,
                revin=bool(self.revin), series_loc=self.series_mean_,
                series_scale=self.series_std_,
            )

    def _trained_net(self, device) -> ForecastNet:
        net = self._build_net(self.n_channels_, self._seed())
        net.load_state_dict(
            {k: torch.from_numpy(np.array(v)) for k, v in self.trained_state_.items()},
            strict=False,
        )
        return net.to(device).eval()

    # ---- training ----------------------------------------------------------------

    def _windows(self, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Sliding windows: inputs (W, C, context_length) and targets (W, C, horizon_)."""
        span = self.context_length + self.horizon_
        starts = np.arange(0, len(values) - span + 1, self.window_stride)
        index = starts[:, None] + np.arange(span)[None]
        windows = values[index].transpose(0, 2, 1)  # (W, C, span)
        return windows[..., : self.context_length], windows[..., self.context_length:]

    def _split(self, n_windows: int) -> tuple[np.ndarray, np.ndarray]:
        """Training and validation window indices; validation targets follow training ones."""
        n_val = int(round(n_windows * float(self.validation_fraction)))
        if n_windows < 10 or n_val < 1:
            return np.arange(n_windows), np.arange(0)
        gap = math.ceil(self.horizon_ / self.window_stride)  # train targets end before val's
        n_train = n_windows - n_val - gap
        if n_train < 1:
            return np.arange(n_windows), np.arange(0)
        return np.arange(n_train), np.arange(n_windows - n_val, n_windows)

    @staticmethod
    def _loss(net: ForecastNet, x: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        """MSE in the units the network normalises to (each window's or the series' scale)."""
        out, loc, scale = net.normalised_forecast(x)  # one pass: the scale comes with it
        return ((revin_denormalise(out, loc, scale) - target) / scale).pow(2).mean()

    def _train(self, values: np.ndarray, init_state: dict | None, max_epochs: int) -> None:
        """Fine-tune on all windows of ``values`` (T, C); sets ``trained_state_`` and stats."""
        device = resolve_device(self.device)
        seed = self._seed()
        net = self._build_net(values.shape[1], seed)
        if init_state is not None:
            net.load_state_dict({k: torch.from_numpy(np.array(v)) for k, v in init_state.items()},
                                strict=False)
        net.to(device)
        trainable = {n: p for n, p in net.named_parameters() if p.requires_grad}
        backbone = [p for n, p in trainable.items() if n.startswith("backbone.")
                    and "lora_" not in n]
        others = [p for n, p in trainable.items() if not (n.startswith("backbone.")
                                                         and "lora_" not in n)]
        inputs, targets = self._windows(values)
        train_idx, val_idx = self._split(len(inputs))
        x_all, y_all = to_device(inputs, device), to_device(targets, device)
        config = FineTuneConfig(
            max_epochs=max_epochs, batch_size=int(self.batch_size),
            n_iter_no_change=self.n_iter_no_change, tol=1e-6, weight_decay=0.01,
            clip_grad_norm=1.0,
            step_lr=(STEP_EPOCHS, STEP_FACTOR) if self.learning_rate_schedule == "step" else None,
            verbose=self.verbose, desc="fine-tune", loss_name="mse",
        )
        with seeded(seed, device):  # dropout
            result = fine_tune(
                net,
                param_groups(others, self.learning_rate, backbone, self.backbone_learning_rate),
                train_idx,
                lambda rows: self._loss(net, x_all[rows], y_all[rows]),
                (lambda: self._evaluate(net, x_all[val_idx], y_all[val_idx])) if len(val_idx)
                else None,
                config,
                torch.Generator().manual_seed(seed),
            )
        self.trained_state_ = {k: v.detach().cpu().numpy() for k, v in trainable.items()}
        self.n_trainable_params_ = int(sum(p.numel() for p in trainable.values()))
        self.n_backbone_params_ = int(sum(
            p.numel() for n, p in net.backbone.named_parameters() if "lora_" not in n))
        self.n_epochs_ = result.n_epochs
        self.validation_loss_ = result.validation_loss
        self.fit_seconds_ = result.seconds

    def _evaluate(self, net: ForecastNet, x: torch.Tensor, y: torch.Tensor) -> float:
        losses = [float(self._loss(net, x[s:s + 256], y[s:s + 256])) * len(x[s:s + 256])
                  for s in range(0, len(x), 256)]
        return sum(losses) / len(x)

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
        TypeError
            ``y`` has non-numeric columns (named in the message); checked before
            sktime's own conversion, whose message names none.
        """
        _refuse_text_columns(y)
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
        _refuse_text_columns(y)
        return super().update(y, X=X, update_params=update_params)

    def _fit(self, y, X=None, fh=None):
        config = _backbone_config(self.checkpoint)
        self._check_params(config)
        values = self._check_y(y)
        self.horizon_ = self._resolve_horizon(fh)
        needed = self.context_length + self.horizon_
        if len(values) < needed:
            raise ValueError(
                f"y has {len(values)} time points; TimePEFTForecaster needs at least "
                f"context_length + horizon = {self.context_length} + {self.horizon_} = {needed} "
                "(lower context_length or the horizon)"
            )
        self.n_channels_ = values.shape[1]
        self.series_mean_ = values.mean(0)
        std = values.std(0)
        self.series_std_ = np.where(std > 0, std, 1.0)
        self.complexity_ = finetuning_advisable(values)
        self.temporal_complexity_ = self.complexity_.temporal_complexity
        self.multichannel_complexity_ = self.complexity_.multichannel_complexity
        with threads(self.n_jobs):
            self._train(values, None, int(self.max_epochs))
        self.recent_ = y.iloc[-needed:].copy()
        return self

    def _predict(self, fh, X=None):
        steps = np.asarray(fh.to_relative(self.cutoff), dtype=int)
        if steps.min() < 1:
            raise ValueError("TimePEFTForecaster forecasts only future steps (fh >= 1)")
        if steps.max() > self.horizon_:
            raise ValueError(
                f"fh reaches {steps.max()} steps ahead, beyond the trained horizon "
                f"{self.horizon_}; refit with horizon >= {steps.max()} (or pass that fh to fit)"
            )
        context = self.recent_.to_numpy(np.float32)[-self.context_length:].T[None]  # (1, C, L)
        device = resolve_device(self.device)
        with threads(self.n_jobs), torch.no_grad():
            forecast = self._trained_net(device)(to_device(context, device))[0]  # (C, H)
        forecast = forecast.cpu().numpy().T[steps - 1].astype(np.float64)  # (len(fh), C)
        index = fh.to_absolute_index(self.cutoff)
        return pd.DataFrame(forecast, index=index, columns=self.recent_.columns)

    def forecast_windows(self, windows) -> np.ndarray:
        """Forecast ``horizon_`` steps after each of many windows at once (no state change).

        A fast path for backtesting: every window is a separate history, and
        only its last ``context_length`` values are used.

        Parameters
        ----------
        windows : array-like of shape (n_windows, n_timepoints, n_channels)
            ``n_timepoints >= context_length``; channels in the order of ``fit``.

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
        windows = np.asarray(windows, dtype=np.float32)
        if windows.ndim != 3 or windows.shape[1] < self.context_length or (
                windows.shape[2] != self.n_channels_):
            raise ValueError(
                f"windows must have shape (n_windows, >= {self.context_length}, "
                f"{self.n_channels_}), got {windows.shape}"
            )
        if not np.isfinite(windows).all():
            raise ValueError("windows contain NaN or infinite values")
        contexts = windows[:, -self.context_length:].transpose(0, 2, 1)  # (n, C, L)
        device = resolve_device(self.device)
        with threads(self.n_jobs), torch.no_grad():
            net = self._trained_net(device)
            parts = [net(to_device(contexts[s:s + 256], device)).cpu().numpy()
                     for s in range(0, len(contexts), 256)]
        return np.concatenate(parts).transpose(0, 2, 1) if parts else np.empty(
            (0, self.horizon_, self.n_channels_), np.float32)

    def _update(self, y, X=None, update_params=True):
        """Forecast from the new cutoff; with ``update_params``, fine-tune on the new values.

        The new values extend ``recent_`` (the last ``context_length + horizon_``
        values seen). With ``update_params``, one epoch continues from the
        trained weights over the windows whose targets hold new values.
        """
        self._check_y(y)
        combined = pd.concat([self.recent_, y[self.recent_.columns]])
        combined = combined[~combined.index.duplicated(keep="last")].sort_index()
        span = self.context_length + self.horizon_
        n_new = int((~y.index.isin(self.recent_.index)).sum())
        if update_params and n_new:
            with threads(self.n_jobs):
                self._train(self._check_y(combined.iloc[-(span + n_new - 1):]),
                            self.trained_state_, 1)
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
                "max_epochs": 2, "batch_size": 8, "device": "cpu"}
        return [
            tiny,
            {**tiny, "adapter": "lora", "lora_rank": 2},
            {**tiny, "adapter": "linear_probe", "horizon": None, "validation_fraction": 0.0},
            {**tiny, "adapter_form": "paper", "top_k": 1},
        ]
