"""Time-PEFT adapters on a frozen backbone, and the forecasting network they form.

After Na et al., "Time-PEFT" (ICML 2026; official code kaist-dmlab/TimePEFT,
re-implemented, not vendored):

* :class:`LoRALinear` — ``W x + (alpha / r) B A x`` on the attention ``q``,
  ``k``, ``v`` projections; ``B`` starts at zero.
* :class:`FrequencyAdapter` — rFFT of the patch embeddings along the patch
  axis, keep the ``top_k`` largest-magnitude bins of every (channel, feature)
  row, irFFT, then ``Linear(D -> D)``.
* :class:`ChannelAdapter` — ``concat(E, frequency(E))`` through a shared
  ``Linear(2D -> D/2)``, ReLU, dropout, a per-channel ``Linear(D/2 -> D)``,
  and a LayerNorm.
* :class:`ForecastNet` — RevIN, patches, backbone (LoRA inside), optional
  adapters, and a linear head ``Linear(N * D -> H)`` shared by the channels;
  with a frozen affine *base* of the raw window (:mod:`.base`), the head is a
  zero-initialised correction added to it, so that the untrained network
  forecasts the base.

Two forms of the adapters (``form``):

``"paper"``
    The official code: the channel adapter's output *replaces* the backbone
    embeddings, ``E' = LN(up_c(drop(relu(down([E, F(E)])))))``.
``"residual"``
    Zero-initialised residual: ``E' = E + up_c(drop(relu(down(LN([E, F(E)])))))``
    with ``up_c`` starting at zero, so that training starts from the
    backbone's own embeddings (the stability fix suggested by the independent
    reproduction PCS5022).

Shapes use ``B`` samples, ``C`` channels, ``L`` context length, ``N = L / P``
patches, ``D`` model width, ``H`` horizon, ``r`` LoRA rank.
"""

from __future__ import annotations

import math

import torch
from torch import nn

from skfm.timeseries.forecasting.backbone import (
    TimeSeriesBackbone,
    revin_denormalise,
    revin_normalise,
)

FORMS = ("paper", "residual")


class LoRALinear(nn.Module):
    """A frozen ``nn.Linear`` plus a trainable low-rank update ``(alpha / r) B A``.

    Parameters
    ----------
    base : nn.Linear
        The wrapped projection (its weights are left as they are).
    rank : int
    alpha : float

    Examples
    --------
    >>> import torch
    >>> layer = LoRALinear(torch.nn.Linear(4, 4), rank=2, alpha=4.0)
    >>> x = torch.randn(3, 4)
    >>> bool(torch.equal(layer(x), layer.base(x)))  # B = 0 at the start
    True
    """

    def __init__(self, base: nn.Linear, rank: int, alpha: float):
        super().__init__()
        self.base = base
        self.lora_a = nn.Parameter(torch.empty(rank, base.in_features))
        self.lora_b = nn.Parameter(torch.zeros(base.out_features, rank))
        nn.init.kaiming_uniform_(self.lora_a, a=math.sqrt(5))
        self.scaling = alpha / rank

    def forward(self, x: torch.Tensor) -> torch.Tensor:  # (..., in) -> (..., out)
        return self.base(x) + (x @ self.lora_a.T @ self.lora_b.T) * self.scaling


def add_lora(backbone: TimeSeriesBackbone, rank: int, alpha: float) -> None:
    """Wrap the ``q``, ``k``, ``v`` projections of every block in :class:`LoRALinear`."""
    for block in backbone.blocks:
        for name in ("q", "k", "v"):
            setattr(block.attn, name, LoRALinear(getattr(block.attn, name), rank, alpha))


class FrequencyAdapter(nn.Module):
    """Top-k filtering along the patch axis, then ``Linear(D -> D)``.

    Parameters
    ----------
    d_model : int
    top_k : int
        Frequency bins kept per (sample, channel, feature) row.
    """

    def __init__(self, d_model: int, top_k: int):
        super().__init__()
        self.top_k = top_k
        self.proj = nn.Linear(d_model, d_model)

    def forward(self, e: torch.Tensor) -> torch.Tensor:  # (B, C, N, D) -> (B, C, N, D)
        n = e.shape[2]
        spectrum = torch.fft.rfft(e.float(), dim=2)  # (B, C, N//2+1, D) complex
        k = min(self.top_k, spectrum.shape[2])
        keep = spectrum.abs().topk(k, dim=2).indices  # (B, C, k, D)
        mask = torch.zeros_like(spectrum.real, dtype=torch.bool).scatter_(2, keep, True)
        filtered = torch.fft.irfft(spectrum * mask, n=n, dim=2).to(e.dtype)  # (B, C, N, D)
        return self.proj(filtered)


