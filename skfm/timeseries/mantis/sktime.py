"""MantisSktimeClassifier and MantisSktimeTransformer: :class:`MantisTimeSeriesClassifier`
as an sktime classifier and :class:`MantisTransformer` as an sktime panel transformer.

Imported lazily (``skfm.timeseries.MantisSktimeClassifier``,
``skfm.timeseries.MantisSktimeTransformer``) because importing sktime takes seconds. ``numpy3D``, ``pd-multiindex`` and ``nested_univ`` input
is passed on as it is, anything else converted to ``df-list`` (which holds
unequal lengths); the wrapped estimator resizes every series to the model length
(and, for MiniRocket, to the longest training series). Missing values are
refused by sktime's own check (``capability:missing_values`` is False); channels
of unequal length within one series by the wrapped estimator.
"""

from __future__ import annotations

import pandas as pd
from sklearn.utils._param_validation import validate_parameter_constraints
from sktime.classification.base import BaseClassifier
from sktime.transformations.base import BaseTransformer

from skfm.timeseries.mantis.classifier import MantisTimeSeriesClassifier
from skfm.timeseries.mantis.loading import DEFAULT_CHECKPOINT
from skfm.timeseries.mantis.transformer import MantisTransformer

#: The panel containers passed on as they are; sktime converts anything else to the first.
PANEL_MTYPES = ["df-list", "numpy3D", "pd-multiindex", "nested_univ"]


class MantisSktimeClassifier(BaseClassifier):
    """sktime classifier wrapping :class:`~skfm.timeseries.MantisTimeSeriesClassifier`.

    Every parameter has the meaning and default it has in
    :class:`~skfm.timeseries.MantisTimeSeriesClassifier`.

    Parameters
    ----------
    checkpoint : str, default="mantis-v3"
    fine_tuning : {"none", "head", "full"}, default="none"
    head : {"logistic", "random_forest"}, default="logistic"
    layer : int or None, default=None
    output_token : {"cls", "mean", "combined"}, default="combined"
    seq_len : int or None, default=None
    ensemble_lengths : tuple of int or None, default=None
    fusion : str or None, default="late"
    fusion_weight : float or None, default=None
    minirocket_kernels : int, default=10_000
    cv : int, default=5
    max_epochs : int, default=10
    learning_rate : float, default=1e-3
    backbone_learning_rate : float, default=1e-4
    batch_size : int, default=32
    validation_fraction : float, default=0.0
    n_iter_no_change : int, default=5
    verbose : bool, default=False
    device : str, default="auto"
    inference_precision : str, default="auto"
    n_jobs : int or None, default=None
    random_state : int, RandomState or None, default=0

    Attributes
    ----------
    estimator_ : MantisTimeSeriesClassifier
        The fitted scikit-learn estimator.

    Examples
    --------
    >>> from sktime.datasets import load_basic_motions
    >>> from skfm.timeseries import MantisSktimeClassifier
    >>> X, y = load_basic_motions(split="train", return_type="numpy3D")
    >>> clf = MantisSktimeClassifier().fit(X, y)
    >>> clf.predict(X[:2]).shape
    (2,)
    """

    _tags = {
        "authors": ["skfm"],
        "python_dependencies": ["torch"],
        "X_inner_mtype": PANEL_MTYPES,
        "y_inner_mtype": "numpy1D",
        "capability:multivariate": True,
        "capability:unequal_length": True,
        "capability:missing_values": False,
        "capability:random_state": True,
        "property:randomness": "derandomized",
    }

    def __init__(
        self,
        checkpoint=DEFAULT_CHECKPOINT,
        fine_tuning="none",
        head="logistic",
        layer=None,
        output_token="combined",
        seq_len=None,
        ensemble_lengths=None,
        fusion="late",
        fusion_weight=None,
        minirocket_kernels=10_000,
        cv=5,
        max_epochs=10,
        learning_rate=1e-3,
        backbone_learning_rate=1e-4,
        batch_size=32,
        validation_fraction=0.0,
        n_iter_no_change=5,
        verbose=False,
        device="auto",
        inference_precision="auto",
        n_jobs=None,
        random_state=0,
    ):
        self.checkpoint = checkpoint
        self.fine_tuning = fine_tuning
        self.head = head
        self.layer = layer
        self.output_token = output_token
        self.seq_len = seq_len
        self.ensemble_lengths = ensemble_lengths
        self.fusion = fusion
        self.fusion_weight = fusion_weight
        self.minirocket_kernels = minirocket_kernels
        self.cv = cv
        self.max_epochs = max_epochs
        self.learning_rate = learning_rate
        self.backbone_learning_rate = backbone_learning_rate
        self.batch_size = batch_size
        self.validation_fraction = validation_fraction
        self.n_iter_no_change = n_iter_no_change
        self.verbose = verbose
        self.device = device
        self.inference_precision = inference_precision
        self.n_jobs = n_jobs
        self.random_state = random_state
        super().__init__()

    #: The constraints of the wrapped estimator, checked at the start of ``fit``.
    _parameter_constraints = MantisTimeSeriesClassifier._parameter_constraints

    def fit(self, X, y):
        """Fit the wrapped classifier (sktime's ``fit``; see :meth:`BaseClassifier.fit`).

        Parameters
        ----------
        X : sktime panel
            Training series: ``numpy3D``, ``pd-multiindex``, ``nested_univ``,
            or anything sktime converts to ``df-list``.
        y : array-like of shape (n,)
            Class labels.

        Returns
        -------
        self : MantisSktimeClassifier

        Raises
        ------
        sklearn.utils._param_validation.InvalidParameterError
            A parameter has a wrong type or value (a ``ValueError``).
        """
        validate_parameter_constraints(self._parameter_constraints, self.get_params(deep=False),
                                       caller_name=type(self).__name__)
        return super().fit(X, y)

    def _fit(self, X, y):
        self.estimator_ = MantisTimeSeriesClassifier(**self.get_params(deep=False)).fit(X, y)
        return self

    def _predict(self, X):
        return self.estimator_.predict(X)

    def _predict_proba(self, X):
        return self.estimator_.predict_proba(X)

    @classmethod
    def get_test_params(cls, parameter_set="default"):
        """Cheap, offline parameter sets: the tiny architecture at random initialisation.

        The first is the default, late fusion with MiniRocket, at its smallest
        (84 kernels, 2 folds); the second fine-tunes a head on Mantis alone.

        Parameters
        ----------
        parameter_set : str, default="default"

        Returns
        -------
        list of dict
        """
        return [
            {"checkpoint": "random:tiny", "device": "cpu", "minirocket_kernels": 84, "cv": 2},
            {"checkpoint": "random:tiny", "device": "cpu", "fine_tuning": "head", "fusion": None,
             "max_epochs": 2, "output_token": "cls", "layer": 1},
        ]


