"""The heads of the Mantis classifier: scikit-learn ones, and the BatchNorm + Linear one in torch.

``fine_tuning="none"`` fits a scikit-learn head on frozen embeddings
(:func:`sklearn_head`), with MiniRocket's features chosen or fused by
:func:`fit_frozen_head`. ``"head"`` and ``"full"`` train a BatchNorm + Linear
head in torch (:class:`FineTuneNet`, with the backbone for ``"full"``); its
BatchNorm statistics are recomputed over the training features before every
evaluation (:func:`recalibrate`); its Linear layer starts from a logistic
regression on the normalised frozen features (:func:`linear_probe`: "LP-FT",
linear probing then fine-tuning), and a fitted classifier rebuilds the head
from its numpy state (:func:`head_from_state`).

Shapes use ``B`` series, ``C`` channels, ``L`` length, ``F`` features
(``C * D'`` embeddings), ``K`` classes.
"""

from __future__ import annotations

import numpy as np
import torch
from sklearn.ensemble import RandomForestClassifier
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from torch import nn

from skfm.timeseries.mantis.fusion import select_head
from skfm.timeseries.mantis.late_fusion import LateFusionClassifier
from skfm.timeseries.mantis.model import Mantis

#: Rows per forward pass when recomputing the BatchNorm statistics.
RECALIBRATE_BATCH = 256


def sklearn_head(kind: str, seed: int | None, n_jobs: int | None):
    """The unfitted head of ``fine_tuning="none"``.

    Parameters
    ----------
    kind : {"logistic", "random_forest"}
        ``StandardScaler`` + ``LogisticRegression``, or a 200-tree random forest.
    seed : int or None
        The forest's ``random_state``.
    n_jobs : int or None
        The forest's ``n_jobs``.
    """
    if kind == "random_forest":
        return RandomForestClassifier(n_estimators=200, random_state=seed, n_jobs=n_jobs)
    return make_pipeline(StandardScaler(), LogisticRegression(max_iter=2000))


def fit_frozen_head(features: np.ndarray, y: np.ndarray, n_mantis: int, kind: str,
                    fusion: str | None, weight: float | None, seed: int, n_folds: int,
                    n_jobs: int | None):
    """The fitted head of ``fine_tuning="none"`` and how it was chosen.

    ``fusion="minirocket"``: :func:`~.fusion.select_head` among MiniRocket +
    ridge, both blocks and the ``kind`` head on the embeddings; ``"late"``: a
    :class:`~.late_fusion.LateFusionClassifier` of MiniRocket + ridge and the
    ``kind`` head with Mantis's weight ``weight`` (None: chosen out of fold);
    else the ``kind`` head on all of ``features``.

    Parameters
    ----------
    features : ndarray of shape (n, n_features)
        Mantis's ``n_mantis`` embedding columns first, then the fusion features.
    y : ndarray of shape (n,)
        Class codes 0..K-1.
    n_mantis : int
    kind : {"logistic", "random_forest"}
    fusion : str or None
    weight : float or None
    seed : int
        Seeds the folds and the forest.
    n_folds : int
    n_jobs : int or None

    Returns
    -------
    head, selected, scores, margins
        As :func:`~.fusion.select_head` returns them (``selected`` ``"late"``
        with ``fusion="late"``, ``"mantis"`` with ``fusion=None``, else
        ``"fusion"``; ``scores`` empty and ``margins`` None but with
        ``fusion="minirocket"``).
    """
    head = sklearn_head(kind, seed, n_jobs)
    if fusion == "minirocket":
        return select_head(features, n_mantis, y, head, seed, n_folds)
    if fusion == "late":
        late = LateFusionClassifier(n_mantis, head, weight, n_folds, seed)
        return late.fit(features, y), "late", {}, None
    return head.fit(features, y), "mantis" if fusion is None else "fusion", {}, None


def batchnorm_linear(n_features: int, n_classes: int) -> nn.Sequential:
    """``BatchNorm1d(F)`` then ``Linear(F -> K)``: (B, F) -> (B, K) logits."""
    return nn.Sequential(nn.BatchNorm1d(n_features), nn.Linear(n_features, n_classes))


