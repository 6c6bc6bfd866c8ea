"""MantisTimeSeriesClassifier: a pretrained Mantis encoder with a scikit-learn head.

The scikit-learn wrapper only: the parameters and embeddings it shares with
:class:`~.transformer.MantisTransformer` are in :mod:`.frozen`, the checkpoints in
:mod:`.loading`, the embeddings in :mod:`.embedding`, fusion features in :mod:`.fusion`, the
heads in :mod:`.head` and :mod:`.late_fusion`, fine-tuning in :mod:`.training` and the
modules rebuilt after fitting in :mod:`.runtime`.

The torch modules are cached per (checkpoint, device) and never pickled: a
fitted estimator holds the checkpoint name, its scikit-learn head and, after
fine-tuning, the trained weights as numpy arrays; modules are rebuilt lazily.
"""

from __future__ import annotations

from numbers import Integral, Real

import numpy as np
from sklearn.base import (
    ClassifierMixin,
    ClassNamePrefixFeaturesOutMixin,
    TransformerMixin,
    _fit_context,
)
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_consistent_length, check_is_fitted

from skfm._backend import draw_seed, resolve_device, resolve_precision, threads
from skfm._validation import check_target, class_labels, probability_rows
from skfm.timeseries._panel import as_panel, resize_panel
from skfm.timeseries.mantis.embedding import embedding_width
from skfm.timeseries.mantis.frozen import FrozenMantisBase
from skfm.timeseries.mantis.fusion import (
    MINIROCKET_FUSIONS,
    checkpoint_features,
    fit_minirocket,
    minirocket_features,
)
from skfm.timeseries.mantis.head import fit_frozen_head
from skfm.timeseries.mantis.loading import DEFAULT_CHECKPOINT
from skfm.timeseries.mantis.model import Mantis
from skfm.timeseries.mantis.training import train


