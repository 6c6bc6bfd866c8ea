"""MantisTransformer: frozen Mantis embeddings of time series, without labels.

The scikit-learn transformer only: the parameters, checks and embeddings it shares with
:class:`~.classifier.MantisTimeSeriesClassifier` are in :mod:`.frozen`.
"""

from __future__ import annotations

import numpy as np
from sklearn.base import TransformerMixin, _fit_context
from sklearn.utils.validation import _check_feature_names_in, check_is_fitted

from skfm.timeseries._panel import as_panel
from skfm.timeseries.mantis.embedding import embedding_width
from skfm.timeseries.mantis.frozen import FrozenMantisBase
from skfm.timeseries.mantis.loading import DEFAULT_CHECKPOINT


class MantisTransformer(TransformerMixin, FrozenMantisBase):
    """Embed time series with a frozen, pretrained Mantis model; no labels needed.

    Every series (each channel of a multichannel series separately) is
    linearly resized to the model's length and embedded by the frozen
    transformer: the features :class:`MantisTimeSeriesClassifier` with
    ``fusion=None`` gives its head, for any scikit-learn estimator
    downstream (a classifier, a regressor, clustering, nearest neighbours).
    Nothing is learned: ``fit`` loads and checks the checkpoint and records
    the number of channels.

    Parameters
    ----------
    checkpoint : str, default="mantis-v3"
        Shipped checkpoint name, path to a ``.safetensors`` file with its card,
        a name in ``$SKFM_HOME``, a ``hf://`` hub id, or ``"random:<config>"``
        (e.g. ``"random:base"``: ``mantis-v3``'s architecture at a fixed random
        initialisation, a baseline).
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
    device : str, default="auto"
        ``"auto"``, ``"cpu"``, ``"cuda"``, ``"cuda:N"`` or ``"mps"``.
    inference_precision : str or torch.dtype, default="auto"
        ``"auto"`` (bf16 autocast on CUDA, fp32 on CPU), ``"fp32"``, ``"bf16"``,
        ``"fp16"`` (CUDA only) or ``"fp64"`` (weights and inputs; not on MPS):
        float64 embeddings.
    n_jobs : int or None, default=None
        CPU threads for torch (-1: all cores); the embeddings do not depend
        on it.

    Attributes
    ----------
    n_channels_in_ : int
        Channels of the series seen by ``fit``.
    n_features_in_ : int
        Time points of 2-D input to ``fit`` (only then).
    feature_names_in_ : ndarray of shape (n_features_in_,)
        Only for a pandas 2-D input with string column names.
    layer_ : int
        The transformer block the embeddings are read from.

    See Also
    --------
    MantisTimeSeriesClassifier : the same embeddings with a head chosen on labels.
    skfm.timeseries.MantisSktimeTransformer : this transformer for sktime panels.

    Notes
    -----
    Output: float32 (float64 with ``inference_precision="fp64"``) of shape
    ``(n, n_lengths * C * D')``, ``D'`` the model
    width (twice it for ``"combined"``), named ``mantis0``, ``mantis1``, ...
    by :meth:`get_feature_names_out`; a DataFrame after
    ``set_output(transform="pandas")``.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.linear_model import LogisticRegression
    >>> from sklearn.pipeline import make_pipeline
    >>> from skfm.timeseries import MantisTransformer
    >>> rng = np.random.default_rng(0)
    >>> t = np.linspace(0, 1, 100)
    >>> y = np.repeat([0, 1], 20)
    >>> X = np.sin(2 * np.pi * (3 + 3 * y[:, None]) * t) + 0.3 * rng.normal(size=(40, 100))
    >>> MantisTransformer().fit_transform(X).shape  # 2 x 128 values a channel
    (40, 256)
    >>> clf = make_pipeline(MantisTransformer(), LogisticRegression()).fit(X[::2], y[::2])
    >>> clf.score(X[1::2], y[1::2])
    1.0
    """

    def __init__(
        self,
        checkpoint: str = DEFAULT_CHECKPOINT,
        layer: int | None = None,
        output_token: str = "combined",
        seq_len: int | None = None,
        ensemble_lengths: tuple[int, ...] | None = None,
        device: str = "auto",
        inference_precision: str = "auto",
        n_jobs: int | None = None,
    ):
        self.checkpoint = checkpoint
        self.layer = layer
        self.output_token = output_token
        self.seq_len = seq_len
        self.ensemble_lengths = ensemble_lengths
        self.device = device
        self.inference_precision = inference_precision
        self.n_jobs = n_jobs

    _parameter_constraints: dict = {**FrozenMantisBase._parameter_constraints}

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None):
        """Load and check the checkpoint; record the channels (and time points of 2-D input).

        Parameters
        ----------
        X : array-like of shape (n, T), ndarray of shape (n, C, T), list of arrays or \
sktime panel
            Series; see :mod:`skfm.timeseries._panel` for the accepted forms.
        y : None
            Ignored.

        Returns
        -------
        self : MantisTransformer
        """
        as_panel(self, X, reset=True)
        model, _ = self._load_backbone()
        self._n_features_out = (len(self._lengths(model)) * self.n_channels_in_
                                * embedding_width(model.config, self.output_token))
        return self

    def transform(self, X) -> np.ndarray:
        """The embeddings of every series: all lengths, each channel's concatenated.

        Parameters
        ----------
        X : array-like, ndarray of shape (n, C, T), list of arrays or sktime panel
            Series with the channels seen by ``fit``; any length.

        Returns
        -------
        ndarray of shape (n, n_features_out)
            float32; float64 with ``inference_precision="fp64"``.
        """
        check_is_fitted(self)
        return self._in_chunks(as_panel(self, X, reset=False), self._embeddings)

    def get_feature_names_out(self, input_features=None):
        """Names of the embedding columns: ``mantis0``, ``mantis1``, ...

        Parameters
        ----------
        input_features : array-like of str or None, default=None
            Only checked against ``feature_names_in_``.

        Returns
        -------
        ndarray of str, shape (n_features_out,)
        """
        check_is_fitted(self)
        _check_feature_names_in(self, input_features, generate_names=False)
        return np.asarray([f"mantis{i}" for i in range(self._n_features_out)], dtype=object)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.transformer_tags.preserves_dtype = []  # the precision's dtype for any input
        tags.target_tags.required = False
        return tags
