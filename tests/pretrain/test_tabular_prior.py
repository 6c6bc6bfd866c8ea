"""The synthetic pretraining prior: shapes, determinism, labels, padding, missing values."""

from dataclasses import replace

import numpy as np
import pytest
import torch

from skfm.pretrain.tabular_prior import PriorConfig, sample_batch

SMALL = PriorConfig(max_features=12, max_classes=6, min_rows=20, max_rows=40, max_width=24)


pytestmark = pytest.mark.usefixtures("one_thread")


def _batch(task, seed=0, batch_size=16, cfg=SMALL, n_rows=None):
    return sample_batch(batch_size, task, cfg, torch.Generator().manual_seed(seed), n_rows=n_rows)


def _real_mask(batch) -> torch.Tensor:
    f = batch.x.shape[-1]
    return torch.arange(f).view(1, 1, -1) < batch.n_features.view(-1, 1, 1)


@pytest.mark.parametrize("task", ["classification", "regression"])
def test_shapes_and_dtypes(task):
    """x is (B, n, F) float32, y is (B, n), context size in [20%, 80%] of the rows."""
    batch = _batch(task)
    b, n, f = batch.x.shape
    assert (b, f) == (16, SMALL.max_features)
    assert SMALL.min_rows <= n <= SMALL.max_rows
    assert batch.x.dtype == torch.float32
    assert batch.y.shape == (b, n)
    assert batch.n_features.shape == batch.n_classes.shape == (b,)
    assert batch.n_features.dtype == batch.n_classes.dtype == torch.long
    assert int(batch.n_features.min()) >= 2 and int(batch.n_features.max()) <= f
    assert int(0.2 * n) <= batch.n_ctx <= int(0.8 * n)
    assert batch.task == task
    if task == "classification":
        assert batch.y.dtype == torch.long
    else:
        assert batch.y.dtype == torch.float32
        assert torch.equal(batch.n_classes, torch.ones(b, dtype=torch.long))


def test_n_rows_is_respected():
    """An explicit ``n_rows`` fixes the row count."""
    assert _batch("classification", n_rows=33).x.shape[1] == 33


@pytest.mark.parametrize("task", ["classification", "regression"])
def test_same_seed_same_batch(task):
    """The generator alone determines the batch; another seed gives another batch."""
    a, b, c = _batch(task, seed=5), _batch(task, seed=5), _batch(task, seed=6)
    torch.testing.assert_close(a.x, b.x, equal_nan=True, atol=0, rtol=0)
    assert torch.equal(a.y, b.y)
    assert torch.equal(a.n_features, b.n_features) and torch.equal(a.n_classes, b.n_classes)
    assert a.n_ctx == b.n_ctx
    same_shape = a.x.shape == c.x.shape
    assert not (same_shape and torch.equal(a.x.nan_to_num(), c.x.nan_to_num()))


def test_same_seed_same_batch_regardless_of_global_seed():
    """The global torch seed does not leak into the prior."""
    torch.manual_seed(1)
    a = _batch("regression", seed=7)
    torch.manual_seed(2)
    b = _batch("regression", seed=7)
    torch.testing.assert_close(a.x, b.x, equal_nan=True, atol=0, rtol=0)
    torch.testing.assert_close(a.y, b.y, atol=0, rtol=0)


def test_class_labels_in_range():
    """Labels lie in [0, n_classes) and n_classes in [2, max_classes], per dataset."""
    for seed in range(4):
        batch = _batch("classification", seed=seed, batch_size=32)
        k = batch.n_classes
        assert int(k.min()) >= 2 and int(k.max()) <= SMALL.max_classes
        assert int(batch.y.min()) >= 0
        assert (batch.y < k.view(-1, 1)).all()
    assert (k > 2).any()  # not only binary tasks


def test_every_class_appears_in_balanced_or_random_splits():
    """Across a batch most datasets use at least two distinct labels."""
    batch = _batch("classification", batch_size=32, n_rows=64)
    distinct = torch.tensor([len(torch.unique(y)) for y in batch.y])
    assert (distinct >= 2).float().mean() > 0.9


@pytest.mark.parametrize("task", ["classification", "regression"])
def test_padded_columns_are_zero_never_nan(task):
    """Columns beyond n_features are exactly 0, even with many missing values."""
    cfg = PriorConfig(max_features=10, min_rows=20, max_rows=40, p_missing=1.0, p_categorical=0.5,
                      p_warp=1.0)
    for seed in range(3):
        batch = _batch(task, seed=seed, batch_size=32, cfg=cfg)
        padded = ~_real_mask(batch).expand_as(batch.x)
        assert padded.any()
        assert not torch.isnan(batch.x[padded]).any()
        assert (batch.x[padded] == 0).all()


