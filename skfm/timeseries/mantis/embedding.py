"""Mantis embeddings of a panel of series: per channel, in memory-bounded batches and chunks.

Every channel of every series (resized beforehand to a length the model takes)
is embedded on its own; a series' embedding is its channels' embeddings
concatenated, ``C * D'`` values with ``D' = D`` (``"cls"``, ``"mean"``) or
``2 D`` (``"combined"``).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import torch

from skfm._backend import (
    auto_batch_size,
    inference_context,
    output_numpy,
    run_in_batches,
    thread_invariant_attention,
    to_device,
)
from skfm.timeseries.mantis.model import Mantis, MantisConfig

#: Series resized and embedded together by transform/embed/predict: the resized copies of a
#: panel exist for one chunk at a time, so memory does not grow with the number of series.
CHUNK_SERIES = 4096


def embedding_width(config: MantisConfig, output_token: str) -> int:
    """Values per channel in an embedding: ``D'``."""
    return config.d_model * (2 if output_token == "combined" else 1)


def embed_panel(
    model: Mantis,
    X: np.ndarray,
    layer: int | None,
    output_token: str,
    device: torch.device,
    dtype: torch.dtype | None,
) -> np.ndarray:
    """Per-channel embeddings of ``X`` (n, C, L), concatenated: (n, C * D') float32 (float64
    from a module cast to float64, ``dtype`` float64).

    The same bits on any number of torch threads (attention by its math kernel on the CPU,
    :func:`~skfm._backend.thread_invariant_attention`).

    Examples
    --------
    >>> import numpy as np, torch
    >>> from skfm.timeseries.mantis.embedding import embed_panel
    >>> from skfm.timeseries.mantis.loading import load_model
    >>> model, _ = load_model("random:tiny", torch.device("cpu"))
    >>> X = np.zeros((3, 2, model.config.seq_len), np.float32)
    >>> embed_panel(model, X, None, "cls", torch.device("cpu"), None).shape
    (3, 32)
    """
    n, c, length = X.shape
    flat = X.reshape(n * c, length)  # (n * C, L): one row per channel
    width = embedding_width(model.config, output_token)
    bytes_per_row = 4 * length * model.config.d_model * 6
    batch = auto_batch_size(device, bytes_per_row, len(flat), max_batch=512)

    def run(start: int, stop: int) -> np.ndarray:  # rows start..stop -> (stop - start, D')
        with inference_context(device, dtype), thread_invariant_attention(device):
            z = model(to_device(flat[start:stop], device), layer=layer, output_token=output_token)
        return output_numpy(z)

    parts = run_in_batches(run, len(flat), batch, device=device)
    out = np.concatenate(parts) if parts else np.empty((0, width), np.float32)
    return out.reshape(n, c * width)


def in_chunks(panel, compute: Callable[[object], np.ndarray]) -> np.ndarray:
    """``compute`` over chunks of at most ``CHUNK_SERIES`` series, joined: (n, n_features)."""
    return np.concatenate([compute(panel[start:start + CHUNK_SERIES])
                           for start in range(0, len(panel), CHUNK_SERIES)])