class MantisSktimeTransformer(BaseTransformer):
    """sktime panel transformer wrapping :class:`~skfm.timeseries.MantisTransformer`.

    Each series of a panel becomes one row of frozen Mantis embeddings
    (columns ``mantis0``, ``mantis1``, ...); no labels are needed. Every
    parameter has the meaning and default it has in
    :class:`~skfm.timeseries.MantisTransformer`.

    Parameters
    ----------
    checkpoint : str, default="mantis-v3"
    layer : int or None, default=None
    output_token : {"cls", "mean", "combined"}, default="combined"
    seq_len : int or None, default=None
    ensemble_lengths : tuple of int or None, default=None
    device : str, default="auto"
    inference_precision : str, default="auto"
    n_jobs : int or None, default=None

    Attributes
    ----------
    transformer_ : MantisTransformer
        The fitted scikit-learn transformer.

    Examples
    --------
    >>> from sktime.datasets import load_basic_motions
    >>> from skfm.timeseries import MantisSktimeTransformer
    >>> X, _ = load_basic_motions(split="train", return_type="numpy3D")
    >>> MantisSktimeTransformer().fit_transform(X).shape  # 6 channels x 256 values
    (40, 1536)
    """

    _tags = {
        "authors": ["skfm"],
        "python_dependencies": ["torch"],
        "scitype:transform-input": "Series",
        "scitype:transform-output": "Primitives",
        "scitype:instancewise": True,
        "X_inner_mtype": PANEL_MTYPES,
        "y_inner_mtype": "None",
        "fit_is_empty": False,
        "requires_y": False,
        "capability:multivariate": True,
        "capability:unequal_length": True,
        "capability:missing_values": False,
        "property:randomness": "deterministic",
    }

    def __init__(
        self,
        checkpoint=DEFAULT_CHECKPOINT,
        layer=None,
        output_token="combined",
        seq_len=None,
        ensemble_lengths=None,
        device="auto",
        inference_precision="auto",
        n_jobs=None,
    ):
        self.checkpoint = checkpoint
        self.layer = layer
        self.output_token = output_token
        self.seq_len = seq_len
        self.ensemble_lengths = ensemble_lengths
        self.device = device
        self.inference_precision = inference_precision
        self.n_jobs = n_jobs
        super().__init__()

    #: The constraints of the wrapped transformer, checked at the start of ``fit``.
    _parameter_constraints = MantisTransformer._parameter_constraints

    def fit(self, X, y=None):
        """Fit the wrapped transformer (sktime's ``fit``; see :meth:`BaseTransformer.fit`).

        Parameters
        ----------
        X : sktime panel or series
            ``numpy3D``, ``pd-multiindex``, ``nested_univ``, or anything sktime
            converts to ``df-list``.
        y : None
            Ignored.

        Returns
        -------
        self : MantisSktimeTransformer

        Raises
        ------
        sklearn.utils._param_validation.InvalidParameterError
            A parameter has a wrong type or value (a ``ValueError``).
        """
        validate_parameter_constraints(self._parameter_constraints, self.get_params(deep=False),
                                       caller_name=type(self).__name__)
        return super().fit(X, y)

    def _fit(self, X, y=None):
        self.transformer_ = MantisTransformer(**self.get_params(deep=False)).fit(X)
        return self

    def _transform(self, X, y=None):
        transformer = self.transformer_
        return pd.DataFrame(transformer.transform(X), columns=transformer.get_feature_names_out())

    @classmethod
    def get_test_params(cls, parameter_set="default"):
        """Cheap, offline parameter sets: the tiny architecture at random initialisation.

        The second reads the CLS token of the first block at two lengths.

        Parameters
        ----------
        parameter_set : str, default="default"

        Returns
        -------
        list of dict
        """
        return [
            {"checkpoint": "random:tiny", "device": "cpu"},
            {"checkpoint": "random:tiny", "device": "cpu", "layer": 1, "output_token": "cls",
             "ensemble_lengths": (64, 128)},
        ]
