"""What the Mantis classifier and transformer share: the frozen backbone's parameters and checks,
the layer read, the embeddings at every self-ensembling length, and pickling without torch.

:class:`FrozenMantisBase` is the base class of
:class:`~skfm.timeseries.mantis.classifier.MantisTimeSeriesClassifier` and
:class:`~skfm.timeseries.mantis.transformer.MantisTransformer`; a subclass that fine-tunes the
backbone returns its numpy weights from :meth:`FrozenMantisBase._tuned_backbone`.
"""

from __future__ import annotations

import functools
import os
from numbers import Integral

import numpy as np
import torch
from sklearn.base import BaseEstimator
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_is_fitted

from skfm._backend import resolve_device, resolve_precision, threads
from skfm.timeseries._panel import as_panel, resize_panel
from skfm.timeseries.mantis.embedding import embed_panel, in_chunks
from skfm.timeseries.mantis.loading import load_model
from skfm.timeseries.mantis.model import OUTPUT_TOKENS, Mantis
from skfm.timeseries.mantis.runtime import ModuleCache


class FrozenMantisBase(BaseEstimator):
    """Parameters ``checkpoint``, ``layer``, ``output_token``, ``seq_len``,
    ``ensemble_lengths``, ``device``, ``inference_precision`` and ``n_jobs`` (documented by
    the subclasses), and the embeddings they define."""

    #: The constraints of the shared parameters; subclasses add their own.
    _parameter_constraints: dict = {
        "checkpoint": [str, os.PathLike],
        "layer": [Integral, None],
        "output_token": [StrOptions(set(OUTPUT_TOKENS))],
        "seq_len": [Interval(Integral, 1, None, closed="left"), None],
        "ensemble_lengths": ["array-like", None],
        "device": [str, torch.device, None],
        "inference_precision": [str, torch.dtype],
        "n_jobs": [Integral, None],
    }

    def _check_model_params(self, model: Mantis) -> None:
        """The checks that need the model: the layer's range and the lengths."""
        if self.layer is not None:
            model.resolve_layer(int(self.layer))
        for length in self._lengths(model):
            if isinstance(length, bool) or not isinstance(length, Integral) or (
                length < 1 or length % model.config.n_patches
            ):
                raise ValueError(
                    f"seq_len / ensemble_lengths must be positive multiples of the model's "
                    f"{model.config.n_patches} patches, got {length!r}"
                )

    def _ensembled(self) -> bool:
        """Whether ``ensemble_lengths`` gives lengths (a non-empty sequence or array)."""
        return self.ensemble_lengths is not None and len(self.ensemble_lengths) > 0

    def _lengths(self, model: Mantis) -> tuple[int, ...]:
        if self._ensembled():
            return tuple(self.ensemble_lengths)
        return (model.config.seq_len if self.seq_len is None else self.seq_len,)

    def _load_backbone(self) -> tuple[Mantis, torch.device]:
        """Load and check the checkpoint; set ``layer_`` and a new module cache (in ``fit``)."""
        device = resolve_device(self.device)
        model, card = load_model(self.checkpoint, device)
        self._check_model_params(model)
        resolve_precision(device, self.inference_precision)  # refused here, not at transform
        self._runtime = ModuleCache()
        layer = card.get("default_layer") if self.layer is None else self.layer
        self.layer_ = model.resolve_layer(None if layer is None else int(layer))
        return model, device

    # ---- persistence -------------------------------------------------------------

    def __getstate__(self):
        state = self.__dict__.copy()
        state.pop("_runtime", None)
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)
        if "layer_" in state:
            self._runtime = ModuleCache()

    def _tuned_backbone(self) -> dict | None:
        """The fine-tuned backbone's weights (numpy), or None for the checkpoint's own."""
        return None

    def _runtime_model(self, device) -> Mantis:
        """The (possibly fine-tuned) backbone on ``device``, rebuilt lazily, never pickled."""
        return self._runtime.backbone(self.checkpoint, self._tuned_backbone(), device,
                                      resolve_precision(device, self.inference_precision))

    # ---- embeddings --------------------------------------------------------------

    def _embeddings(self, panel) -> np.ndarray:
        """The backbone's embeddings at every length, concatenated: (n, lengths * C * D')."""
        device = resolve_device(self.device)
        dtype = resolve_precision(device, self.inference_precision)
        model = self._runtime_model(device)
        return np.concatenate([
            embed_panel(model, resize_panel(panel, length), self.layer_, self.output_token,
                        device, dtype)
            for length in self._lengths(model)
        ], axis=1)

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

    def _in_chunks(self, panel, compute) -> np.ndarray:
        """``compute`` over chunks of series (:func:`~.embedding.in_chunks`) on ``n_jobs``
        threads."""
        with threads(self.n_jobs):
            return in_chunks(panel, compute)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.three_d_array = True
        tags.non_deterministic = False
        return tags
