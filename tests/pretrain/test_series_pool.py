"""The rolling pool of synthetic series, its crops and TSMixup (skfm.pretrain.series_pool)."""

import numpy as np
import torch

from skfm.pretrain.series_pool import SeriesPool, mixup_crops, random_crops


def _pool():
    return SeriesPool(lambda n, rng: rng.standard_normal((n, 12)), 12, seed=5, n_chunks=3,
                      chunk_size=2, steps_per_chunk=4)


def test_pool_rolled_forward_equals_one_built_at_the_step():
    rolled = _pool()
    for step in range(11):
        rolled.at_step(step)
    direct = _pool().at_step(10)
    torch.testing.assert_close(rolled.data, direct)
    assert not torch.equal(direct, _pool().at_step(0).clone())


def test_mixup_without_a_share_is_plain_cropping():
    series = torch.randn(20, 40)
    plain = random_crops(series, 8, 16, torch.Generator().manual_seed(1))
    assert torch.equal(mixup_crops(series, 8, 16, torch.Generator().manual_seed(1), 0.0), plain)


def test_mixed_crops_are_convex_combinations_of_standardised_crops():
    series = torch.randn(30, 40) * 50 + 300  # plain crops keep this level; mixed ones do not
    plain = random_crops(series, 400, 16, torch.Generator().manual_seed(2))
    crops = mixup_crops(series, 400, 16, torch.Generator().manual_seed(2), p_mix=0.5)
    mixed = ~(crops == plain).all(1)
    assert 0.4 < mixed.float().mean() < 0.6  # the share asked for
    assert crops[mixed].mean(1).abs().max() < 1e-4  # a mix of zero-mean parts has mean zero
    # convex weights of unit-variance parts: a spread at most one (equal only for one part)
    assert (crops[mixed].std(1) <= 1 + 1e-4).all() and (crops[mixed].std(1) > 0.2).all()
    assert torch.equal(crops[~mixed], plain[~mixed])


def test_mixup_is_seeded():
    series = torch.randn(10, 30)
    a, b = (mixup_crops(series, 20, 8, torch.Generator().manual_seed(3), 0.7) for _ in range(2))
    assert torch.equal(a, b) and np.isfinite(a.numpy()).all()