class FineTuneNet(nn.Module):
    """Backbone (per channel) + BatchNorm + Linear over the concatenated embeddings.

    Without a backbone (``fine_tuning="head"``) the input is the features
    themselves.
    """

    def __init__(self, backbone: Mantis | None, n_features: int, n_classes: int, layer, token):
        super().__init__()
        self.backbone, self.layer, self.token = backbone, layer, token
        self.head = batchnorm_linear(n_features, n_classes)

    def features(self, x: torch.Tensor) -> torch.Tensor:  # (B, C, L) -> (B, C * D')
        b, c, length = x.shape
        z = self.backbone(x.reshape(b * c, length), layer=self.layer, output_token=self.token)
        return z.reshape(b, -1)  # (B * C, D') -> (B, C * D')

    def inputs(self, x: torch.Tensor) -> torch.Tensor:  # (B, C, L) or (B, F) -> (B, F)
        """The head's input: the backbone's features, or ``x`` itself without a backbone."""
        return self.features(x) if self.backbone is not None else x

    def forward(self, x: torch.Tensor) -> torch.Tensor:  # (B, C, L) or (B, F) -> (B, K)
        return self.head(self.inputs(x))


def recalibrate(net: FineTuneNet, X_train: torch.Tensor, device: torch.device) -> None:
    """Set the BatchNorm statistics to those of the current training features; eval mode.

    ``X_train`` (n, C, L) or (n, F) is passed through ``net`` in chunks, with
    only the BatchNorm layer in training mode (dropout stays off).
    """
    net.eval()
    norm = net.head[0]
    norm.reset_running_stats()
    norm.train()
    with torch.no_grad():
        for rows in _batches(X_train, device):
            net(rows)
    norm.eval()


def _batches(X: torch.Tensor, device: torch.device):
    """``X`` in consecutive slices of ``RECALIBRATE_BATCH`` rows, each moved to ``device``."""
    return (X[start:start + RECALIBRATE_BATCH].to(device)
            for start in range(0, len(X), RECALIBRATE_BATCH))


def linear_probe(net: FineTuneNet, X_train: torch.Tensor, y_train: np.ndarray,
                 device: torch.device) -> None:
    """Set the head to a logistic regression on the current, normalised features.

    The BatchNorm statistics are recomputed over ``X_train`` (:func:`recalibrate`),
    a ``LogisticRegression`` (L2, ``C=1``) is fitted on the normalised features
    of the training rows, and its coefficients become the Linear layer's (a
    binary model's ``w`` as logits ``-w/2, +w/2``). Fine-tuning from this head
    moves the features less than from a random one (Kumar et al., 2022,
    "Fine-Tuning can Distort Pretrained Features").

    Parameters
    ----------
    net : FineTuneNet
    X_train : Tensor of shape (n, C, L) or (n, F)
    y_train : ndarray of shape (n,)
        Class indices; every class of the head occurs.
    device : torch.device
    """
    recalibrate(net, X_train, device)
    with torch.no_grad():
        normalised = torch.cat([net.head[0](net.inputs(rows)).cpu()  # (n, F)
                                for rows in _batches(X_train, device)]).double().numpy()
    probe = LogisticRegression(max_iter=2000).fit(normalised, y_train)
    weight, bias = probe.coef_, probe.intercept_  # (K, F), (K,); binary: (1, F), (1,)
    if len(probe.classes_) == 2:
        weight, bias = np.concatenate([-weight, weight]) / 2, np.concatenate([-bias, bias]) / 2
    linear = net.head[1]
    with torch.no_grad():
        linear.weight.copy_(torch.as_tensor(weight, dtype=linear.weight.dtype))
        linear.bias.copy_(torch.as_tensor(bias, dtype=linear.bias.dtype))


def head_state(net: FineTuneNet) -> dict[str, np.ndarray]:
    """The trained head's weights and BatchNorm statistics, as numpy arrays."""
    return {k.removeprefix("head."): v.detach().cpu().numpy()
            for k, v in net.state_dict().items() if k.startswith("head.")}


def head_from_state(state: dict[str, np.ndarray]) -> nn.Sequential:
    """The BatchNorm + Linear head of ``state`` (from :func:`head_state`), in eval mode."""
    weight = state["1.weight"]  # (K, F)
    head = batchnorm_linear(weight.shape[1], weight.shape[0])
    head.load_state_dict({k: torch.from_numpy(np.array(v)) for k, v in state.items()})
    return head.eval()
