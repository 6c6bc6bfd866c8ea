"""Mantis: a token generator and a small ViT that embed one univariate series.

After Feofanov et al., "Mantis: Lightweight Calibrated Foundation Model for
User-Friendly Time Series Classification" (re-implemented, not vendored).
Per series: the instance-normalised values and their instance-normalised first
difference go through one convolution each and are mean-pooled inside ``P``
non-overlapping patches; the raw mean and standard deviation of every patch go
through multi-scale scalar encoders; the four parts are projected to one token
per patch. A learnable CLS token is prepended, sinusoidal positions added, and
``n_layers`` pre-norm transformer blocks follow. The output of any block can be
read as the CLS token, the mean of the patch tokens, or both concatenated.

Shapes use: ``B`` series in a batch, ``L`` series length (a multiple of ``P``),
``P`` patches (tokens), ``Q = L // P`` patch length, ``D`` model width, ``S``
scalar-encoder width, ``H`` heads, ``E`` head width, ``K`` encoder scales.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import torch
import torch.nn.functional as F
from torch import nn

OUTPUT_TOKENS = ("cls", "mean", "combined")


@dataclass(frozen=True)
class MantisConfig:
    """Architecture of a :class:`Mantis` model (stored in checkpoint cards)."""

    seq_len: int = 512
    n_patches: int = 32
    d_model: int = 128
    n_layers: int = 4
    n_heads: int = 4
    dim_head: int = 32
    mlp_dim: int = 256
    scalar_dim: int = 32
    n_scales: int = 9
    dropout: float = 0.1
    proj_dim: int = 128

    def __post_init__(self):
        if self.seq_len % self.n_patches:
            raise ValueError(
                f"seq_len={self.seq_len} must be a multiple of n_patches={self.n_patches}"
            )

    @property
    def kernel_size(self) -> int:
        """Odd convolution width, about one patch at ``seq_len``."""
        patch = self.seq_len // self.n_patches
        return patch + 1 if patch % 2 == 0 else patch

    def to_dict(self) -> dict:
        return asdict(self)


def instance_scale(x: torch.Tensor) -> torch.Tensor:
    """``(x - mean) / (std + 1e-5)`` over the last axis."""
    mean = x.mean(-1, keepdim=True)
    std = x.std(-1, keepdim=True, unbiased=False)
    return (x - mean) / (std + 1e-5)


class ScalarEncoder(nn.Module):
    """Embed scalars of any magnitude: a mixture of ``K`` per-scale affine + LayerNorm maps.

    Scale ``k`` (``10^-4 .. 10^4``) sees ``x / 10^k``; a scalar is encoded mostly by the
    scales nearest its order of magnitude (softmax over ``-|log10|x| - k|``).
    """

    def __init__(self, dim: int, n_scales: int):
        super().__init__()
        self.register_buffer(
            "log_scales", torch.linspace(-4.0, 4.0, n_scales), persistent=False
        )
        self.weight = nn.Parameter(torch.randn(n_scales, dim))
        self.bias = nn.Parameter(torch.randn(n_scales, dim) * 0.1)
        self.norm = nn.LayerNorm(dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:  # (B, P) -> (B, P, S)
        magnitude = torch.log10(x.abs() + 1e-8)[..., None]  # (B, P, 1)
        alpha = torch.softmax(-2.0 * (magnitude - self.log_scales).abs(), dim=-1)  # (B, P, K)
        scaled = x[..., None] / 10.0 ** self.log_scales  # (B, P, K)
        per_scale = self.norm(scaled[..., None] * self.weight + self.bias)  # (B, P, K, S)
        return (alpha[..., None] * per_scale).sum(-2)


class TokenGenerator(nn.Module):
    """One token per patch from a batch of univariate series."""

    def __init__(self, cfg: MantisConfig):
        super().__init__()
        self.n_patches = cfg.n_patches
        k = cfg.kernel_size
        self.conv_x = nn.Conv1d(1, cfg.d_model, k, padding=k // 2)
        self.conv_diff = nn.Conv1d(1, cfg.d_model, k, padding=k // 2)
        self.norm_x = nn.LayerNorm(cfg.d_model)
        self.norm_diff = nn.LayerNorm(cfg.d_model)
        self.enc_mean = ScalarEncoder(cfg.scalar_dim, cfg.n_scales)
        self.enc_std = ScalarEncoder(cfg.scalar_dim, cfg.n_scales)
        self.proj = nn.Linear(2 * cfg.d_model + 2 * cfg.scalar_dim, cfg.d_model)
        self.norm = nn.LayerNorm(cfg.d_model)

    def _conv_patches(self, x: torch.Tensor, conv: nn.Conv1d, norm: nn.LayerNorm) -> torch.Tensor:
        """``conv`` ('same' padding) + ``norm``, mean-pooled per patch; (B, L) -> (B, P, D).

        The convolution runs as a matrix product over unfolded windows so that its
        output is already (B, L, D) for the LayerNorm: the same numbers as
        ``conv(x[:, None]).transpose(1, 2)``, about twice as fast on a CPU
        (forward and backward), without the transposed copy.
        """
        b, length = x.shape
        width = conv.kernel_size[0]
        windows = F.pad(x, (width // 2, width // 2)).unfold(1, width, 1)  # (B, L, width)
        h = norm(F.linear(windows, conv.weight.view(len(conv.weight), width), conv.bias))
        return h.reshape(b, self.n_patches, length // self.n_patches, -1).mean(2)  # (B, P, D)

    def forward(self, x: torch.Tensor) -> torch.Tensor:  # (B, L) raw -> (B, P, D)
        b, length = x.shape
        diff = torch.diff(x, dim=-1, prepend=x[:, :1])  # (B, L), first entry 0
        h_x = self._conv_patches(instance_scale(x), self.conv_x, self.norm_x)
        h_diff = self._conv_patches(instance_scale(diff), self.conv_diff, self.norm_diff)
        patches = x.reshape(b, self.n_patches, length // self.n_patches)  # (B, P, Q)
        h_mean = self.enc_mean(patches.mean(-1))  # (B, P, S)
        h_std = self.enc_std(patches.std(-1, unbiased=False))  # (B, P, S)
        return self.norm(self.proj(torch.cat([h_diff, h_x, h_mean, h_std], dim=-1)))


class Block(nn.Module):
    """Pre-norm transformer block: multi-head self-attention, then a GELU MLP."""

    def __init__(self, cfg: MantisConfig):
        super().__init__()
        inner = cfg.n_heads * cfg.dim_head
        self.n_heads, self.dropout = cfg.n_heads, cfg.dropout
        self.norm1 = nn.LayerNorm(cfg.d_model)
        self.qkv = nn.Linear(cfg.d_model, 3 * inner, bias=False)
        self.out = nn.Linear(inner, cfg.d_model)
        self.norm2 = nn.LayerNorm(cfg.d_model)
        self.mlp = nn.Sequential(
            nn.Linear(cfg.d_model, cfg.mlp_dim), nn.GELU(), nn.Dropout(cfg.dropout),
            nn.Linear(cfg.mlp_dim, cfg.d_model), nn.Dropout(cfg.dropout),
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:  # (B, T, D) -> (B, T, D)
        b, t, _ = x.shape
        q, k, v = self.qkv(self.norm1(x)).view(b, t, 3, self.n_heads, -1).permute(2, 0, 3, 1, 4)
        drop = self.dropout if self.training else 0.0
        att = F.scaled_dot_product_attention(q, k, v, dropout_p=drop)  # (B, H, T, E)
        x = x + F.dropout(self.out(att.transpose(1, 2).reshape(b, t, -1)), drop, self.training)
        return x + self.mlp(self.norm2(x))


def sinusoidal_positions(n: int, dim: int) -> torch.Tensor:
    """Fixed sin/cos position codes; shape (n, dim)."""
    pos = torch.arange(n, dtype=torch.float32)[:, None]
    freq = torch.exp(torch.arange(0, dim, 2, dtype=torch.float32) * (-math.log(10000.0) / dim))
    out = torch.zeros(n, dim)
    out[:, 0::2] = torch.sin(pos * freq)
    out[:, 1::2] = torch.cos(pos * freq[: dim // 2])
    return out


class Mantis(nn.Module):
    """Embed univariate series: token generator + CLS token + transformer blocks.

    ``forward(x)`` takes raw series ``(B, L)`` with ``L`` any multiple of
    ``n_patches`` (``seq_len`` at pretraining) and returns ``(B, D)`` or, for
    ``output_token="combined"``, ``(B, 2D)``. ``project`` is the contrastive
    pretraining head (LayerNorm + Linear), unused at inference.
    """

    def __init__(self, cfg: MantisConfig):
        super().__init__()
        self.config = cfg
        self.tokens = TokenGenerator(cfg)
        self.cls = nn.Parameter(torch.randn(1, 1, cfg.d_model) * 0.02)
        self.register_buffer(
            "positions", sinusoidal_positions(cfg.n_patches + 1, cfg.d_model), persistent=False
        )
        self.blocks = nn.ModuleList(Block(cfg) for _ in range(cfg.n_layers))
        self.projector = nn.Sequential(nn.LayerNorm(cfg.d_model), nn.Linear(cfg.d_model, cfg.proj_dim))

    def resolve_layer(self, layer: int | None) -> int:
        """Blocks to run for ``layer`` (1..n_layers, negative counts from the end, None = all)."""
        n = self.config.n_layers
        if layer is None:
            return n
        depth = n + 1 + layer if layer < 0 else layer
        if not 1 <= depth <= n:
            raise ValueError(f"layer must be in [1, {n}] or [-{n}, -1] (or None), got {layer}")
        return depth

    def hidden(self, x: torch.Tensor, layer: int | None = None) -> torch.Tensor:
        """Token states after ``layer`` blocks; (B, L) -> (B, 1 + P, D), CLS first."""
        if x.shape[-1] % self.config.n_patches:
            raise ValueError(
                f"series length {x.shape[-1]} is not a multiple of n_patches={self.config.n_patches}"
            )
        h = self.tokens(x.to(self.cls.dtype))  # (B, P, D); float64 in a module cast to it
        h = torch.cat([self.cls.expand(len(h), -1, -1), h], dim=1) + self.positions
        for block in self.blocks[: self.resolve_layer(layer)]:
            h = block(h)
        return h

    def forward(
        self, x: torch.Tensor, layer: int | None = None, output_token: str = "combined"
    ) -> torch.Tensor:  # (B, L) -> (B, D) or (B, 2D)
        h = self.hidden(x, layer)
        if output_token == "cls":
            return h[:, 0]
        if output_token == "mean":
            return h[:, 1:].mean(1)
        if output_token == "combined":
            return torch.cat([h[:, 0], h[:, 1:].mean(1)], dim=-1)
        raise ValueError(f"output_token must be one of {OUTPUT_TOKENS}, got {output_token!r}")

    def project(self, x: torch.Tensor) -> torch.Tensor:
        """Contrastive head on the last-layer CLS token; (B, L) -> (B, proj_dim)."""
        return self.projector(self.hidden(x)[:, 0])


def resize(x: torch.Tensor, length: int) -> torch.Tensor:
    """Linear interpolation of the last axis to ``length``; (..., T) -> (..., length)."""
    if x.shape[-1] == length:
        return x
    shape = x.shape
    out = F.interpolate(x.reshape(-1, 1, shape[-1]), size=length, mode="linear", align_corners=False)
    return out.reshape(*shape[:-1], length)
