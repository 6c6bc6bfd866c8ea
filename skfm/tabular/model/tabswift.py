"""TabSwift: a row-wise in-context learner for tables, in plain torch.

One token per table row. Context rows carry their label; test rows attend to
learnable register tokens and to the context, never to each other, so a test
row's prediction does not depend on which other rows are predicted with it.
A prediction head shared by all layers can be read after any layer, which is
what makes the per-sample early exit possible.

Shapes use: ``B`` datasets in a batch, ``N`` context rows, ``M`` test rows,
``F`` padded features (``max_features``), ``R`` registers, ``D`` model width,
``H`` heads, ``E = D // H`` head width, ``C`` outputs (classes or buckets).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import torch
import torch.nn.functional as F
from torch import nn

CLASSIFICATION, REGRESSION = "classification", "regression"


@dataclass(frozen=True)
class TabSwiftConfig:
    """Architecture of a :class:`TabSwift` model (stored in checkpoint cards)."""

    max_features: int = 100
    max_classes: int = 10
    n_buckets: int = 64
    d_model: int = 128
    n_heads: int = 4
    n_layers: int = 6
    ffn_factor: int = 2
    n_registers: int = 8

    def to_dict(self) -> dict:
        return asdict(self)


def standardize_context(
    x: torch.Tensor, n_ctx: int, n_features: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """Z-score every feature with statistics of the context rows only.

    Parameters
    ----------
    x : Tensor of shape (B, N + M, F)
        Raw feature values, NaN for missing, zero in padded columns.
    n_ctx : int
        Number of leading context rows ``N``.
    n_features : Tensor of shape (B,)
        Number of real (unpadded) features per dataset.

    Returns
    -------
    values : Tensor of shape (B, N + M, F)
        Standardized, clipped to [-100, 100], missing set to 0, rescaled by
        ``F / n_features`` so that the encoder sees the same total signal
        whatever the number of features (TabPFN v1).
    missing : Tensor of shape (B, N + M, F)
        1.0 where the value was missing.
    """
    missing = torch.isnan(x)
    ctx = x[:, :n_ctx]
    ctx_present = (~missing[:, :n_ctx]).to(x.dtype)
    count = ctx_present.sum(1, keepdim=True).clamp_min(1.0)  # (B, 1, F)
    ctx_zeroed = torch.nan_to_num(ctx, nan=0.0)
    mean = ctx_zeroed.sum(1, keepdim=True) / count
    var = (((ctx_zeroed - mean) * ctx_present) ** 2).sum(1, keepdim=True) / count
    std = var.sqrt()
    std = torch.where(std > 1e-8, std, torch.ones_like(std))
    values = ((torch.nan_to_num(x, nan=0.0) - mean) / std).clamp(-100.0, 100.0)
    values = values.masked_fill(missing, 0.0)
    scale = x.shape[-1] / n_features.to(x.dtype).clamp_min(1.0)  # (B,)
    return values * scale[:, None, None], missing.to(x.dtype)


class GatedAttention(nn.Module):
    """Multi-head attention with a per-head sigmoid gate on its output.

    Queries come from every token; keys and values only from the first
    ``n_keys`` tokens (registers + context), passed in or cached.
    """

    def __init__(self, d_model: int, n_heads: int):
        super().__init__()
        self.n_heads = n_heads
        self.q = nn.Linear(d_model, d_model)
        self.kv = nn.Linear(d_model, 2 * d_model)
        self.gate = nn.Linear(d_model, n_heads)
        self.out = nn.Linear(d_model, d_model)
        nn.init.zeros_(self.out.weight)  # each block starts as the identity
        nn.init.zeros_(self.out.bias)
        nn.init.constant_(self.gate.bias, 1.0)  # gates start mostly open

    def _split(self, t: torch.Tensor) -> torch.Tensor:
        b, n, d = t.shape  # (B, T, D) -> (B, H, T, E)
        return t.view(b, n, self.n_heads, d // self.n_heads).transpose(1, 2)

    def keys_values(self, h_keys: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        k, v = self.kv(h_keys).chunk(2, dim=-1)  # 2 x (B, R + N, D)
        return self._split(k), self._split(v)  # 2 x (B, H, R + N, E)

    def forward(self, h: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        b, t, d = h.shape  # h: (B, T, D) normalised queries
        q = self._split(self.q(h))  # (B, H, T, E)
        a = F.scaled_dot_product_attention(q, k, v)  # (B, H, T, E)
        g = torch.sigmoid(self.gate(h)).transpose(1, 2).unsqueeze(-1)  # (B, H, T, 1)
        a = (a * g).transpose(1, 2).reshape(b, t, d)
        return self.out(a)


class Block(nn.Module):
    """Pre-norm transformer block with gated row attention and a GELU MLP."""

    def __init__(self, d_model: int, n_heads: int, ffn_factor: int):
        super().__init__()
        self.norm1 = nn.LayerNorm(d_model)
        self.attn = GatedAttention(d_model, n_heads)
        self.norm2 = nn.LayerNorm(d_model)
        self.ffn = nn.Sequential(
            nn.Linear(d_model, ffn_factor * d_model),
            nn.GELU(),
            nn.Linear(ffn_factor * d_model, d_model),
        )
        nn.init.zeros_(self.ffn[2].weight)
        nn.init.zeros_(self.ffn[2].bias)

    def keys_values(self, h_keys: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return self.attn.keys_values(self.norm1(h_keys))

    def forward(self, h: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        h = h + self.attn(self.norm1(h), k, v)
        return h + self.ffn(self.norm2(h))


class TabSwift(nn.Module):
    """Row-wise attention in-context learner with registers and exit heads.

    Parameters
    ----------
    config : TabSwiftConfig
        Architecture sizes.
    """

    def __init__(self, config: TabSwiftConfig):
        super().__init__()
        c = config
        self.config = c
        self.encoder = nn.Linear(2 * c.max_features, c.d_model)  # values and missing flags
        self.class_embedding = nn.Embedding(c.max_classes, c.d_model)
        self.target_encoder = nn.Linear(1, c.d_model)
        self.registers = nn.Parameter(torch.randn(c.n_registers, c.d_model) * 0.02)
        self.blocks = nn.ModuleList(
            Block(c.d_model, c.n_heads, c.ffn_factor) for _ in range(c.n_layers)
        )
        self.head_norm = nn.LayerNorm(c.d_model)
        self.heads = nn.ModuleDict(
            {
                CLASSIFICATION: self._mlp_head(c.d_model, c.max_classes),
                REGRESSION: self._mlp_head(c.d_model, c.n_buckets),
            }
        )

    @staticmethod
    def _mlp_head(d_model: int, n_out: int) -> nn.Sequential:
        return nn.Sequential(
            nn.Linear(d_model, 2 * d_model), nn.GELU(), nn.Linear(2 * d_model, n_out)
        )

    def embed(
        self,
        x: torch.Tensor,
        y_ctx: torch.Tensor,
        n_features: torch.Tensor,
        task: str,
    ) -> torch.Tensor:
        """Tokens for registers, context and test rows.

        Parameters
        ----------
        x : Tensor of shape (B, N + M, F)
            Raw features, context rows first; NaN for missing values.
        y_ctx : Tensor of shape (B, N)
            Context labels: class indices (classification) or targets
            already standardised with the context's mean and std (regression).
        n_features : Tensor of shape (B,)
            Real feature count per dataset.
        task : {"classification", "regression"}

        Returns
        -------
        Tensor of shape (B, R + N + M, D)
        """
        n_ctx = y_ctx.shape[1]
        x = x.to(self.encoder.weight.dtype)  # float32, or float64 in a module cast to it
        values, missing = standardize_context(x, n_ctx, n_features)
        h = self.encoder(torch.cat([values, missing], dim=-1))  # (B, N + M, D)
        if task == CLASSIFICATION:
            label = self.class_embedding(y_ctx.long())  # (B, N, D)
        else:
            label = self.target_encoder(y_ctx.unsqueeze(-1).to(h.dtype))
        h = torch.cat([h[:, :n_ctx] + label, h[:, n_ctx:]], dim=1)
        regs = self.registers.unsqueeze(0).expand(h.shape[0], -1, -1)  # (B, R, D)
        return torch.cat([regs, h], dim=1)

    def head(self, h_test: torch.Tensor, task: str) -> torch.Tensor:
        """Logits (B, M, C) from test-row states after any layer."""
        return self.heads[task](self.head_norm(h_test))

    def forward(
        self,
        x: torch.Tensor,
        y_ctx: torch.Tensor,
        n_features: torch.Tensor,
        task: str,
        all_layers: bool = False,
    ) -> torch.Tensor:
        """Predict logits for the test rows of each dataset.

        Returns
        -------
        Tensor of shape (B, M, C), or (L, B, M, C) with ``all_layers=True``
        (one prediction per layer, for deep supervision).
        """
        n_keys = self.config.n_registers + y_ctx.shape[1]
        h = self.embed(x, y_ctx, n_features, task)  # (B, R + N + M, D)
        outputs = []
        for block in self.blocks:
            k, v = block.keys_values(h[:, :n_keys])
            h = block(h, k, v)
            if all_layers:
                outputs.append(self.head(h[:, n_keys:], task))
        if all_layers:
            return torch.stack(outputs)
        return self.head(h[:, n_keys:], task)

    @torch.no_grad()
    def context_cache(
        self, x_ctx: torch.Tensor, y_ctx: torch.Tensor, n_features: torch.Tensor, task: str
    ) -> list[tuple[torch.Tensor, torch.Tensor]]:
        """Per-layer keys and values of registers + context, shape (B, H, R + N, E)."""
        h = self.embed(x_ctx, y_ctx, n_features, task)  # (B, R + N, D)
        cache = []
        for block in self.blocks:
            k, v = block.keys_values(h)
            cache.append((k, v))
            h = block(h, k, v)
        return cache

    @torch.no_grad()
    def predict_from_cache(
        self,
        x_test: torch.Tensor,
        stats_source: torch.Tensor,
        cache: list[tuple[torch.Tensor, torch.Tensor]],
        n_features: torch.Tensor,
        task: str,
        max_layers: int | None = None,
        exit_threshold: float | None = None,
        patience: int = 2,
        n_outputs: int | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Logits for test rows using the cached context, with optional early exit.

        Parameters
        ----------
        x_test : Tensor of shape (B, M, F)
        stats_source : Tensor of shape (B, N, F)
            The raw context features, used only for their normalisation
            statistics (the same ones ``context_cache`` used).
        cache : list of (k, v)
            From :meth:`context_cache`.
        max_layers : int, optional
            Stop after this many layers (anytime inference).
        exit_threshold : float, optional
            Agreement in (0, 1] a row needs to leave early: it leaves after
            the first layer whose predictive distribution (class or bucket
            probabilities) and those of the ``patience`` layers before it
            each moved by at most ``1 - exit_threshold`` in total variation
            from the previous layer. The decision is per row, so a row's
            output never depends on the other rows of the batch.
        patience : int, default=2
            Consecutive settled layers a row needs before it leaves; the
            earliest exit is after layer ``patience + 1``.
        n_outputs : int, optional
            Classes (or class groups) in use; the exit rule ignores the
            logits beyond them (training masks those outputs too).

        Returns
        -------
        logits : Tensor of shape (B, M, C)
        depth : Tensor of shape (B, M)
            Number of layers each row went through.
        """
        n_ctx = stats_source.shape[1]
        values, missing = standardize_context(  # in the weights' dtype, as in embed
            torch.cat([stats_source, x_test], dim=1).to(self.encoder.weight.dtype), n_ctx,
            n_features,
        )
        h = self.encoder(torch.cat([values, missing], dim=-1)[:, n_ctx:])  # (B, M, D)
        n_layers = len(self.blocks) if max_layers is None else min(max_layers, len(self.blocks))
        b, m, d = h.shape
        depth = torch.full((b, m), n_layers, dtype=torch.long, device=h.device)
        if exit_threshold is None:
            for layer in range(n_layers):
                h = self.blocks[layer](h, *cache[layer])
            return self.head(h, task), depth
        tolerance = 1.0 - exit_threshold
        logits = h.new_zeros(b, m, self.heads[task][-1].out_features)
        active = torch.ones(b, m, dtype=torch.bool, device=h.device)
        settled = torch.zeros(b, m, dtype=torch.long, device=h.device)  # settled layers in a row
        previous = None  # (B, M, C) probabilities after the previous layer
        for layer in range(n_layers):
            # Gather each dataset's active rows to the front; the batch shrinks to the largest
            # count. Padding slots point at rows that already left and are never read again.
            counts = active.sum(1)  # (B,)
            width = int(counts.max())
            if width == 0:
                break
            order = torch.argsort((~active).to(torch.int8), dim=1, stable=True)[:, :width]
            valid = torch.arange(width, device=h.device) < counts.unsqueeze(1)  # (B, W)
            index = order.unsqueeze(-1).expand(-1, -1, d)  # (B, W, D)
            h_active = self.blocks[layer](h.gather(1, index), *cache[layer])  # (B, W, D)
            h = h.scatter(1, index, h_active)
            out = self.head(h_active, task)  # (B, W, C)
            probs = out[..., :n_outputs].float().softmax(-1)  # (B, W, C')
            if previous is None:
                previous = probs.new_zeros(b, m, probs.shape[-1])
            else:
                moved = 0.5 * (probs - previous.gather(1, order.unsqueeze(-1).expand_as(probs)))
                calm = moved.abs().sum(-1) <= tolerance  # (B, W)
                settled.scatter_(1, order, torch.where(calm, settled.gather(1, order) + 1, 0))
            previous.scatter_(1, order.unsqueeze(-1).expand_as(probs), probs)
            leaving = valid & (settled.gather(1, order) >= patience)
            if layer + 1 == n_layers:
                leaving = valid
            slot_b, slot_w = leaving.nonzero(as_tuple=True)
            rows = order[slot_b, slot_w]
            logits[slot_b, rows] = out[slot_b, slot_w].to(logits.dtype)
            depth[slot_b, rows] = layer + 1
            active[slot_b, rows] = False
        return logits, depth


def count_parameters(model: nn.Module) -> int:
    """Number of trainable parameters."""
    return sum(p.numel() for p in model.parameters() if p.requires_grad)

