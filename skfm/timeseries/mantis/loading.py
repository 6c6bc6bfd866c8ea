"""Mantis checkpoints: their model family and the shared, cached modules."""

from __future__ import annotations

import torch

from skfm._weights import ModelFamily, shared_model
from skfm.timeseries.mantis.model import Mantis, MantisConfig

DEFAULT_CHECKPOINT = "mantis-v3"
#: How Mantis checkpoints become modules (see :mod:`skfm._weights.loader`).
MANTIS = ModelFamily("mantis", lambda config: Mantis(MantisConfig(**config)), label="mantis")


def load_model(checkpoint: str, device: torch.device) -> tuple[Mantis, dict]:
    """The shared Mantis module of a checkpoint on ``device``, and its card.

    ``checkpoint`` is a shipped name, a path, a hub id, or ``"random:<config>"``
    (``"random:small"``, ``"random:tiny"`` or a config json path): that
    architecture at a fixed random initialisation (seed 0), the baseline a
    pretrained checkpoint must beat. The module is shared between estimators:
    never train it in place (copy it first).

    Examples
    --------
    >>> import torch
    >>> from skfm.timeseries.mantis.loading import load_model
    >>> model, card = load_model("random:tiny", torch.device("cpu"))
    >>> model.config.n_patches
    8
    """
    return shared_model(checkpoint, MANTIS, device)