class MantisTimeSeriesClassifier(
    ClassifierMixin, ClassNamePrefixFeaturesOutMixin, TransformerMixin, FrozenMantisBase
):
    """Time-series classifier on a Mantis foundation model pretrained on synthetic series.

    Every series (each channel of a multichannel series separately) is
    linearly resized to the model's length and embedded by a frozen
    transformer. By default (``fusion="late"``) Mantis answers together with
    MiniRocket (sktime's ``MiniRocketMultivariate`` on the series resized to
    the longest training series): the temperature-scaled probabilities of
    ``head`` on the embeddings and of MiniRocket's usual classifier (a
    standardised ``RidgeClassifierCV``) are multiplied, Mantis's weight
    ``fusion_weight_`` (0 to 0.5) chosen by out-of-fold log loss
    (:class:`~.late_fusion.LateFusionClassifier`). ``fusion="minirocket"``
    picks instead of adding: the embeddings are concatenated to the MiniRocket
    features and the head is chosen by repeated stratified cross-validation
    among MiniRocket's features alone with the ridge, both blocks with the same
    ridge, and the embeddings alone with ``head``: MiniRocket's unless another
    is clearly better (:func:`~.fusion.select_head`; ``selected_``,
    ``selection_scores_``, ``selection_margins_``). ``fusion=None`` is Mantis
    alone: ``head`` on the embeddings.

    Optionally the head alone (``fine_tuning="head"``) or the whole network
    (``fine_tuning="full"``, with ``fusion=None``) is trained with AdamW from
    a linear probe ("LP-FT"). Test-time options of the Mantis paper: features
    from an intermediate ``layer``, self-ensembling over several input
    lengths, and fusion with a second embedding.

    Parameters
    ----------
    checkpoint : str, default="mantis-v3"
        Shipped checkpoint name, path to a ``.safetensors`` file with its card,
        a name in ``$SKFM_HOME``, a ``hf://`` hub id, or ``"random:<config>"``
        (e.g. ``"random:base"``: ``mantis-v3``'s architecture at a fixed random
        initialisation, a baseline).
    fine_tuning : {"none", "head", "full"}, default="none"
        ``"none"``: frozen embeddings and the scikit-learn ``head``.
        ``"head"``: frozen embeddings, a BatchNorm + Linear head trained in torch.
        ``"full"``: backbone and BatchNorm + Linear head trained end to end.
    head : {"logistic", "random_forest"}, default="logistic"
        The head on the embeddings when ``fine_tuning="none"`` (with
        ``fusion="minirocket"``: the Mantis-only candidate): ``StandardScaler``
        + ``LogisticRegression``, or a 200-tree ``RandomForestClassifier``.
    layer : int or None, default=None
        Read the embedding after this many transformer blocks (1..n_layers;
        negative counts from the end). None: the checkpoint's
        ``default_layer`` if its card has one, else the last block.
    output_token : {"cls", "mean", "combined"}, default="combined"
        CLS token, mean of the patch tokens, or both concatenated.
    seq_len : int or None, default=None
        Length every series is resized to (a multiple of the model's patch
        count). None: the pretraining length.
    ensemble_lengths : tuple of int or None, default=None
        Self-ensembling: embed the series resized to each of these lengths
        and concatenate (e.g. ``(256, 512, 768, 1024)``); replaces ``seq_len``.
    fusion : str or None, default="late"
        ``"late"``: late fusion with MiniRocket + ridge, as described above
        (``fine_tuning="none"`` only). ``"minirocket"``: fuse with MiniRocket
        features, the head chosen by cross-validation (with
        ``fine_tuning="head"``: MiniRocket features beside the embeddings before
        the trained head). None: Mantis alone. Another string: a checkpoint (as
        in ``checkpoint``) whose embeddings, at its own default layer, are
        concatenated to these before ``head``.
    fusion_weight : float in [0, 1] or None, default=None
        Mantis's weight with ``fusion="late"`` (only then): None chooses it from
        0, 0.1, ..., 0.5 by out-of-fold log loss; 0 is MiniRocket + ridge with
        temperature-scaled probabilities (the ablation without Mantis), 1
        Mantis's head alone.
    minirocket_kernels : int, default=10_000
        MiniRocket's ``num_kernels`` with ``fusion="minirocket"`` or ``"late"``
        (rounded down to a multiple of 84; 9,996 features by default).
    cv : int, default=5
        Folds of the cross-validation that chooses the head with
        ``fusion="minirocket"`` and calibrates a ridge head, or that scores the
        heads out of fold with ``fusion="late"`` (fewer when a class has
        fewer series).
    max_epochs : int, default=10
        Fine-tuning epochs (at most, with early stopping).
    learning_rate : float, default=1e-3
        AdamW learning rate of the BatchNorm + Linear head when fine-tuning
        (it starts from the linear probe, so a small one).
    backbone_learning_rate : float, default=1e-4
        AdamW learning rate of the backbone for ``fine_tuning="full"``.
    batch_size : int, default=32
        Fine-tuning mini-batch size.
    validation_fraction : float, default=0.0
        Share of the training series held out (stratified) for early
        stopping; the linear probe is validated too, and kept if no epoch
        beats it. 0 (most UCR training sets are too small for a reliable
        split) or too few series per class: all ``max_epochs`` on all series.
    n_iter_no_change : int, default=5
        Stop after this many epochs without a lower validation loss; the
        best weights are kept.
    verbose : bool, default=False
        Show a progress bar while fine-tuning (never when the environment
        variable ``SKFM_PROGRESS`` is ``0``).
    device : str, default="auto"
        ``"auto"``, ``"cpu"``, ``"cuda"``, ``"cuda:N"`` or ``"mps"``.
    inference_precision : str or torch.dtype, default="auto"
        ``"auto"`` (bf16 autocast on CUDA, fp32 on CPU), ``"fp32"``, ``"bf16"``,
        ``"fp16"`` (CUDA only) or ``"fp64"`` (weights and inputs; not on MPS).
    n_jobs : int or None, default=None
        CPU threads for the embeddings, MiniRocket and the random forest
        (-1: all cores); results do not depend on it. Fine-tuning runs on
        torch's own thread count (``torch.set_num_threads``).
    random_state : int, RandomState or None, default=0
        Seeds the validation split, fine-tuning, the random forest, the
        cross-validation folds and MiniRocket (an int as it is).

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
    n_channels_in_ : int
        Channels of the training series.
    n_features_in_ : int
        Time points of 2-D training input (only then).
    feature_names_in_ : ndarray of shape (n_features_in_,)
        Only for a pandas 2-D input with string column names.
    layer_ : int
        The transformer block the embeddings are read from.
    head_ : estimator or None
        The fitted scikit-learn head (``fine_tuning="none"``).
    fusion_ : MiniRocketMultivariate or None
        The fitted MiniRocket transformer with ``fusion="minirocket"`` or ``"late"``.
    minirocket_length_ : int or None
        The length MiniRocket sees every series at: the longest training
        series, at least 9 (MiniRocket's minimum).
    selected_ : {"minirocket", "fusion", "mantis", "late"}
        The head's input: MiniRocket's features, both blocks (also with
        ``fusion`` a checkpoint or ``fine_tuning="head"``), the embeddings
        alone (also with ``fusion=None``), or ``"late"`` (``fusion="late"``).
    selection_scores_ : dict
        Mean CV accuracy of each candidate with ``fusion="minirocket"`` (empty
        otherwise, and when a class has a single series: MiniRocket's head).
    selection_margins_ : dict or None
        For ``"fusion"`` and ``"mantis"``: the gain over MiniRocket's CV
        accuracy each had to exceed (twice the corrected standard error).
    fusion_weight_ : float or None
        Mantis's weight with ``fusion="late"`` (else None); ``head_.losses_``
        holds the out-of-fold log loss at every weight tried.
    n_epochs_ : int
        Fine-tuning epochs run (0 without fine-tuning).

    See Also
    --------
    skfm.timeseries.MantisSktimeClassifier : the same estimator as an sktime classifier.

    Examples
    --------
    >>> import numpy as np
    >>> from skfm.timeseries import MantisTimeSeriesClassifier
    >>> rng = np.random.default_rng(0)
    >>> t = np.linspace(0, 1, 100)
    >>> y = np.repeat([0, 1], 20)
    >>> X = np.sin(2 * np.pi * (3 + 3 * y[:, None]) * t) + 0.3 * rng.normal(size=(40, 100))
    >>> clf = MantisTimeSeriesClassifier().fit(X[::2], y[::2])
    >>> clf.score(X[1::2], y[1::2])
    1.0
    >>> clf.selected_, 0 <= clf.fusion_weight_ <= 0.5
    ('late', True)
    >>> clf.transform(X[:3]).shape  # 256 embedding values, then 9,996 MiniRocket features
    (3, 10252)
    >>> MantisTimeSeriesClassifier(fusion=None).fit(X[::2], y[::2]).transform(X[:3]).shape
    (3, 256)
    """

    def __init__(
        self,
        checkpoint: str = DEFAULT_CHECKPOINT,
        fine_tuning: str = "none",
        head: str = "logistic",
        layer: int | None = None,
        output_token: str = "combined",
        seq_len: int | None = None,
        ensemble_lengths: tuple[int, ...] | None = None,
        fusion: str | None = "late",
        fusion_weight: float | None = None,
        minirocket_kernels: int = 10_000,
        cv: int = 5,
        max_epochs: int = 10,
        learning_rate: float = 1e-3,
        backbone_learning_rate: float = 1e-4,
        batch_size: int = 32,
        validation_fraction: float = 0.0,
        n_iter_no_change: int = 5,
        verbose: bool = False,
        device: str = "auto",
        inference_precision: str = "auto",
        n_jobs: int | None = None,
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

    # ---- parameters --------------------------------------------------------------

    #: Checked by scikit-learn at the start of ``fit``; what depends on the checkpoint
    #: (layer range, lengths) in :meth:`_check_model_params`.
    _parameter_constraints: dict = {
        **FrozenMantisBase._parameter_constraints,
        "fine_tuning": [StrOptions({"none", "head", "full"})],
        "head": [StrOptions({"logistic", "random_forest"})],
        "fusion": [str, None],
        "fusion_weight": [Interval(Real, 0, 1, closed="both"), None],
        "minirocket_kernels": [Interval(Integral, 84, None, closed="left")],
        "cv": [Interval(Integral, 2, None, closed="left")],
        "max_epochs": [Interval(Integral, 1, None, closed="left")],
        "learning_rate": [Interval(Real, 0, None, closed="neither")],
        "backbone_learning_rate": [Interval(Real, 0, None, closed="neither")],
        "batch_size": [Interval(Integral, 1, None, closed="left")],
        "validation_fraction": [Interval(Real, 0, 1, closed="left")],
        "n_iter_no_change": [Interval(Integral, 1, None, closed="left")],
        "verbose": ["verbose"],
        "random_state": ["random_state"],
    }

    def _check_model_params(self, model: Mantis) -> None:
        """The checks that need the model: layer range, lengths, what full fine-tuning allows."""
        super()._check_model_params(model)
        if self.fine_tuning == "full" and (self._ensembled() or self.fusion):
            raise ValueError("fine_tuning='full' supports neither ensemble_lengths nor fusion (the "
                             "default fusion='late' included): pass fusion=None to fine-tune Mantis")
        if self.fusion == "late" and self.fine_tuning != "none":
            raise ValueError(f"fusion='late' (the default) needs fine_tuning='none', got "
                             f"{self.fine_tuning!r}: pass fusion='minirocket' (MiniRocket features "
                             "beside the embeddings) or fusion=None (Mantis alone) to fine-tune")
        if self.fusion_weight is not None and self.fusion != "late":
            raise ValueError(f"fusion_weight needs fusion='late', got fusion={self.fusion!r}")

    def _seed(self) -> int:
        return draw_seed(self.random_state)

    def _tuned_backbone(self) -> dict | None:
        return self.backbone_state_

    # ---- features ----------------------------------------------------------------

    def _features(self, panel, fit: bool = False) -> np.ndarray:
        """Head inputs: embeddings at every length, then the fusion features (MiniRocket's
        of the series resized to ``minirocket_length_``, the longest training series)."""
        parts = [self._embeddings(panel)]
        if self.fusion in MINIROCKET_FUSIONS:
            if fit:
                self.minirocket_length_, self.fusion_ = fit_minirocket(
                    panel, self.minirocket_kernels, self.random_state, self.n_jobs)
            parts.append(minirocket_features(self.fusion_,
                                             resize_panel(panel, self.minirocket_length_)))
        elif self.fusion is not None:
            device = resolve_device(self.device)
            parts.append(checkpoint_features(self.fusion, panel, device,
                                             resolve_precision(device, self.inference_precision)))
        return np.concatenate(parts, axis=1)

    # ---- fit -------------------------------------------------------------------------

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y):
        """Embed the training series and fit (or fine-tune) the head.

        Parameters
        ----------
        X : array-like of shape (n, T), ndarray of shape (n, C, T), list of arrays or \
sktime panel
            Training series; see :mod:`skfm.timeseries._panel` for the accepted forms.
        y : array-like of shape (n,)
            Class labels (at least two classes).

        Returns
        -------
        self : MantisTimeSeriesClassifier
        """
        y = check_target(self, y)
        panel = as_panel(self, X, reset=True)
        check_consistent_length(panel, y)
        self.classes_, y_codes = class_labels(y)
        if len(self.classes_) < 2:
            raise ValueError(f"{type(self).__name__} needs samples of at least 2 classes, got "
                             f"1 class ({self.classes_[0]!r}).")
        model, device = self._load_backbone()
        self.backbone_state_ = self.head_state_ = self.head_ = self.fusion_ = None
        self.minirocket_length_ = self.selection_margins_ = self.fusion_weight_ = None
        self.selected_ = "mantis" if self.fusion is None else "fusion"
        self.selection_scores_, self.n_epochs_ = {}, 0
        if self.fine_tuning == "full":
            resized = resize_panel(panel, self._lengths(model)[0])
            self._fine_tune(resized, y_codes, model, device)
            self._n_features_out = self.n_channels_in_ * embedding_width(model.config,
                                                                         self.output_token)
            return self
        with threads(self.n_jobs):
            features = self._features(panel, fit=True)
        self._n_features_out = features.shape[1]
        if self.fine_tuning == "head":
            self._fine_tune(features, y_codes, None, device)
            return self
        n_mantis = self.n_channels_in_ * len(self._lengths(model)) * embedding_width(
            model.config, self.output_token)
        (self.head_, self.selected_, self.selection_scores_,
         self.selection_margins_) = fit_frozen_head(
            features.astype(np.float64), y_codes, n_mantis, self.head, self.fusion,  # float64:
            self.fusion_weight, self._seed(), self.cv, self.n_jobs)  # see predict_proba
        self.fusion_weight_ = self.head_.weight_ if self.fusion == "late" else None
        return self

    def _fine_tune(self, X: np.ndarray, y: np.ndarray, model: Mantis | None, device) -> None:
        """Train a BatchNorm + Linear head (and the backbone when given) with early stopping,
        on torch's own thread count (``n_jobs`` would change the last bits of its sums)."""
        trained = train(
            X, y, len(self.classes_), model, layer=self.layer_, output_token=self.output_token,
            learning_rate=self.learning_rate, backbone_learning_rate=self.backbone_learning_rate,
            max_epochs=self.max_epochs, batch_size=self.batch_size,
            validation_fraction=self.validation_fraction, n_iter_no_change=self.n_iter_no_change,
            verbose=self.verbose, device=device, random_state=self.random_state,
        )
        self.head_state_, self.backbone_state_ = trained.head_state, trained.backbone_state
        self.n_epochs_ = trained.n_epochs

    # ---- predict -------------------------------------------------------------------

    def transform(self, X) -> np.ndarray:
        """The features the head sees: embeddings (all lengths) and fusion features.

        Parameters
        ----------
        X : array-like, ndarray of shape (n, C, T), list of arrays or sktime panel
            Series with the training number of channels; any length.

        Returns
        -------
        ndarray of shape (n, n_features)
        """
        check_is_fitted(self)
        panel = as_panel(self, X, reset=False)
        return self._in_chunks(panel, self._head_inputs)

    def _head_inputs(self, panel) -> np.ndarray:
        """What the head sees for a chunk of series: the fine-tuned embeddings, or the features."""
        if self.fine_tuning == "full":
            return self._embed(panel, self.layer_, self.output_token)
        return self._features(panel)

    def predict_proba(self, X) -> np.ndarray:
        """Class probabilities, columns in the order of ``classes_``.

        Parameters
        ----------
        X : array-like, ndarray of shape (n, C, T), list of arrays or sktime panel

        Returns
        -------
        ndarray of shape (n, n_classes)
        """
        check_is_fitted(self)
        panel = as_panel(self, X, reset=False)
        # chunk by chunk, features then head: the features of all series (10,252 a series by
        # default) never exist at once
        return self._in_chunks(panel, self._chunk_proba)

    def _chunk_proba(self, panel) -> np.ndarray:
        """Class probabilities of a chunk of series: (n, n_classes) float64."""
        features = self._head_inputs(panel)
        if self.head_ is not None:
            # in float64: float32 products are blocked by the number of rows, so a series'
            # probabilities would change in their last bits with the series predicted beside it
            return probability_rows(self.head_.predict_proba(features.astype(np.float64)))
        return self._runtime.head_proba(self.head_state_, features, resolve_device(self.device))

    def predict(self, X) -> np.ndarray:
        """Most probable class of every series.

        Parameters
        ----------
        X : array-like, ndarray of shape (n, C, T), list of arrays or sktime panel

        Returns
        -------
        ndarray of shape (n,)
        """
        check_is_fitted(self)
        return self.classes_[self.predict_proba(X).argmax(1)]

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.transformer_tags.preserves_dtype = []  # embeddings are float32 for any input
        return tags
