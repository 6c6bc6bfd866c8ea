"""MantisTimeSeriesClassifier: a pretrained Mantis encoder with a scikit-learn head.

The torch modules are cached per (checkpoint, device) and never pickled: a
fitted estimator holds the checkpoint name, its scikit-learn head and, after
fine-tuning, the trained weights as numpy arrays; modules are rebuilt lazily.
"""

from __future__ import annotations

import copy
import functools
import numbers

import numpy as np
import torch
import torch.nn.functional as F
from sklearn.base import (
    BaseEstimator,
    ClassifierMixin,
    ClassNamePrefixFeaturesOutMixin,
    TransformerMixin,
)
from sklearn.ensemble import RandomForestClassifier
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import train_test_split
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.utils import check_random_state
from sklearn.utils.validation import check_consistent_length, check_is_fitted, column_or_1d
from torch import nn

from skfm._backend import (
    auto_batch_size,
    inference_context,
    resolve_device,
    resolve_precision,
    run_in_batches,
    seeded,
    threads,
    to_device,
    torch_generator,
)
from skfm._finetune import FineTuneConfig, fine_tune, param_groups
from skfm._validation import class_labels
from skfm._weights import ModelFamily, shared_model
from skfm.timeseries._panel import as_panel, resize_panel
from skfm.timeseries.mantis.model import OUTPUT_TOKENS, Mantis, MantisConfig

DEFAULT_CHECKPOINT = "mantis-v2"
#: Series resized and embedded together by transform/embed/predict: the resized copies of a
#: panel exist for one chunk at a time, so memory does not grow with the number of series.
CHUNK_SERIES = 4096
#: How Mantis checkpoints become modules (see :mod:`skfm._weights.loader`).
MANTIS = ModelFamily("mantis", lambda config: Mantis(MantisConfig(**config)), label="mantis")


def load_model(checkpoint: str, device: torch.device) -> tuple[Mantis, dict]:
    """The shared Mantis module of a checkpoint on ``device``, and its card.

    ``checkpoint`` is a shipped name, a path, a hub id, or ``"random:<config>"``
    (``"random:small"``, ``"random:tiny"`` or a config json path): that
    architecture at a fixed random initialisation (seed 0), the baseline a
    pretrained checkpoint must beat.
    """
    return shared_model(checkpoint, MANTIS, device)


def embed_panel(
    model: Mantis,
    X: np.ndarray,
    layer: int | None,
    output_token: str,
    device: torch.device,
    dtype: torch.dtype | None,
) -> np.ndarray:
    """Per-channel embeddings of ``X`` (n, C, L), concatenated: (n, C * D') float32."""
    n, c, length = X.shape
    flat = X.reshape(n * c, length)
    width = model.config.d_model * (2 if output_token == "combined" else 1)
    bytes_per_row = 4 * length * model.config.d_model * 6
    batch = auto_batch_size(device, bytes_per_row, len(flat), max_batch=512)

    def run(start: int, stop: int) -> np.ndarray:
        with inference_context(device, dtype):
            z = model(to_device(flat[start:stop], device), layer=layer, output_token=output_token)
        return z.float().cpu().numpy()

    parts = run_in_batches(run, len(flat), batch, device=device)
    out = np.concatenate(parts) if parts else np.empty((0, width), np.float32)
    return out.reshape(n, c * width)