def test_missing_values_appear_with_p_missing_one():
    """With p_missing=1.0 a batch of 64 datasets has missing values, only in real columns."""
    cfg = PriorConfig(max_features=10, min_rows=20, max_rows=40, p_missing=1.0)
    batch = _batch("classification", batch_size=64, cfg=cfg)
    nan = torch.isnan(batch.x)
    assert nan.any()
    assert not (nan & ~_real_mask(batch)).any()
    assert nan.float().mean() < 0.2  # rates are drawn in [0, 0.2)


@pytest.mark.parametrize("task", ["classification", "regression"])
def test_no_missing_values_with_p_missing_zero(task):
    """Without missingness every value is finite (no NaN from the SCM itself)."""
    cfg = PriorConfig(max_features=10, min_rows=20, max_rows=40, p_missing=0.0, p_warp=1.0)
    for seed in range(3):
        batch = _batch(task, seed=seed, batch_size=32, cfg=cfg)
        assert torch.isfinite(batch.x).all()
        assert torch.isfinite(batch.y.float()).all()


def test_regression_targets_finite_and_varied():
    """Regression targets are finite and not constant within a dataset."""
    cfg = PriorConfig(max_features=10, min_rows=20, max_rows=40, p_missing=1.0)
    batch = _batch("regression", batch_size=64, cfg=cfg)
    assert torch.isfinite(batch.y).all()
    assert (batch.y.std(1) > 1e-3).all()


@pytest.mark.slow
def test_prior_datasets_are_learnable():
    """A random forest beats chance on prior datasets (median ROC-AUC > 0.6 on 20 of them)."""
    from sklearn.ensemble import RandomForestClassifier
    from sklearn.metrics import roc_auc_score

    cfg = PriorConfig(max_features=20)
    g = torch.Generator().manual_seed(0)
    aucs = []
    while len(aucs) < 20:
        batch = sample_batch(8, "classification", cfg, g, n_rows=300)
        for i in range(8):
            if int(batch.n_classes[i]) != 2 or len(aucs) == 20:
                continue
            x = batch.x[i, :, : int(batch.n_features[i])].numpy()
            y = batch.y[i].numpy()
            if len(np.unique(y[:200])) < 2 or len(np.unique(y[200:])) < 2:
                continue
            rf = RandomForestClassifier(n_estimators=50, random_state=0, n_jobs=1)
            rf.fit(x[:200], y[:200])
            aucs.append(roc_auc_score(y[200:], rf.predict_proba(x[200:])[:, 1]))
    assert np.median(aucs) > 0.6


def test_log_uniform_rows_favour_small_datasets():
    """``row_sampling="log_uniform"`` keeps the range and puts more batches at few rows."""
    wide = dict(max_features=4, max_width=16, min_rows=16, max_rows=512)
    counts = {}
    for sampling in ("uniform", "log_uniform"):
        cfg = PriorConfig(**wide, row_sampling=sampling)
        g = torch.Generator().manual_seed(0)
        counts[sampling] = [sample_batch(1, "regression", cfg, g).x.shape[1] for _ in range(200)]
        assert 16 <= min(counts[sampling]) and max(counts[sampling]) <= 512
    small = {k: np.mean(np.array(v) < 64) for k, v in counts.items()}
    assert small["uniform"] < 0.2 and small["log_uniform"] > 0.3


@pytest.mark.parametrize("task", ["classification", "regression"])
def test_target_noise_changes_only_the_target(task):
    """``target_noise`` adds noise to y after x is drawn: same x, a different but related y."""
    clean = _batch(task, seed=3, n_rows=40)
    noisy = _batch(task, seed=3, n_rows=40, cfg=replace(SMALL, target_noise=1.0))
    torch.testing.assert_close(clean.x, noisy.x, equal_nan=True, atol=0, rtol=0)
    assert not torch.equal(clean.y, noisy.y)
    if task == "regression":  # still standardised, and correlated with the clean target
        torch.testing.assert_close(noisy.y.mean(1), torch.zeros(16), atol=1e-5, rtol=0)
        corr = (clean.y * noisy.y).mean(1) * 40 / 39
        assert float(corr.min()) > 0.5 and float(corr.mean()) < 0.99


