"""Fine-tuning for the Mantis classifier: the BatchNorm + Linear head, and the backbone with it.

Skfm's shared loop (:func:`skfm._finetune.fine_tune`) with this recipe:
AdamW (weight decay 0.05) at ``learning_rate`` for the head and
``backbone_learning_rate`` for the backbone (``fine_tuning="full"``),
cross-entropy, mini-batches of at least two series (BatchNorm), and
optionally a stratified validation split for early stopping; the BatchNorm
statistics are recomputed over the training rows before every validation and
at the end. The head starts as a linear probe of the frozen features
(:func:`~.head.linear_probe`) of the training rows; with a validation split
that starting point is validated too, and kept when no epoch of fine-tuning
lowers the validation loss.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F

from skfm._backend import (
    draw_seed,
    seeded,
    thread_invariant_attention,
    to_device,
    torch_generator,
)
from skfm._finetune import FineTuneConfig, fine_tune, param_groups, stratified_split
from skfm.timeseries.mantis.embedding import embedding_width
from skfm.timeseries.mantis.head import FineTuneNet, head_state, linear_probe, recalibrate
from skfm.timeseries.mantis.model import Mantis


@dataclass(frozen=True)
class Trained:
    """The trained weights as numpy arrays, and the epochs run.

    Attributes
    ----------
    head_state : dict of str to ndarray
        BatchNorm + Linear head (see :func:`~.head.head_from_state`).
    backbone_state : dict of str to ndarray or None
        The fine-tuned backbone (``fine_tuning="full"``), else None.
    n_epochs : int
    """

    head_state: dict
    backbone_state: dict | None
    n_epochs: int


def train(
    X: np.ndarray,
    y: np.ndarray,
    n_classes: int,
    model: Mantis | None,
    *,
    layer: int,
    output_token: str,
    learning_rate: float,
    backbone_learning_rate: float,
    max_epochs: int,
    batch_size: int,
    validation_fraction: float,
    n_iter_no_change: int,
    verbose: bool,
    device: torch.device,
    random_state,
) -> Trained:
    """Train a BatchNorm + Linear head (and a copy of ``model`` when given) with early stopping.

    Parameters
    ----------
    X : ndarray of shape (n, F) or (n, C, L)
        Frozen features (``model`` None) or the resized series (``model`` given).
    y : ndarray of shape (n,)
        Class indices in ``0..n_classes - 1``.
    n_classes : int
    model : Mantis or None
        The backbone to fine-tune (it is copied, never changed), or None.
    layer, output_token, learning_rate, backbone_learning_rate, max_epochs, batch_size, \
validation_fraction, n_iter_no_change, verbose
        As in ``MantisTimeSeriesClassifier``.
    device : torch.device
    random_state : int, RandomState or None
        Seeds initialisation, dropout and the order of the rows (a first
        draw), and the validation split (a second draw).

    Returns
    -------
    Trained
    """
    seed = draw_seed(random_state)
    # seeded: initialisation and dropout; the math attention kernel: the same bits on any
    # number of threads
    with seeded(seed, device), thread_invariant_attention(device):
        backbone = None
        n_features = X.shape[1]
        if model is not None:
            backbone = copy.deepcopy(model).requires_grad_(True).train()
            n_features *= embedding_width(model.config, output_token)
        net = FineTuneNet(backbone, n_features, n_classes, layer, output_token).to(device)
        net.head[0].momentum = None  # running statistics: the plain average over batches
        groups = param_groups(list(net.head.parameters()), learning_rate,
                              [] if backbone is None else list(backbone.parameters()),
                              backbone_learning_rate)
        train_idx, val_idx = stratified_split(y, validation_fraction, random_state)
        X_t, y_t = to_device(X, "cpu"), torch.as_tensor(y)  # moved to device batch by batch
        linear_probe(net, X_t[train_idx], y[train_idx], device)

        def validation_loss() -> torch.Tensor:
            recalibrate(net, X_t[train_idx], device)
            return F.cross_entropy(net(X_t[val_idx].to(device)), y_t[val_idx].to(device))

        result = fine_tune(
            net, groups, train_idx,
            lambda rows: F.cross_entropy(net(X_t[rows].to(device)), y_t[rows].to(device)),
            validation_loss if len(val_idx) else None,
            FineTuneConfig(max_epochs=max_epochs, batch_size=batch_size,
                           n_iter_no_change=n_iter_no_change, tol=1e-4, weight_decay=0.05,
                           min_batch=2, verbose=verbose, desc="fine-tune mantis",
                           validate_start=True),
            torch_generator(seed),
        )
        if result.validation_loss is None:  # no best state restored: the last epoch's
            recalibrate(net, X_t[train_idx], device)
    backbone_state = None if model is None else {
        k.removeprefix("backbone."): v.detach().cpu().numpy()
        for k, v in net.state_dict().items() if k.startswith("backbone.")}
    return Trained(head_state(net), backbone_state, result.n_epochs)