class _FineTuneNet(nn.Module):
    """Backbone (per channel) + BatchNorm + Linear over the concatenated embeddings."""

    def __init__(self, backbone: Mantis | None, n_features: int, n_classes: int, layer, token):
        super().__init__()
        self.backbone, self.layer, self.token = backbone, layer, token
        self.head = nn.Sequential(nn.BatchNorm1d(n_features), nn.Linear(n_features, n_classes))

    def features(self, x: torch.Tensor) -> torch.Tensor:  # (B, C, L) -> (B, C * D')
        b, c, length = x.shape
        z = self.backbone(x.reshape(b * c, length), layer=self.layer, output_token=self.token)
        return z.reshape(b, -1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:  # (B, C, L) or (B, F) -> (B, K)
        return self.head(self.features(x) if self.backbone is not None else x)


class MantisTimeSeriesClassifier(
    ClassifierMixin, ClassNamePrefixFeaturesOutMixin, TransformerMixin, BaseEstimator
):
    """Time-series classifier on a Mantis foundation model pretrained on synthetic series.

    Every series (each channel of a multichannel series separately) is
    linearly resized to the model's length and embedded by a frozen
    transformer; a scikit-learn head is trained on the embeddings. Optionally
    the head alone (``fine_tuning="head"``) or the whole network
    (``fine_tuning="full"``) is trained with AdamW and early stopping.
    Test-time options of the Mantis paper: features from an intermediate
    ``layer``, self-ensembling over several input lengths, and fusion with a
    second embedding (MiniRocket features or another checkpoint).

    Parameters
    ----------
    checkpoint : str, default="mantis-v2"
        Shipped checkpoint name, path to a ``.safetensors`` file with its card,
        a name in ``$SKFM_HOME``, a ``hf://`` hub id, or ``"random:<config>"``
        (e.g. ``"random:small"``: the same architecture at a fixed random
        initialisation, a baseline).
    fine_tuning : {"none", "head", "full"}, default="none"
        ``"none"``: frozen embeddings and the scikit-learn ``head``.
        ``"head"``: frozen embeddings, a BatchNorm + Linear head trained in torch.
        ``"full"``: backbone and BatchNorm + Linear head trained end to end.
    head : {"logistic", "random_forest"}, default="logistic"
        The head when ``fine_tuning="none"``: ``StandardScaler`` +
        ``LogisticRegression``, or a 200-tree ``RandomForestClassifier``.
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
    fusion : str or None, default=None
        Concatenate a second embedding: ``"minirocket"`` (sktime's MiniRocket
        on the resized series; needs sktime) or another checkpoint (as in
        ``checkpoint``, embedded at its own default layer).
    max_epochs : int, default=50
        Fine-tuning epochs at most.
    learning_rate : float, default=1e-2
        AdamW learning rate of the BatchNorm + Linear head when fine-tuning.
    backbone_learning_rate : float, default=2e-4
        AdamW learning rate of the backbone for ``fine_tuning="full"``.
    batch_size : int, default=32
        Fine-tuning mini-batch size.
    validation_fraction : float, default=0.1
        Share of the training series held out (stratified) for early
        stopping; 0 or too few series per class: no early stopping.
    n_iter_no_change : int, default=5
        Stop after this many epochs without a lower validation loss; the
        best weights are kept.
    verbose : bool, default=False
        Show a progress bar while fine-tuning (never when the environment
        variable ``SKFM_PROGRESS`` is ``0``).
    device : str, default="auto"
        ``"auto"``, ``"cpu"``, ``"cuda"``, ``"cuda:N"`` or ``"mps"``.
    inference_precision : str, default="auto"
        ``"auto"`` (bf16 autocast on CUDA, fp32 on CPU), ``"fp32"``,
        ``"bf16"`` or ``"fp16"`` (CUDA only).
    n_jobs : int or None, default=None
        CPU threads for torch and the random forest (-1: all cores).
    random_state : int, RandomState or None, default=0
        Seeds the validation split, fine-tuning and the random forest.

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
    fusion_ : object or None
        The fitted MiniRocket transformer when ``fusion="minirocket"``.
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
    >>> clf.transform(X[:3]).shape
    (3, 128)
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
        fusion: str | None = None,
        max_epochs: int = 50,
        learning_rate: float = 1e-2,
        backbone_learning_rate: float = 2e-4,
        batch_size: int = 32,
        validation_fraction: float = 0.1,
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

    def _check_params(self, model: Mantis) -> None:
        def positive_int(name):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 1:
                raise ValueError(f"{name} must be a positive integer, got {value!r}")

        choices = {"fine_tuning": ("none", "head", "full"), "head": ("logistic", "random_forest"),
                   "output_token": OUTPUT_TOKENS}
        for name, allowed in choices.items():
            if getattr(self, name) not in allowed:
                raise ValueError(f"{name} must be one of {allowed}, got {getattr(self, name)!r}")
        for name in ("max_epochs", "batch_size", "n_iter_no_change"):
            positive_int(name)
        if not 0.0 <= float(self.validation_fraction) < 1.0:
            raise ValueError(
                f"validation_fraction must be in [0, 1), got {self.validation_fraction!r}"
            )
        for name in ("learning_rate", "backbone_learning_rate"):
            if not float(getattr(self, name)) > 0:
                raise ValueError(f"{name} must be positive, got {getattr(self, name)!r}")
        if self.layer is not None:
            if isinstance(self.layer, bool) or not isinstance(self.layer, numbers.Integral):
                raise ValueError(f"layer must be an int or None, got {self.layer!r}")
            model.resolve_layer(int(self.layer))
        for length in self._lengths(model):
            if isinstance(length, bool) or not isinstance(length, numbers.Integral) or (
                length < 1 or length % model.config.n_patches
            ):
                raise ValueError(
                    f"seq_len / ensemble_lengths must be positive multiples of the model's "
                    f"{model.config.n_patches} patches, got {length!r}"
                )
        if self.fine_tuning == "full" and (self.ensemble_lengths or self.fusion):
            raise ValueError("fine_tuning='full' supports neither ensemble_lengths nor fusion")
        if self.fusion is not None and not isinstance(self.fusion, str):
            raise ValueError(f"fusion must be None, 'minirocket' or a checkpoint, got {self.fusion!r}")

    def _lengths(self, model: Mantis) -> tuple[int, ...]:
        if self.ensemble_lengths:
            return tuple(self.ensemble_lengths)
        return (model.config.seq_len if self.seq_len is None else self.seq_len,)

    def _runtime_model(self, device) -> Mantis:
        """The (possibly fine-tuned) backbone on ``device``, rebuilt lazily, never pickled."""
        model, _ = load_model(self.checkpoint, device)
        if self.backbone_state_ is None:
            return model
        key = ("backbone", str(device))
        if key not in self._runtime:
            tuned = copy.deepcopy(model)
            tuned.load_state_dict({k: torch.from_numpy(np.array(v))
                                   for k, v in self.backbone_state_.items()})
            self._runtime[key] = tuned.eval()
        return self._runtime[key]

    def __getstate__(self):
        state = self.__dict__.copy()
        state.pop("_runtime", None)
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)
        if "classes_" in state:
            self._runtime = {}

    # ---- features ----------------------------------------------------------------

    def _features(self, panel, fit: bool = False) -> np.ndarray:
        """Head inputs: embeddings at every length, then the fusion features."""
        device = resolve_device(self.device)
        dtype = resolve_precision(device, self.inference_precision)
        model = self._runtime_model(device)
        parts = [
            embed_panel(model, resize_panel(panel, length), self.layer_, self.output_token,
                        device, dtype)
            for length in self._lengths(model)
        ]
        if self.fusion == "minirocket":
            resized = resize_panel(panel, model.config.seq_len if self.seq_len is None
                                   else self.seq_len)
            if fit:
                from sktime.transformations.panel.rocket import MiniRocketMultivariate

                self.fusion_ = MiniRocketMultivariate(random_state=self._seed(), n_jobs=1)
                self.fusion_.fit(resized)
            parts.append(np.asarray(self.fusion_.transform(resized), dtype=np.float32))
        elif self.fusion is not None:
            other, card = load_model(self.fusion, device)
            length = other.config.seq_len
            parts.append(embed_panel(other, resize_panel(panel, length),
                                     card.get("default_layer"), "combined", device, dtype))
        return np.concatenate(parts, axis=1)

    def _seed(self) -> int:
        return int(check_random_state(self.random_state).randint(2**31 - 1))

    # ---- fit -------------------------------------------------------------------------

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
        if y is None:
            raise ValueError(
                f"This {type(self).__name__} estimator requires y to be passed, "
                "but the target y is None."
            )
        panel = as_panel(self, X, reset=True)
        y = column_or_1d(y, warn=True)
        check_consistent_length(panel, y)
        self.classes_, y_codes = class_labels(y)
        if len(self.classes_) < 2:
            raise ValueError(
                f"{type(self).__name__} needs samples of at least 2 classes, got 1 class "
                f"({self.classes_[0]!r})."
            )
        device = resolve_device(self.device)
        model, card = load_model(self.checkpoint, device)
        self._check_params(model)
        self._runtime = {}
        self.backbone_state_ = None
        self.head_state_ = None
        self.head_ = None
        self.fusion_ = None
        self.n_epochs_ = 0
        layer = card.get("default_layer") if self.layer is None else self.layer
        self.layer_ = model.resolve_layer(None if layer is None else int(layer))
        with threads(self.n_jobs):
            if self.fine_tuning == "full":
                resized = resize_panel(panel, self._lengths(model)[0])
                self._fine_tune(resized, y_codes, model, device)
                width = model.config.d_model * (2 if self.output_token == "combined" else 1)
                self._n_features_out = self.n_channels_in_ * width
            else:
                features = self._features(panel, fit=True)
                self._n_features_out = features.shape[1]
                if self.fine_tuning == "head":
                    self._fine_tune(features, y_codes, None, device)
                else:
                    self.head_ = self._make_head().fit(features, y_codes)
        return self

    def _make_head(self):
        if self.head == "random_forest":
            return RandomForestClassifier(n_estimators=200, random_state=self._seed(),
                                          n_jobs=self.n_jobs)
        return make_pipeline(StandardScaler(), LogisticRegression(max_iter=2000))

    def _split(self, n: int, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Stratified train/validation indices; no validation when it cannot be stratified."""
        n_val = int(round(self.validation_fraction * n))
        counts = np.bincount(y)
        if n_val < len(counts) or n - n_val < len(counts) or counts.min() < 2:
            return np.arange(n), np.arange(0)
        return train_test_split(np.arange(n), test_size=n_val, stratify=y,
                                random_state=self._seed())

    def _fine_tune(self, X: np.ndarray, y: np.ndarray, model: Mantis | None, device) -> None:
        """Train a BatchNorm + Linear head (and the backbone when given) with early stopping."""
        seed = self._seed()
        with seeded(seed, device):  # initialisation and dropout
            net = self._train_net(X, y, model, device, seed)
        self.head_state_ = {k.removeprefix("head."): v.detach().cpu().numpy()
                            for k, v in net.state_dict().items() if k.startswith("head.")}
        if model is not None:
            self.backbone_state_ = {k.removeprefix("backbone."): v.detach().cpu().numpy()
                                    for k, v in net.state_dict().items()
                                    if k.startswith("backbone.")}

    def _train_net(self, X, y, model, device, seed) -> _FineTuneNet:
        backbone = None
        n_features = X.shape[1]
        if model is not None:
            backbone = copy.deepcopy(model).requires_grad_(True).train()
            n_features *= model.config.d_model * (2 if self.output_token == "combined" else 1)
        net = _FineTuneNet(backbone, n_features, len(self.classes_), self.layer_,
                           self.output_token).to(device)
        net.head[0].momentum = None  # running statistics: the plain average over batches
        groups = param_groups(list(net.head.parameters()), self.learning_rate,
                              [] if backbone is None else list(backbone.parameters()),
                              self.backbone_learning_rate)
        train_idx, val_idx = self._split(len(X), y)
        X_t, y_t = to_device(X, "cpu"), torch.as_tensor(y)

        def validation_loss() -> torch.Tensor:
            self._recalibrate(net, X_t[train_idx], device)
            return F.cross_entropy(net(X_t[val_idx].to(device)), y_t[val_idx].to(device))

        config = FineTuneConfig(
            max_epochs=self.max_epochs, batch_size=self.batch_size,
            n_iter_no_change=self.n_iter_no_change, tol=1e-4, weight_decay=0.05, min_batch=2,
            verbose=self.verbose, desc="fine-tune mantis",
        )
        result = fine_tune(
            net, groups, train_idx,
            lambda rows: F.cross_entropy(net(X_t[rows].to(device)), y_t[rows].to(device)),
            validation_loss if len(val_idx) else None,
            config, torch_generator(seed),
        )
        self.n_epochs_ = result.n_epochs
        if result.validation_loss is None:
            self._recalibrate(net, X_t[train_idx], device)
        return net

    def _recalibrate(self, net: _FineTuneNet, X_train: torch.Tensor, device) -> None:
        """Set the BatchNorm statistics to those of the current training features; eval mode."""
        net.eval()
        norm = net.head[0]
        norm.reset_running_stats()
        norm.train()
        with torch.no_grad():
            for start in range(0, len(X_train), 256):
                net(X_train[start:start + 256].to(device))
        norm.eval()

    # ---- predict -------------------------------------------------------------------

    def _torch_head(self, device) -> nn.Module:
        key = ("head", str(device))
        if key not in self._runtime:
            weight = self.head_state_["1.weight"]
            head = nn.Sequential(nn.BatchNorm1d(weight.shape[1]),
                                 nn.Linear(weight.shape[1], weight.shape[0]))
            head.load_state_dict({k: torch.from_numpy(np.array(v))
                                  for k, v in self.head_state_.items()})
            self._runtime[key] = head.eval().to(device)
        return self._runtime[key]

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
        if self.fine_tuning == "full":
            return self._in_chunks(panel, functools.partial(
                self._embed, layer=self.layer_, output_token=self.output_token))
        return self._in_chunks(panel, self._features)

    def _in_chunks(self, panel, compute) -> np.ndarray:
        """``compute`` over chunks of at most ``CHUNK_SERIES`` series, joined (n, n_features)."""
        with threads(self.n_jobs):
            return np.concatenate([compute(panel[start:start + CHUNK_SERIES])
                                   for start in range(0, len(panel), CHUNK_SERIES)])

    def embed(self, X, layer: int | None = None, output_token: str | None = None) -> np.ndarray:
        """Backbone embeddings at one length (``seq_len``), per channel concatenated.

        Parameters
        ----------
        X : array-like, ndarray of shape (n, C, T), list of arrays or sktime panel
        layer : int or None, default=None
            Transformer block to read; None: ``layer_``.
        output_token : {"cls", "mean", "combined"} or None, default=None
            None: the estimator's ``output_token``.

        Returns
        -------
        ndarray of shape (n, C * D) or (n, 2 * C * D) for ``"combined"``
        """
        check_is_fitted(self)
        panel = as_panel(self, X, reset=False)
        return self._in_chunks(panel, functools.partial(
            self._embed, layer=self.layer_ if layer is None else layer,
            output_token=self.output_token if output_token is None else output_token))

    def _embed(self, panel, layer: int, output_token: str) -> np.ndarray:
        device = resolve_device(self.device)
        model = self._runtime_model(device)
        if output_token not in OUTPUT_TOKENS:
            raise ValueError(f"output_token must be one of {OUTPUT_TOKENS}, got {output_token!r}")
        length = model.config.seq_len if self.seq_len is None else self.seq_len
        return embed_panel(model, resize_panel(panel, length), model.resolve_layer(layer),
                           output_token, device, resolve_precision(device, self.inference_precision))

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
        features = self.transform(X)
        if self.head_ is not None:
            return self.head_.predict_proba(features)
        device = resolve_device(self.device)
        with torch.no_grad():
            logits = self._torch_head(device)(to_device(features, device))
        return torch.softmax(logits.float(), dim=-1).cpu().numpy().astype(np.float64)

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
        tags.input_tags.three_d_array = True
        tags.transformer_tags.preserves_dtype = []  # embeddings are float32 for any input
        tags.non_deterministic = False
        return tags