class ChannelAdapter(nn.Module):
    """Shared down-projection, per-channel up-projection, norm; ``form`` as in the module doc.

    Parameters
    ----------
    d_model : int
    n_channels : int
    form : {"paper", "residual"}
    dropout : float, default=0.1
    """

    def __init__(self, d_model: int, n_channels: int, form: str, dropout: float = 0.1):
        super().__init__()
        hidden = max(1, d_model // 2)
        self.form = form
        self.norm = nn.LayerNorm(d_model if form == "paper" else 2 * d_model)
        self.down = nn.Linear(2 * d_model, hidden)
        self.drop = nn.Dropout(dropout)
        self.up_weight = nn.Parameter(torch.empty(n_channels, hidden, d_model))
        self.up_bias = nn.Parameter(torch.zeros(n_channels, d_model))
        if form == "residual":
            nn.init.zeros_(self.up_weight)
        else:  # nn.Linear's default initialisation, one per channel
            bound = 1 / math.sqrt(hidden)
            nn.init.uniform_(self.up_weight, -bound, bound)
            nn.init.uniform_(self.up_bias, -bound, bound)

    def forward(self, e: torch.Tensor, f: torch.Tensor) -> torch.Tensor:
        """Backbone embeddings ``e`` and frequency features ``f``: (B, C, N, D) -> (B, C, N, D)."""
        both = torch.cat([e, f], dim=-1)  # (B, C, N, 2D)
        if self.form == "residual":
            both = self.norm(both)
        h = self.drop(torch.relu(self.down(both)))  # (B, C, N, D/2)
        up = torch.einsum("bcnh,chd->bcnd", h, self.up_weight) + self.up_bias[:, None]
        return e + up if self.form == "residual" else self.norm(up)


class ForecastNet(nn.Module):
    """RevIN -> patches -> backbone -> [frequency + channel adapters] -> linear head -> RevIN⁻¹.

    Parameters
    ----------
    backbone : TimeSeriesBackbone
        With LoRA already added where wanted (:func:`add_lora`).
    context_length : int
        ``L``, a multiple of the backbone's patch length.
    horizon : int
        ``H``, steps forecast.
    n_channels : int
    adapters : bool
        Use the frequency and channel adapters.
    form : {"paper", "residual"}, default="residual"
    top_k : int, default=3
    dropout : float, default=0.1
        Dropout of the channel adapter and the head.
    revin : bool, default=True
        Normalise every input window by its own mean and standard deviation
        (RevIN). False: by ``series_loc`` and ``series_scale`` instead.
    series_loc, series_scale : array-like of shape (n_channels,), optional
        Per-channel statistics used when ``revin=False`` (default 0 and 1).
    base_weights, base_intercept : array-like of shape (L, H) and (C, H), optional
        A frozen affine forecast of the raw window, ``x @ base_weights +
        base_intercept``, to which the head's output is added (in normalised
        units); the head then starts at zero. None: the head alone.

    Examples
    --------
    >>> import torch
    >>> from skfm.timeseries.forecasting.backbone import BackboneConfig
    >>> backbone = TimeSeriesBackbone(BackboneConfig(d_model=16, n_heads=2, n_layers=1, ffn_dim=32))
    >>> net = ForecastNet(backbone, context_length=32, horizon=5, n_channels=3, adapters=True)
    >>> net(torch.randn(2, 3, 32)).shape
    torch.Size([2, 3, 5])
    """

    def __init__(
        self,
        backbone: TimeSeriesBackbone,
        context_length: int,
        horizon: int,
        n_channels: int,
        adapters: bool,
        form: str = "residual",
        top_k: int = 3,
        dropout: float = 0.1,
        revin: bool = True,
        series_loc=None,
        series_scale=None,
        base_weights=None,
        base_intercept=None,
    ):
        super().__init__()
        self.revin = revin
        loc = torch.zeros(n_channels) if series_loc is None else torch.as_tensor(series_loc)
        scale = torch.ones(n_channels) if series_scale is None else torch.as_tensor(series_scale)
        self.register_buffer("series_loc", loc.float().reshape(n_channels, 1))  # (C, 1)
        self.register_buffer("series_scale", scale.float().reshape(n_channels, 1))
        d = backbone.config.d_model
        n_patches = context_length // backbone.config.patch_len
        self.backbone = backbone
        self.frequency = FrequencyAdapter(d, top_k) if adapters else None
        self.channel = ChannelAdapter(d, n_channels, form, dropout) if adapters else None
        self.head = nn.Sequential(nn.Flatten(-2), nn.Dropout(dropout), nn.Linear(n_patches * d, horizon))
        self.register_buffer("base_weights", None if base_weights is None
                             else torch.as_tensor(base_weights).float())  # (L, H)
        self.register_buffer("base_intercept", None if base_intercept is None
                             else torch.as_tensor(base_intercept).float())  # (C, H)
        if base_weights is not None:
            nn.init.zeros_(self.head[-1].weight)
            nn.init.zeros_(self.head[-1].bias)

    def normalise(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """``(z, loc, scale)`` with ``x = loc + scale * z``: RevIN's or the series' statistics."""
        if self.revin:
            return revin_normalise(x)
        return (x - self.series_loc) / self.series_scale, self.series_loc, self.series_scale

    def normalised_forecast(
        self, x: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """The head's output (B, C, H) in normalised units, with the ``loc``, ``scale`` of ``x``."""
        b, c, _ = x.shape
        z, loc, scale = self.normalise(x)
        patches = self.backbone.patchify(z.flatten(0, 1))  # (B*C, N, P)
        e = self.backbone.encode(patches).unflatten(0, (b, c))  # (B, C, N, D)
        if self.channel is not None:
            e = self.channel(e, self.frequency(e))
        out = self.head(e)
        if self.base_weights is not None:
            out = out + (x @ self.base_weights + self.base_intercept - loc) / scale
        return out, loc, scale

    def forward(self, x: torch.Tensor) -> torch.Tensor:  # (B, C, L) -> (B, C, H)
        return revin_denormalise(*self.normalised_forecast(x))
