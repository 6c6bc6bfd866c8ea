"""A small MOMENT-like forecasting backbone: RevIN, patches, a transformer encoder.

After Goswami et al., "MOMENT: A Family of Open Time-series Foundation Models"
(re-implemented small, not vendored). Every channel is a separate series:

1. **RevIN** (reversible instance normalisation, not affine): each series is
   standardised by its own mean and standard deviation; forecasts are mapped
   back with the same statistics.
2. **Patches**: the series is cut into ``N = L / P`` non-overlapping patches of
   ``P`` values, each embedded by ``Linear(P -> D)``; a learnable position
   embedding is added. Masked patches (pretraining) are replaced by a learnable
   ``[MASK]`` embedding.
3. **Encoder**: ``n_layers`` pre-norm transformer blocks (separate ``q``, ``k``,
   ``v``, ``o`` projections, so that LoRA can wrap each) and a final LayerNorm.
4. **Reconstruction head** ``Linear(D -> P)``: pretraining reconstructs the
   masked patches of the normalised series (MSE on masked patches only).

Shapes use ``B`` series, ``L`` series length (a multiple of ``P``), ``N``
patches, ``P`` patch length, ``D`` model width.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import torch
import torch.nn.functional as F
from torch import nn

EPS = 1e-5


@dataclass(frozen=True)
class BackboneConfig:
    """Architecture of a :class:`TimeSeriesBackbone` (stored in checkpoint cards).

    Attributes
    ----------
    patch_len : int
        Values per patch ``P``.
    max_patches : int
        Longest input in patches (the longest context is ``patch_len * max_patches``).
    d_model : int
    n_heads : int
    n_layers : int
    ffn_dim : int
        Hidden width of the blocks' MLP.
    """

    patch_len: int = 8
    max_patches: int = 64
    d_model: int = 64
    n_heads: int = 4
    n_layers: int = 4
    ffn_dim: int = 256

    def __post_init__(self):
        if self.d_model % self.n_heads:
            raise ValueError(f"d_model={self.d_model} must be a multiple of n_heads={self.n_heads}")

    @property
    def max_context(self) -> int:
        """Longest input series, ``patch_len * max_patches``."""
        return self.patch_len * self.max_patches

    def to_dict(self) -> dict:
        return asdict(self)


def revin_normalise(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Standardise every series over its last axis: ``(x - loc) / scale``.

    Returns ``(z, loc, scale)`` with ``loc``, ``scale`` of shape ``x.shape[:-1] + (1,)``.
    """
    loc = x.mean(-1, keepdim=True)
    scale = x.var(-1, keepdim=True, unbiased=False).add(EPS).sqrt()
    return (x - loc) / scale, loc, scale


def revin_denormalise(z: torch.Tensor, loc: torch.Tensor, scale: torch.Tensor) -> torch.Tensor:
    """Inverse of :func:`revin_normalise` with the input's statistics."""
    return z * scale + loc


class Attention(nn.Module):
    """Multi-head self-attention with separate ``q``, ``k``, ``v``, ``o`` projections."""

    def __init__(self, d_model: int, n_heads: int):
        super().__init__()
        self.n_heads = n_heads
        self.q = nn.Linear(d_model, d_model)
        self.k = nn.Linear(d_model, d_model)
        self.v = nn.Linear(d_model, d_model)
        self.o = nn.Linear(d_model, d_model)

    def forward(self, x: torch.Tensor) -> torch.Tensor:  # (B, N, D) -> (B, N, D)
        b, n, d = x.shape

        def heads(t: torch.Tensor) -> torch.Tensor:  # (B, N, D) -> (B, H, N, D/H)
            return t.view(b, n, self.n_heads, d // self.n_heads).transpose(1, 2)

        out = F.scaled_dot_product_attention(heads(self.q(x)), heads(self.k(x)), heads(self.v(x)))
        return self.o(out.transpose(1, 2).reshape(b, n, d))


class Block(nn.Module):
    """Pre-norm transformer block: ``x + attn(LN(x))``, then ``x + MLP(LN(x))``."""

    def __init__(self, d_model: int, n_heads: int, ffn_dim: int):
        super().__init__()
        self.norm1 = nn.LayerNorm(d_model)
        self.attn = Attention(d_model, n_heads)
        self.norm2 = nn.LayerNorm(d_model)
        self.mlp = nn.Sequential(nn.Linear(d_model, ffn_dim), nn.GELU(), nn.Linear(ffn_dim, d_model))

    def forward(self, x: torch.Tensor) -> torch.Tensor:  # (B, N, D) -> (B, N, D)
        x = x + self.attn(self.norm1(x))
        return x + self.mlp(self.norm2(x))


class TimeSeriesBackbone(nn.Module):
    """Patch transformer encoder of normalised univariate series, with a reconstruction head.

    Parameters
    ----------
    config : BackboneConfig

    Examples
    --------
    >>> import torch
    >>> net = TimeSeriesBackbone(BackboneConfig(d_model=16, n_heads=2, n_layers=1, ffn_dim=32))
    >>> z, loc, scale = revin_normalise(torch.randn(3, 96))
    >>> net.encode(net.patchify(z)).shape  # 96 / 8 = 12 patches
    torch.Size([3, 12, 16])
    """

    def __init__(self, config: BackboneConfig):
        super().__init__()
        self.config = config
        d = config.d_model
        self.patch_embed = nn.Linear(config.patch_len, d)
        self.position = nn.Parameter(torch.randn(config.max_patches, d) * 0.02)
        self.mask_token = nn.Parameter(torch.zeros(d))
        self.blocks = nn.ModuleList(
            Block(d, config.n_heads, config.ffn_dim) for _ in range(config.n_layers)
        )
        self.norm = nn.LayerNorm(d)
        self.reconstruction = nn.Linear(d, config.patch_len)

    def patchify(self, z: torch.Tensor) -> torch.Tensor:  # (B, L) -> (B, N, P)
        length, p = z.shape[-1], self.config.patch_len
        if length % p or length // p > self.config.max_patches:
            raise ValueError(
                f"series length {length} must be a multiple of patch_len={p} and at most "
                f"{self.config.max_context}"
            )
        return z.unflatten(-1, (length // p, p))

    def encode(self, patches: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        """Patch embeddings after the encoder: (B, N, P) [, mask (B, N) bool] -> (B, N, D)."""
        h = self.patch_embed(patches)  # (B, N, D)
        if mask is not None:
            h = torch.where(mask[..., None], self.mask_token.to(h.dtype), h)
        h = h + self.position[: h.shape[1]]
        for block in self.blocks:
            h = block(h)
        return self.norm(h)

    def reconstruct(self, patches: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """Reconstructed patches: (B, N, P), mask (B, N) -> (B, N, P)."""
        return self.reconstruction(self.encode(patches, mask))


def masked_reconstruction_loss(
    model: TimeSeriesBackbone, x: torch.Tensor, mask_ratio: float, generator: torch.Generator
) -> torch.Tensor:
    """MSE on randomly masked patches of the RevIN-normalised series ``x`` (B, L).

    Every series gets ``round(mask_ratio * N)`` masked patches (at least one).
    """
    patches = model.patchify(revin_normalise(x)[0])  # (B, N, P)
    b, n, _ = patches.shape
    n_masked = max(1, round(mask_ratio * n))
    order = torch.rand(b, n, generator=generator).argsort(1).to(x.device)
    mask = order < n_masked  # (B, N), exactly n_masked True per row
    error = (model.reconstruct(patches, mask) - patches).pow(2).mean(-1)  # (B, N)
    return error[mask].mean()
