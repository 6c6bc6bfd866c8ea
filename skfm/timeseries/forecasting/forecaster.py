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
from skfm.timeseries.forecasting._plain_state import from_plain, to_plain
from skfm.timeseries.forecasting.adapters import FORMS, ForecastNet
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
from skfm.timeseries.forecasting.complexity import finetuning_advisable
from skfm.timeseries.forecasting.loading import DEFAULT_CHECKPOINT, backbone_config
from skfm.timeseries.forecasting.network import (
    ADAPTERS,
    build_net,
    load_state,
    n_backbone_params,
    trainable_state,
)
from skfm.timeseries.forecasting.training import SCHEDULES, train


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
        Backbone: a shipped name (``"timepeft-backbone-v2"``, pretrained on a
        CPU; its size and recipe are on its card), a path to a
        ``.safetensors`` file with its card (e.g. exported by
        ``skfm pretrain timeseries-backbone``), a name in
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
        them. On the chaotic benchmark sets it gave Time-PEFT and LoRA about
        the mean error of a constant rate with a shorter budget, with less
        spread between seeds, and made full fine-tuning and the linear probe
        worse (figures in ``docs/benchmarks/timepeft_step_lr.md``).
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

    # ---- parameters --------------------------------------------------------------

    #: Checked at the start of ``fit`` (scikit-learn's validation); ``context_length``
    #: against the backbone's patch length and reach in ``_fit``.
    _parameter_constraints: dict = {
        "adapter": [StrOptions(set(ADAPTERS))],
        "adapter_form": [StrOptions(set(FORMS))],
        "checkpoint": [str, os.PathLike],
        "context_length": [Interval(Integral, 1, None, closed="left")],
        "horizon": [Interval(Integral, 1, MAX_HORIZON, closed="both"), None],
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
            context_length=self.context_length, horizon=self.horizon_, n_channels=n_channels,
            top_k=self.top_k, lora_rank=self.lora_rank, lora_alpha=self.lora_alpha,
            revin=self.revin, series_loc=self.series_mean_, series_scale=self.series_std_,
        )

    def _trained_net(self, device) -> ForecastNet:
        net = load_state(self._build_net(self.n_channels_, self._seed()), self.trained_state_)
        return net.to(device).eval()

    def _train(self, values: np.ndarray, init_state: dict | None, max_epochs: int) -> None:
        """Fine-tune on all windows of ``values`` (T, C); sets ``trained_state_`` and stats."""
        seed = self._seed()
        net = self._build_net(values.shape[1], seed)
        if init_state is not None:
            load_state(net, init_state)
        result = train(
            net, values, context_length=self.context_length, horizon=self.horizon_,
            window_stride=self.window_stride, validation_fraction=self.validation_fraction,
            learning_rate=self.learning_rate, backbone_learning_rate=self.backbone_learning_rate,
            learning_rate_schedule=self.learning_rate_schedule, max_epochs=max_epochs,
            batch_size=self.batch_size, n_iter_no_change=self.n_iter_no_change,
            verbose=self.verbose, device=resolve_device(self.device), seed=seed,
        )
        self.trained_state_ = trainable_state(net)
        self.n_trainable_params_ = int(sum(v.size for v in self.trained_state_.values()))
        self.n_backbone_params_ = n_backbone_params(net)
        self.n_epochs_ = result.n_epochs
        self.validation_loss_ = result.validation_loss
        self.fit_seconds_ = result.seconds

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
        check_context_length(self.context_length, backbone_config(self.checkpoint))
        values = check_series(y)
        self.horizon_ = resolve_horizon(self.horizon,
                                        None if fh is None else fh.to_relative(self.cutoff))
        check_length(len(values), self.context_length, self.horizon_)
        self.n_channels_ = values.shape[1]
        self.series_mean_ = values.mean(0)
        std = values.std(0)
        self.series_std_ = np.where(std > 0, std, 1.0)
        self.complexity_ = finetuning_advisable(values)
        self.temporal_complexity_ = self.complexity_.temporal_complexity
        self.multichannel_complexity_ = self.complexity_.multichannel_complexity
        with threads(self.n_jobs):
            self._train(values, None, int(self.max_epochs))
        self.recent_ = y.iloc[-(self.context_length + self.horizon_):].copy()
        return self

    def _predict(self, fh, X=None):
        steps = np.asarray(fh.to_relative(self.cutoff), dtype=int)
        check_steps(steps, self.horizon_)
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
        windows = check_windows(windows, self.context_length, self.n_channels_)
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
        check_series(y)
        combined = pd.concat([self.recent_, y[self.recent_.columns]])
        combined = combined[~combined.index.duplicated(keep="last")].sort_index()
        span = self.context_length + self.horizon_
        n_new = int((~y.index.isin(self.recent_.index)).sum())
        if update_params and n_new:
            with threads(self.n_jobs):
                self._train(check_series(combined.iloc[-(span + n_new - 1):]),
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