def test_prior_options_are_checked():
    with pytest.raises(ValueError, match="row_sampling must be"):
        PriorConfig(row_sampling="normal")
    with pytest.raises(ValueError, match="target_noise must be >= 0"):
        PriorConfig(target_noise=-0.1)


def _linear_r2(batch) -> np.ndarray:
    """Per dataset, R² of the least-squares fit of y on the real features and an intercept."""
    r2 = []
    for x, y, f in zip(batch.x.double(), batch.y.double(), batch.n_features, strict=True):
        design = torch.cat([x[:, :f], torch.ones(len(x), 1, dtype=x.dtype)], 1)
        coef = torch.linalg.lstsq(design, y.unsqueeze(1)).solution
        r2.append(1 - float(((design @ coef).squeeze(1) - y).var() / y.var()))
    return np.array(r2)


def test_p_linear_makes_targets_linear_in_the_features():
    """With ``p_linear=1`` every dataset that shows its causes has an exactly linear target."""
    plain = PriorConfig(max_features=6, max_width=16, min_rows=60, max_rows=60,
                        p_categorical=0.0, p_missing=0.0, p_warp=0.0)
    r2 = {p: _linear_r2(_batch("regression", seed=1, batch_size=64, cfg=replace(plain, p_linear=p)))
          for p in (0.0, 1.0)}
    assert np.mean(r2[1.0] > 0.9999) > 0.5  # 30% of datasets show hidden nodes instead
    assert np.mean(r2[0.0] > 0.9999) < 0.2
    with pytest.raises(ValueError, match="p_linear must be in"):
        PriorConfig(p_linear=1.5)


PLAIN = PriorConfig(max_features=8, min_rows=300, max_rows=300, p_missing=0.0, p_categorical=0.0,
                    p_warp=0.0)


def _rf_beats_ridge(cfg: PriorConfig, seed: int = 1) -> float:
    """Share of 16 regression datasets on which a random forest beats ridge on held-out rows."""
    from sklearn.ensemble import RandomForestRegressor
    from sklearn.linear_model import RidgeCV

    batch = _batch("regression", seed=seed, cfg=cfg, n_rows=300)
    wins = []
    for x, y, f in zip(batch.x, batch.y, batch.n_features, strict=True):
        x, y = x[:, :f].numpy(), y.numpy()
        forest = RandomForestRegressor(50, min_samples_leaf=2, random_state=0).fit(x[:200], y[:200])
        ridge = RidgeCV().fit(x[:200], y[:200])
        wins.append(forest.score(x[200:], y[200:]) > ridge.score(x[200:], y[200:]))
    return float(np.mean(wins))


def test_tree_scms_give_targets_that_trees_learn_better():
    """With p_tree=1 a random forest beats ridge on most datasets, more often than on MLP-SCMs."""
    tree_share = _rf_beats_ridge(replace(PLAIN, p_tree=1.0))
    assert tree_share >= 0.6
    assert tree_share > _rf_beats_ridge(PLAIN)


def test_gp_targets_are_smooth_functions_of_the_features():
    """With p_gp=1 the target is a GP draw over the causes: a forest explains most of it."""
    from sklearn.ensemble import RandomForestRegressor

    batch = _batch("regression", cfg=replace(PLAIN, p_gp=1.0), n_rows=300)
    scores = [RandomForestRegressor(50, random_state=0).fit(x[:200, :f], y[:200]).score(
        x[200:, :f], y[200:]) for x, y, f in zip(batch.x.numpy(), batch.y.numpy(), batch.n_features, strict=True)]
    assert np.median(scores) > 0.5
    assert not torch.equal(batch.y, _batch("regression", cfg=PLAIN, n_rows=300).y)


@pytest.mark.parametrize("task", ["classification", "regression"])
def test_mixture_keeps_shapes_and_finite_values(task):
    """A mixture of MLP, tree and GP SCMs draws finite batches of the usual shapes."""
    batch = _batch(task, cfg=replace(SMALL, p_tree=0.5, p_gp=0.2), batch_size=32)
    assert batch.x.shape[0] == 32 and batch.y.shape == batch.x.shape[:2]
    assert torch.isfinite(batch.x.nan_to_num(0.0)).all() and torch.isfinite(batch.y.float()).all()


@pytest.mark.parametrize("bad", [{"p_tree": 1.5}, {"p_gp": -0.1}, {"max_tree_depth": 0},
                                 {"max_trees": 0}])
def test_bad_mixture_settings_are_refused(bad):
    with pytest.raises(ValueError, match=next(iter(bad))):
        PriorConfig(**bad)
