"""The torch modules of a fitted Mantis classifier, rebuilt lazily from numpy state.

A fitted classifier holds its trained weights as numpy arrays (pickle and
``skops.io`` need no torch objects); the modules that use them are built on
first use, once per device, and kept here. The cache is never pickled.
"""

from __future__ import annotations

import copy

import numpy as np
import torch
from torch import nn

from skfm._backend import to_device, weights_dtype
from skfm._validation import probability_rows
from skfm.timeseries.mantis.head import head_from_state
from skfm.timeseries.mantis.loading import load_model
from skfm.timeseries.mantis.model import Mantis


class ModuleCache:
    """Modules rebuilt from a fitted classifier's numpy state, one per (kind, device)."""

    def __init__(self):
        self._modules: dict[tuple[str, str], nn.Module] = {}

    def backbone(self, checkpoint: str, state: dict | None, device: torch.device,
                 dtype: torch.dtype | None = None) -> Mantis:
        """The checkpoint's shared module, or a copy with the fine-tuned ``state`` or with its
        weights in float64 (``dtype`` float64, see :func:`~skfm._backend.weights_dtype`)."""
        model, _ = load_model(checkpoint, device)
        target = weights_dtype(dtype)
        if state is None and target is torch.float32:
            return model
        key = ("backbone", str(device), str(target))
        if key not in self._modules:
            tuned = copy.deepcopy(model)
            if state is not None:
                tuned.load_state_dict({k: torch.from_numpy(np.array(v)) for k, v in state.items()})
            self._modules[key] = tuned.to(target).eval()
        return self._modules[key]

    def head_proba(self, state: dict, features: np.ndarray, device: torch.device) -> np.ndarray:
        """Class probabilities (n, K) of the BatchNorm + Linear head of ``state`` on
        ``features`` (n, F): float64 rows that sum to 1."""
        key = ("head", str(device))
        if key not in self._modules:
            self._modules[key] = head_from_state(state).to(device)
        with torch.no_grad():
            logits = self._modules[key](to_device(features, device))
        return probability_rows(logits.double().softmax(-1).cpu().numpy())
