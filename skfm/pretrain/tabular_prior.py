"""Synthetic prior over tabular datasets for pretraining TabSwift.

Every dataset comes from a random structural causal model (TabPFN v1 style):
random "cause" columns go through a random sparse MLP whose layers mix
activations (smooth, piecewise-linear, periodic and step-like, the last one
giving tree-like effects) and inject Gaussian noise; features and the target
are read off random nodes of that network. A share ``p_tree`` of the datasets
use random tree ensembles on the causes instead of the MLP's first layer (a
tree-based SCM, as in TabICL's prior: thresholds and interactions on a few
features), and a share
``p_gp`` take their target from a Gaussian-process draw over the causes
(random Fourier features of an RBF kernel, as TabPFN v1 mixes in a little GP). Columns are then made categorical,
warped or partly missing at random, and the target is cut into 2-10 classes at
random quantiles or kept continuous for regression.

All datasets of a batch share the row count; everything else (feature count,
weights, activations, noise, classes) is drawn per dataset, vectorised with
batched matrix products.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

ACTIVATIONS = (
    torch.tanh,
    torch.relu,
    lambda t: t,
    torch.sin,
    torch.abs,
    lambda t: (t > 0).to(t.dtype),  # step: tree-like splits
    torch.nn.functional.softplus,
    lambda t: t * t,
)


@dataclass(frozen=True)
class PriorConfig:
    """Ranges of the synthetic prior (stored in checkpoint cards).

    ``row_sampling`` draws a batch's row count uniformly (``"uniform"``) or
    log-uniformly (``"log_uniform"``: small datasets as often as large ones on
    a log scale) in ``[min_rows, max_rows]``. ``target_noise`` > 0 adds
    observation noise to every dataset's continuous target before classes are
    cut: Gaussian, with a standard deviation drawn uniformly in
    ``[0, target_noise]`` per dataset (the target has unit variance).
    ``p_linear`` is the share of datasets whose target is the linear effect
    alone (before that noise); the others mix it with a network node in a
    random proportion. ``p_tree`` is the share of datasets whose every layer is
    a sum of 1 to ``max_trees`` random decision trees per node (depth 1 to
    ``max_tree_depth``, one depth per batch) instead of an MLP layer; ``p_gp``
    the share whose target is a Gaussian-process draw over the causes. With
    both at 0 the prior draws exactly the batches it drew before they existed.
    """

    max_features: int = 100
    max_classes: int = 10
    min_rows: int = 64
    max_rows: int = 512
    max_layers: int = 4
    min_width: int = 16
    max_width: int = 64
    p_categorical: float = 0.3
    p_missing: float = 0.2
    p_warp: float = 0.2
    row_sampling: str = "uniform"
    target_noise: float = 0.0
    p_linear: float = 0.0
    p_tree: float = 0.0
    max_tree_depth: int = 5
    max_trees: int = 3
    p_gp: float = 0.0

    def __post_init__(self):
        if self.row_sampling not in ("uniform", "log_uniform"):
            raise ValueError(f"row_sampling must be 'uniform' or 'log_uniform', "
                             f"got {self.row_sampling!r}")
        if self.target_noise < 0:
            raise ValueError(f"target_noise must be >= 0, got {self.target_noise}")
        for name in ("p_linear", "p_tree", "p_gp"):
            if not 0 <= getattr(self, name) <= 1:
                raise ValueError(f"{name} must be in [0, 1], got {getattr(self, name)}")
        if self.max_tree_depth < 1 or self.max_trees < 1:
            raise ValueError(f"max_tree_depth and max_trees must be >= 1, got "
                             f"{self.max_tree_depth} and {self.max_trees}")


@dataclass
class PriorBatch:
    """A batch of synthetic datasets, context rows first.

    Attributes
    ----------
    x : Tensor of shape (B, N + M, F)
        Features (NaN = missing, zero in padded columns).
    y : Tensor of shape (B, N + M)
        Class index (classification) or raw continuous target (regression).
    n_features : Tensor of shape (B,)
    n_classes : Tensor of shape (B,)
        Number of classes (all ones for regression).
    n_ctx : int
        Number of context rows ``N``.
    task : str
    """

    x: torch.Tensor
    y: torch.Tensor
    n_features: torch.Tensor
    n_classes: torch.Tensor
    n_ctx: int
    task: str


def _log_uniform_int(low: int, high: int, size: int, g: torch.Generator) -> torch.Tensor:
    u = torch.rand(size, generator=g)
    return torch.exp(math.log(low) + u * (math.log(high + 1) - math.log(low))).long().clamp(
        low, high
    )


def _activate(z: torch.Tensor, g: torch.Generator) -> torch.Tensor:
    """Apply one random activation per dataset to z of shape (B, n, W)."""
    act_idx = torch.randint(len(ACTIVATIONS), (z.shape[0],), generator=g)
    out = torch.empty_like(z)
    for i, act in enumerate(ACTIVATIONS):
        sel = act_idx == i
        if sel.any():
            out[sel] = act(z[sel])
    return out


def _standardize_rows(t: torch.Tensor) -> torch.Tensor:
    return (t - t.mean(1, keepdim=True)) / (t.std(1, keepdim=True) + 1e-6)


def _tree_layer(
    h: torch.Tensor, width: int, depth: int, n_trees: int, split_weight: torch.Tensor, g: torch.Generator
) -> torch.Tensor:
    """``width`` nodes (B, n, width), each the sum of ``n_trees`` random decision trees over h.

    Every internal node of a complete tree of ``depth`` levels splits on an
    input column drawn with probability ``split_weight`` (B, in) at the value
    of a random row of that column, so thresholds follow the data; leaves hold
    standard normal values. Rows are routed one dataset at a time, which keeps
    the (n, trees) working set small enough to stay in the CPU cache.
    """
    b, n, n_in = h.shape
    n_split, n_leaf, k = 2**depth - 1, 2**depth, width * n_trees
    column = torch.multinomial(split_weight, k * n_split, replacement=True, generator=g)  # (B, k*splits)
    row = torch.randint(n, (b, k * n_split), generator=g)
    threshold = h.reshape(b, n * n_in).gather(1, row * n_in + column)  # (B, k*splits)
    leaf_value = torch.randn(b, k * n_leaf, generator=g)
    first = torch.arange(k).view(1, k)  # tree j's splits start at j * n_split, its leaves at j * n_leaf
    out = torch.empty(b, n, k)
    for i in range(b):
        node = torch.zeros(n, k, dtype=torch.long)  # (n, k): the split each row has reached per tree
        for _ in range(depth):
            at = first * n_split + node
            node = 2 * node + 1 + (h[i].gather(1, column[i][at]) > threshold[i][at])
        out[i] = leaf_value[i][first * n_leaf + node - n_split]
    return out.view(b, n, width, n_trees).sum(-1)


def _gp_draw(x: torch.Tensor, n_real: torch.Tensor, g: torch.Generator, n_basis: int = 256) -> torch.Tensor:
    """A draw (B, n) of a GP with an RBF kernel over x (B, n, F), by random Fourier features.

    Length scales are log-uniform in [0.3, 3] times the square root of the
    dataset's feature count, so that smooth and wiggly functions both occur.
    """
    b, _, f = x.shape
    log_scale = torch.empty(b, 1, 1).uniform_(math.log(0.3), math.log(3.0), generator=g)
    length = torch.exp(log_scale) * n_real.view(-1, 1, 1).float().sqrt()
    freq = torch.randn(b, f, n_basis, generator=g) / length  # (B, F, D)
    phase = 2 * math.pi * torch.rand(b, 1, n_basis, generator=g)
    weight = torch.randn(b, n_basis, 1, generator=g)
    return torch.bmm(torch.cos(torch.bmm(x, freq) + phase), weight).squeeze(-1)  # (B, n)


def _scm(
    b: int, n: int, n_features: torch.Tensor, cfg: PriorConfig, g: torch.Generator
) -> tuple[torch.Tensor, torch.Tensor]:
    """Features (B, n, F) and a continuous target (B, n) from random MLP SCMs.

    Most datasets expose the causes as features: the target mixes a linear
    effect and a node of the last layer of a noisy random MLP (or tree
    ensemble, ``p_tree``), with cause importances decaying so that a few
    features matter much; a share ``p_gp`` takes a GP draw over the causes as
    the target instead. The others (30%) expose random hidden nodes instead
    (causal mode, as in TabPFN v1).
    """
    f = cfg.max_features
    real = torch.arange(f).view(1, 1, -1) < n_features.view(-1, 1, 1)  # (B, 1, F)
    causes = torch.randn(b, n, f, generator=g)
    uniform = torch.rand(b, 1, f, generator=g) < 0.3
    causes = torch.where(uniform, torch.rand(b, n, f, generator=g) * 3.46 - 1.73, causes)
    causes = causes.masked_fill(~real, 0.0)
    # a few causes matter a lot and most a little, as in real tables
    importance = torch.rand(b, 1, f, generator=g) ** (1 + 4 * torch.rand(b, 1, 1, generator=g))
    importance = importance.masked_fill(~real, 0.0)
    importance = importance / importance.amax(-1, keepdim=True).clamp_min(1e-6)
    n_layers = int(torch.randint(1, cfg.max_layers + 1, (1,), generator=g))
    width = int(torch.randint(cfg.min_width, cfg.max_width + 1, (1,), generator=g))
    log_noise = torch.empty(b, 1, 1).uniform_(math.log(1e-3), math.log(0.3), generator=g)
    noise_std = torch.exp(log_noise)
    keep_p = 1.0 - 0.7 * torch.rand(b, 1, 1, generator=g)  # per-dataset edge density
    h = causes * importance  # (B, n, F)
    fan_in = (importance**2).sum(-1, keepdim=True).clamp_min(1e-3)  # (B, 1, 1)
    tree = torch.rand(b, generator=g) < cfg.p_tree if cfg.p_tree > 0 else None  # (B,)
    if tree is not None:
        depth = int(torch.randint(1, cfg.max_tree_depth + 1, (1,), generator=g))
        n_trees = int(torch.randint(1, cfg.max_trees + 1, (1,), generator=g))
        split_weight = importance[:, 0]  # (B, F): the important causes split more often
    hidden = []
    for _ in range(n_layers):
        w = torch.randn(b, h.shape[-1], width, generator=g)  # (B, in, W)
        w = w * (torch.rand(w.shape, generator=g) < keep_p) / (keep_p * fan_in).sqrt()
        z = torch.bmm(h, w) + 0.3 * torch.randn(b, 1, width, generator=g)  # (B, n, W)
        z = _activate(z, g)
        if tree is not None and tree.any() and not hidden:  # trees split the causes themselves
            z[tree] = _tree_layer(h[tree], width, depth, n_trees, split_weight[tree], g)
        h = z + noise_std * torch.randn(z.shape, generator=g)
        h = _standardize_rows(h)
        fan_in = torch.full_like(fan_in, width)
        hidden.append(h)
    linear = _standardize_rows((causes * importance).sum(-1))  # (B, n)
    mix = torch.rand(b, 1, generator=g)  # share of a plain linear effect in the target
    if cfg.p_linear > 0:
        mix = torch.where(torch.rand(b, 1, generator=g) < cfg.p_linear, 1.0, mix)
    y = _standardize_rows(mix * linear + (1 - mix) * h[:, :, 0])  # (B, n)
    if cfg.p_gp > 0:
        gp = torch.rand(b, 1, generator=g) < cfg.p_gp
        y = torch.where(gp, _standardize_rows(_gp_draw(causes * importance, n_features, g)), y)
    # causal mode: the features are random other nodes of the network
    pool = torch.cat([causes, *hidden], dim=-1)[:, :, :-width]  # (B, n, nodes); y excluded
    pool = torch.cat([pool, h[:, :, 1:]], dim=-1)
    pick = torch.rand(b, pool.shape[-1], generator=g).argsort(1)[:, :f]  # (B, F)
    causal_x = pool.gather(2, pick.unsqueeze(1).expand(b, n, f)).masked_fill(~real, 0.0)
    causal = torch.rand(b, 1, 1, generator=g) < 0.3
    return torch.where(causal, causal_x, causes), y


def _categorize(x: torch.Tensor, n_features: torch.Tensor, cfg: PriorConfig, g) -> torch.Tensor:
    """Turn random columns into shuffled integer category codes (2-10 levels)."""
    b, n, f = x.shape
    dataset_has = torch.rand(b, 1, 1, generator=g) < cfg.p_categorical
    column_is = torch.rand(b, 1, f, generator=g) < 0.5
    chosen = dataset_has & column_is & (torch.arange(f).view(1, 1, -1) < n_features.view(-1, 1, 1))
    if not chosen.any():
        return x
    n_levels = torch.randint(2, 11, (b, 1, f), generator=g)
    ranks = x.argsort(1).argsort(1).to(x.dtype) / n  # (B, n, F) in [0, 1)
    codes = (ranks * n_levels).floor()  # equal-frequency bins
    perm = torch.rand(b, 10, f, generator=g).argsort(1).to(x.dtype)  # shuffled code values
    shuffled = perm.gather(1, codes.long().clamp(max=9))
    return torch.where(chosen, shuffled, x)


def _warp(x: torch.Tensor, n_features: torch.Tensor, cfg: PriorConfig, g) -> torch.Tensor:
    """Skew random columns with an exponential so inputs are not all Gaussian."""
    b, _, f = x.shape
    real = torch.arange(f).view(1, 1, -1) < n_features.view(-1, 1, 1)
    chosen = (torch.rand(b, 1, 1, generator=g) < cfg.p_warp) & (
        torch.rand(b, 1, f, generator=g) < 0.5
    ) & real
    return torch.where(chosen, torch.exp(x.clamp(-10, 10)), x)


def _add_missing(x: torch.Tensor, n_features: torch.Tensor, cfg: PriorConfig, g) -> torch.Tensor:
    b, n, f = x.shape
    rate = torch.rand(b, 1, 1, generator=g) * 0.2
    rate = torch.where(torch.rand(b, 1, 1, generator=g) < cfg.p_missing, rate, torch.zeros_like(rate))
    real = torch.arange(f).view(1, 1, -1) < n_features.view(-1, 1, 1)
    missing = (torch.rand(b, n, f, generator=g) < rate) & real
    return x.masked_fill(missing, float("nan"))


def _add_target_noise(y: torch.Tensor, cfg: PriorConfig, g: torch.Generator) -> torch.Tensor:
    """Observation noise on the (B, n) target, its standard deviation drawn per dataset."""
    b, n = y.shape
    noise_sd = cfg.target_noise * torch.rand(b, 1, generator=g)  # (B, 1)
    return _standardize_rows(y + noise_sd * torch.randn(b, n, generator=g))


def _classes(y: torch.Tensor, cfg: PriorConfig, g: torch.Generator):
    """Cut a continuous target into K classes at random quantile boundaries."""
    b, n = y.shape
    binary = torch.rand(b, generator=g) < 0.5
    k = torch.where(binary, 2, torch.randint(2, cfg.max_classes + 1, (b,), generator=g))
    # boundaries: K-1 random quantiles of the dataset's own target
    q = torch.rand(b, cfg.max_classes - 1, generator=g).sort(1).values
    balanced = torch.rand(b, 1, generator=g) < 0.5  # half the time: equal-frequency classes
    even = torch.arange(1, cfg.max_classes).float().view(1, -1) / k.view(-1, 1).float()
    q = torch.where(balanced, even, q)
    ranks = (q.clamp(0.0, 1.0) * (n - 1)).round().long()  # (B, K_max - 1)
    bounds = y.sort(1).values.gather(1, ranks)  # per-dataset quantiles
    valid = torch.arange(cfg.max_classes - 1).view(1, -1) < (k - 1).view(-1, 1)
    bounds = torch.where(valid, bounds, torch.full_like(bounds, float("inf")))
    labels = (y.unsqueeze(-1) > bounds.unsqueeze(1)).sum(-1)  # (B, n) in [0, K)
    perm = torch.rand(b, cfg.max_classes, generator=g)
    perm = perm.masked_fill(torch.arange(cfg.max_classes).view(1, -1) >= k.view(-1, 1), 2.0)
    perm = perm.argsort(1).argsort(1)  # a random relabelling within 0..K-1
    return perm.gather(1, labels), k


def sample_batch(
    batch_size: int,
    task: str,
    cfg: PriorConfig,
    generator: torch.Generator,
    n_rows: int | None = None,
) -> PriorBatch:
    """Draw ``batch_size`` synthetic datasets.

    Parameters
    ----------
    batch_size : int
    task : {"classification", "regression"}
    cfg : PriorConfig
    generator : torch.Generator
        CPU generator; the same seed gives the same batch.
    n_rows : int, optional
        Rows per dataset; drawn from ``[min_rows, max_rows]`` when omitted.

    Examples
    --------
    >>> import torch
    >>> from skfm.pretrain.tabular_prior import PriorConfig, sample_batch
    >>> batch = sample_batch(4, "classification", PriorConfig(), torch.Generator().manual_seed(0))
    >>> batch.x.shape[0], batch.x.shape[2]
    (4, 100)
    """
    g = generator
    if n_rows is None and cfg.row_sampling == "log_uniform":
        n_rows = int(_log_uniform_int(cfg.min_rows, cfg.max_rows, 1, g))
    elif n_rows is None:
        n_rows = int(torch.randint(cfg.min_rows, cfg.max_rows + 1, (1,), generator=g))
    n_ctx = int(n_rows * (0.2 + 0.6 * float(torch.rand(1, generator=g))))
    n_features = _log_uniform_int(2, cfg.max_features, batch_size, g)
    x, y = _scm(batch_size, n_rows, n_features, cfg, g)
    x = _categorize(x, n_features, cfg, g)
    x = _warp(x, n_features, cfg, g)
    x = _add_missing(x, n_features, cfg, g)
    if cfg.target_noise > 0:
        y = _add_target_noise(y, cfg, g)
    if task == "classification":
        y, n_classes = _classes(y, cfg, g)
    else:
        n_classes = torch.ones(batch_size, dtype=torch.long)
    return PriorBatch(x, y, n_features, n_classes, n_ctx, task)
