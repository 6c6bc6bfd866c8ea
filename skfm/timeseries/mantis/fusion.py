"""Fusion features of the Mantis classifier: a second embedding beside Mantis's own.

``fusion="minirocket"``: sktime's MiniRocket on the series resized to the
model length (fitted on the training series); any other string: the
embedding of another checkpoint, read at that checkpoint's default layer.
"""

from __future__ import annotations

import numpy as np
import torch

from skfm.timeseries._panel import resize_panel
from skfm.timeseries.mantis.embedding import embed_panel
from skfm.timeseries.mantis.loading import load_model


def fit_minirocket(resized: np.ndarray, seed: int):
    """MiniRocket (sktime; imported here, needs numba) fitted on ``resized`` (n, C, L)."""
    from sktime.transformations.panel.rocket import MiniRocketMultivariate

    return MiniRocketMultivariate(random_state=seed, n_jobs=1).fit(resized)


def minirocket_features(transformer, resized: np.ndarray) -> np.ndarray:
    """MiniRocket features of ``resized`` (n, C, L): (n, n_kernels) float32."""
    return np.asarray(transformer.transform(resized), dtype=np.float32)


def checkpoint_features(checkpoint: str, panel, device: torch.device,
                        dtype: torch.dtype | None) -> np.ndarray:
    """Embeddings by another checkpoint, at its length and default layer: (n, C * 2 D)."""
    other, card = load_model(checkpoint, device)
    return embed_panel(other, resize_panel(panel, other.config.seq_len),
                       card.get("default_layer"), "combined", device, dtype)
