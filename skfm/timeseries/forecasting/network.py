"""The forecasting network of one Time-PEFT configuration, and its trained weights.

:func:`build_net` assembles a :class:`~.adapters.ForecastNet` from a backbone
checkpoint: the backbone frozen (unless ``adapter="full"``), LoRA on its
attention (``"timepeft"``, ``"lora"``), the adapters (``"timepeft"``), the
head and the frozen affine base it corrects, initialised from a seed. A fitted forecaster keeps only the trained
weights as numpy arrays (:func:`trainable_state`) and rebuilds the network
from the same seed with them (:func:`load_state`).
"""

from __future__ import annotations

import numpy as np
import torch

from skfm._backend import seeded
from skfm.timeseries.forecasting.adapters import ForecastNet, add_lora
from skfm.timeseries.forecasting.loading import load_backbone

#: What is trained: see ``TimePEFTForecaster``'s ``adapter``.
ADAPTERS = ("timepeft", "lora", "linear_probe", "full")


def build_net(
    checkpoint: str,
    seed: int,
    *,
    adapter: str,
    adapter_form: str,
    context_length: int,
    horizon: int,
    n_channels: int,
    top_k: int,
    lora_rank: int,
    lora_alpha: float,
    revin: bool,
    series_loc: np.ndarray,
    series_scale: np.ndarray,
    base_weights: np.ndarray | None = None,
    base_intercept: np.ndarray | None = None,
) -> ForecastNet:
    """The network of a configuration at its seeded initialisation (before training).

    Parameters
    ----------
    checkpoint : str
        The backbone (see :func:`~.loading.load_backbone`).
    seed : int
        Seeds the initialisation of LoRA, the adapters and the head.
    adapter, adapter_form, context_length, horizon, top_k, lora_rank, lora_alpha, revin
        As in ``TimePEFTForecaster``.
    n_channels : int
    series_loc, series_scale : ndarray of shape (n_channels,)
        Per-channel standardisation used when ``revin`` is False.
    base_weights, base_intercept : ndarray of shape (context_length, horizon) and (n_channels, horizon)
        The frozen affine base of the raw window the head corrects (:mod:`.base`); None: no base.

    Returns
    -------
    ForecastNet
        Maps (B, n_channels, context_length) to (B, n_channels, horizon); only
        the weights that ``adapter`` trains require gradients.

    Examples
    --------
    >>> import numpy as np, torch
    >>> from skfm.timeseries.forecasting.network import build_net
    >>> net = build_net("random:tiny", 0, adapter="lora", adapter_form="residual",
    ...                 context_length=16, horizon=4, n_channels=2, top_k=3, lora_rank=2,
    ...                 lora_alpha=4.0, revin=True, series_loc=np.zeros(2),
    ...                 series_scale=np.ones(2))
    >>> net(torch.randn(5, 2, 16)).shape
    torch.Size([5, 2, 4])
    """
    backbone = load_backbone(checkpoint)
    with seeded(seed):
        if adapter != "full":
            backbone.requires_grad_(False)
        if adapter in ("timepeft", "lora"):
            add_lora(backbone, lora_rank, float(lora_alpha))
        return ForecastNet(
            backbone, context_length, horizon, n_channels,
            adapters=adapter == "timepeft", form=adapter_form, top_k=top_k,
            revin=bool(revin), series_loc=series_loc, series_scale=series_scale,
            base_weights=base_weights, base_intercept=base_intercept,
        )


def trainable_state(net: ForecastNet) -> dict[str, np.ndarray]:
    """The weights that train (adapters, LoRA, head; all for ``"full"``) as numpy arrays."""
    return {k: v.detach().cpu().numpy() for k, v in net.named_parameters() if v.requires_grad}


def load_state(net: ForecastNet, state: dict[str, np.ndarray]) -> ForecastNet:
    """``net`` with the weights of ``state`` (from :func:`trainable_state`); the rest kept."""
    net.load_state_dict({k: torch.from_numpy(np.array(v)) for k, v in state.items()},
                        strict=False)
    return net


def n_backbone_params(net: ForecastNet) -> int:
    """Parameters of the backbone itself (LoRA's excluded)."""
    return int(sum(p.numel() for n, p in net.backbone.named_parameters() if "lora_" not in n))
