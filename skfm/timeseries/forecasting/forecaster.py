"""TimePEFTForecaster: parameter-efficient fine-tuning of a pretrained backbone, for sktime.

The sktime glue only: the parts of the forecast are fitted and run in :mod:`.parts`;
the checks of parameters, data and horizons are in :mod:`.checks`. Imported lazily
(``skfm.TimePEFTForecaster``): importing sktime takes seconds. The fitted forecaster
holds no torch objects (the trained weights are numpy arrays, ``trained_state_``) and
its pandas objects pickle as plain values (:mod:`._plain_state`), so pickle,
``copy.deepcopy`` and ``skops.io`` round-trip.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from sklearn.utils._param_validation import validate_parameter_constraints
from sktime.forecasting.base import BaseForecaster

from skfm._backend import threads
from skfm.timeseries.forecasting._plain_state import from_plain, to_plain
from skfm.timeseries.forecasting.checks import (
    PARAMETER_CONSTRAINTS,
    check_series,
    check_steps,
    check_windows,
    refuse_text_columns,
    resolve_horizon,
    warn_if_x_given,
)
from skfm.timeseries.forecasting.loading import DEFAULT_CHECKPOINT, backbone_config
from skfm.timeseries.forecasting.parts import ForecastParts


class TimePEFTForecaster(ForecastParts, BaseForecaster):
    """Forecaster: a backbone fine-tuned by Time-PEFT adapters, combined with classical forecasters.

    By default (``base="combination"``) the forecast is a **combination** of the
    **network** -- small adapters fine-tuned on a frozen, pretrained time-series
    backbone -- and classical forecasters (sktime's ``AutoETS`` on the
    deseasonalised series, ``ThetaForecaster``, a recursive ridge, the seasonal
    naive and the naive, for several channels a ``VAR``, on long series a direct
    linear map of the lookback;
    :data:`~skfm.timeseries.forecasting.combination.CANDIDATES`). A **guard** on
    rolling origins at the end of the series weighs them all alike, the network
    included (the equal mean of the two best, or the best alone); the errors at
    the origins give the prediction intervals. ``finetune="auto"`` fine-tunes the
    network on long series only; the complexity diagnostics of the paper
    (:func:`~skfm.timeseries.forecasting.finetuning_advisable`) are reported
    (``complexity_``).

    Read more in the :ref:`User Guide <timepeft>`, which also gives the
    benchmark results.

    Parameters
    ----------
    adapter : {"timepeft", "lora", "linear_probe", "full"}, default="timepeft"
        What is fine-tuned: ``"timepeft"``: LoRA on the attention ``q``, ``k``,
        ``v`` projections, the frequency adapter (top-``k`` rFFT filtering along
        the patches), the channel adapter and the linear head; ``"lora"``: LoRA
        and the head; ``"linear_probe"``: the head; ``"full"``: every weight.
    adapter_form : {"residual", "paper"}, default="residual"
        The channel adapter's output is added to the backbone embeddings, from a
        zero-initialised up-projection (``"residual"``), or replaces them
        (``"paper"``, the official code). Only used with ``adapter="timepeft"``.
    checkpoint : str, default="timepeft-backbone-v2"
        Backbone: a shipped name, a ``.safetensors`` path with its card (as
        exported by ``skfm pretrain timeseries-backbone``), a name in
        ``$SKFM_HOME``, a ``hf://`` id, or ``"random:<config>"`` (the same
        architecture at a fixed random initialisation, seed 0).
    sp : "auto" or int, default="auto"
        Seasonal period of the seasonal naive forecast (see ``sp_``). An int is
        used as given; it must fit in the context.
    context_length : "auto" or int, default="auto"
        Lookback: the last ``context_length_`` values are the input of every
        forecast. ``"auto"``: four seasons, at least 96 values, rounded up to the
        backbone's patch length (8), at most its longest context (512) and at most
        half of what the series leaves after one horizon (one season where that is
        less). An int: a multiple of the patch length, at most the longest context.
    horizon : int or None, default=None
        Length of the forecasting head, the largest step ``predict`` accepts (at
        most 720). None: the largest step of the ``fh`` given to ``fit``, else 24.
    base : {"combination", "seasonal_ridge"} or None, default="combination"
        What the network is weighed against: the classical candidates at the
        rolling origins (see above); or it corrects a seasonal autoregression (a
        ridge of the last lags, run recursively), guarded on the last
        ``validation_fraction`` of the windows (the seasonal naive, the base or the
        network, whichever errs least); None: the network alone, as in the paper.
    finetune : "auto" or bool, default="auto"
        Fine-tune the network: ``"auto"`` where the series gives at least
        2,000 training windows (``LONG_SERIES_WINDOWS``); always; or never.
        Ignored with ``base=None``.
    n_origins : int, default=4
        Rolling origins of the guard with ``base="combination"``, one horizon
        apart (on a long series: every ``horizon // 8``-th window of their stretch);
        fewer where the series is short (each leaves ``context_length_ + horizon_``
        values and three seasons before it). Without any: the fine-tuned network, else the
        seasonal naive (naive if ``sp_ == 1``), intervals from the seasonal naive's errors.
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
        Time-PEFT code does; meant for a large ``max_epochs``.
    window_stride : "auto" or int, default="auto"
        Step between the starts of consecutive training windows (larger: faster).
        ``"auto"``: 1, or on a series of more than 2,000 windows
        (``MAX_TRAINING_WINDOWS``) the smallest step that leaves at most that
        many (``window_stride_``).
    validation_fraction : float, default=0.1
        Share of the windows, at the end of the series, held out for early
        stopping (and the guard and the intervals with ``"seasonal_ridge"``). 0, or
        fewer than 10 windows: none held out; the intervals then come from the
        training windows' errors (too narrow where those were fit closely).
    n_iter_no_change : int, default=3
        Stop after this many epochs without a lower validation loss.
    revin : bool, default=True
        Normalise every input window by its own mean and standard deviation (as in
        pretraining). False: standardise with the statistics of the series given
        to ``fit``, so that the network sees each window's level (for stationary
        series; fails on trending ones).
    verbose : bool, default=False
        Show a progress bar while fine-tuning (never when ``SKFM_PROGRESS=0``).
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
        Seasonal period of the seasonal naive forecast (1: the last value). With
        ``sp="auto"``: the most significant autocorrelation of the first differences
        (sktime's ``SeasonalityACF``, the most common over the channels), up to a
        third of the series and 256; else the period the index's frequency implies
        (monthly 12, quarterly 4, weekly 52, daily 7, hourly 24, half-hourly 48).
        Then 1 where repeating the last value forecasts the training windows
        better, or where the period does not fit in the context.
    context_length_, window_stride_ : int
        Lookback and step between the training windows used.
    base_weights_, base_intercept_ : ndarray of shape (context_length, horizon) and (n_channels, horizon)
        With ``base="seasonal_ridge"``: the seasonal ridge as an affine map of the
        raw window, ``window @ base_weights_ + base_intercept_`` (else None).
    base_alpha_ : float or None
        With ``base="seasonal_ridge"``: the seasonal ridge's regularisation, the
        best on the held-out windows.
    combination_weights_ : dict of str to float
        With ``base="combination"``: the weight of each candidate combined
        (``"network"``: the fine-tuned network's).
    combination_forecast_ : ndarray of shape (n_channels, horizon)
        With ``base="combination"``: the combination's forecast from the cutoff.
    combination_parameters_ : dict of str to dict
        The fitted parameters of the candidates combined, as plain values.
    finetuned_ : bool
        Whether the network was fine-tuned.
    selected_ : "combination" or {"seasonal_naive", "base", "network"}
        The forecast ``predict`` gives: the combination with ``base="combination"``,
        else as the guard chose.
    validation_scores_ : dict of str to float
        MSE, in units of each channel's standard deviation, of what the guard compared:
        at the rolling origins (a long series: their stretch's windows) every candidate
        (the fine-tuned network included) and the combination; with ``"seasonal_ridge"``
        the seasonal naive, the base and the network on the held-out windows (empty where none).
    calibration_residuals_ : ndarray of shape (n_windows, n_channels, horizon)
        Errors of the selected forecast where the guard measured them (at most
        500), divided by each window's scale: the intervals' source.
    n_channels_ : int
    trained_state_ : dict of str to ndarray
        The trained weights (adapters, LoRA, head; all weights for ``"full"``).
    n_trainable_params_ : int
    n_backbone_params_ : int
        Parameters of the (frozen unless ``"full"``) backbone.
    n_epochs_ : int
        Epochs run (early stopping may end fine-tuning before ``max_epochs``).
    series_mean_, series_std_ : ndarray of shape (n_channels,)
        Per-channel mean and standard deviation (1 where constant) of the series
        given to ``fit``; used when ``revin=False``.
    validation_loss_ : float or None
        Best validation MSE of the network, in units of each channel's standard
        deviation; None without a validation tail.
    fit_seconds_ : float
        Wall time of fine-tuning.
    complexity_ : ComplexityReport or None
        Complexity diagnostics of the training series (None, and NaN below, for one too short).
    temporal_complexity_ : float
        Mean normalised spectral entropy of the channels.
    multichannel_complexity_ : float
        Mean lagged transfer entropy between channels (0 if univariate, NaN if too short).

    Notes
    -----
    Channels meet in the network only through the channel adapter. Fine-tuning uses
    AdamW, a temporal validation tail for early stopping (the best weights are kept)
    and a fixed seed. ``update`` refits the combination on all values seen.

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
        "capability:exogenous": False,  # X is ignored (sktime < 0.30: "ignores-exogeneous-X")
        "requires-fh-in-fit": False,
        "capability:missing_values": False,
        "capability:insample": False,
        "capability:pred_int": True,
        "capability:random_state": True,
        "property:randomness": "derandomized",
        "capability:update": True,
    }
    #: No data kept (``recent_`` holds what ``update`` needs), no sktime warning; see ``__init__``
    _config = {"remember_data": False}
    #: Checked at the start of ``fit`` by scikit-learn's validation (see :mod:`.checks`).
    _parameter_constraints: dict = PARAMETER_CONSTRAINTS

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
        window_stride="auto",
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
        self._y = self._X = None  # sktime 1.2 leaves them unset when remember_data is False

    def __getstate__(self):
        """The state with pandas objects as plain values, so that ``skops.io`` can store it."""
        return to_plain(self.__dict__)

    def __setstate__(self, state):
        self.__dict__.update(from_plain(state))

    # ---- sktime interface ----------------------------------------------------------

    def fit(self, y, X=None, fh=None):
        """Fit the combination and fine-tune the network on ``y`` (see :meth:`BaseForecaster.fit`).

        Parameters
        ----------
        y : pd.Series, pd.DataFrame or np.ndarray
            The series (one column per channel), numeric, regular index.
        X : ignored
            Exogenous data is not used (a ``UserWarning`` says so where given).
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
            ``y`` has non-numeric columns (named in the message).
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
            Also fine-tune the network one epoch on the new values, where it forecasts.

        Returns
        -------
        self : TimePEFTForecaster
        """
        refuse_text_columns(y)
        return super().update(y, X=X, update_params=update_params)

    def _check_X_y(self, X=None, y=None, **kwargs):
        """sktime's checks, run by every method that takes ``X``: warn where one is given."""
        warn_if_x_given(X)
        return super()._check_X_y(X=X, y=y, **kwargs)

    def _fit(self, y, X=None, fh=None):
        values = check_series(y)
        self.horizon_ = resolve_horizon(self.horizon,
                                        None if fh is None else fh.to_relative(self.cutoff))
        if not self._choose_lookback(values, y.index, backbone_config(self.checkpoint)):
            self._fall_back(values)  # shorter than a training window: the (seasonal) naive
        else:
            self._describe(values)
            with threads(self.n_jobs):
                (self._combine if self.base == "combination" else self._select)(
                    values, self.sp != "auto")
        self.recent_ = y.copy() if self.base == "combination" else y.iloc[
            -(self.context_length_ + self.horizon_):].copy()
        return self

    def _predict(self, fh, X=None):
        steps = np.asarray(fh.to_relative(self.cutoff), dtype=int)
        check_steps(steps, self.horizon_)
        forecast = self._current().T[steps - 1]  # (len(fh), C)
        index = fh.to_absolute_index(self.cutoff)
        return pd.DataFrame(forecast, index=index, columns=self.recent_.columns)

    def _predict_quantiles(self, fh, X, alpha):
        """Forecast plus quantiles of the guard's errors, per step and channel."""
        steps = np.asarray(fh.to_relative(self.cutoff), dtype=int)
        check_steps(steps, self.horizon_)
        quantiles = self._quantiles(alpha)  # (len(alpha), C, H)
        values = quantiles[:, :, steps - 1].transpose(2, 1, 0)  # (len(fh), C, len(alpha))
        return pd.DataFrame(values.reshape(len(steps), -1),
                            index=fh.to_absolute_index(self.cutoff),
                            columns=self._get_columns(method="predict_quantiles", alpha=alpha))

    def forecast_windows(self, windows) -> np.ndarray:
        """Forecast ``horizon_`` steps after each of many windows at once (no state change).

        A path for backtesting: each window is a separate history. Nothing is
        refitted (sktime's ``update_predict`` with ``update_params=False``): the
        network and the seasonal naive condition on its last ``context_length_``
        values, the classical candidates on all of it (:mod:`.batched`).

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
        return self._forecast_windows(check_windows(windows, self.context_length_,
                                                    self.n_channels_))

    def _update(self, y, X=None, update_params=True):
        """Forecast from the new cutoff; with ``update_params``, fine-tune on the new values."""
        self._extend(y, update_params)
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
