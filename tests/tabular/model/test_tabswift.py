"""Invariances and inference paths of the TabSwift module, on a tiny random model."""

import pytest
import torch

from skfm.tabular.model import (
    CLASSIFICATION,
    REGRESSION,
    TabSwift,
    TabSwiftConfig,
    standardize_context,
)

CONFIG = TabSwiftConfig(
    max_features=8, d_model=32, n_heads=2, n_layers=3, n_registers=2, n_buckets=16
)
B, N, M = 2, 12, 6  # datasets, context rows, test rows
N_FEATURES = torch.tensor([5, 8])
TASKS = [CLASSIFICATION, REGRESSION]
ATOL = 1e-5


pytestmark = pytest.mark.usefixtures("one_thread")


def _model(randomize: bool = True) -> TabSwift:
    """A tiny model; ``randomize`` replaces the zero-initialised projections by random ones.

    At init every block is the identity, so the context would not matter at all: the
    invariance tests below need blocks that actually mix rows.
    """
    torch.manual_seed(0)
    model = TabSwift(CONFIG).eval()
    if randomize:
        with torch.no_grad():
            for block in model.blocks:
                for layer in (block.attn.out, block.ffn[2]):
                    layer.weight.normal_(0.0, 0.3)
                    layer.bias.normal_(0.0, 0.1)
    return model


@pytest.fixture(scope="module")
def model():
    return _model()


def _data(task: str, seed: int = 1):
    """(x, y_ctx): x of shape (B, N + M, F) with zero padded columns, context labels (B, N)."""
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(B, N + M, CONFIG.max_features, generator=g)
    x[torch.arange(CONFIG.max_features).expand(B, N + M, -1) >= N_FEATURES.view(-1, 1, 1)] = 0.0
    if task == CLASSIFICATION:
        y_ctx = torch.randint(0, 3, (B, N), generator=g)
    else:
        y_ctx = torch.randn(B, N, generator=g)
    return x, y_ctx


def _cached(model, x, y_ctx, task, **kwargs):
    """Logits and depths from the context cache path."""
    cache = model.context_cache(x[:, :N], y_ctx, N_FEATURES, task)
    return model.predict_from_cache(x[:, N:], x[:, :N], cache, N_FEATURES, task, **kwargs)


@torch.no_grad()
def _forward(model, x, y_ctx, task, **kwargs):
    return model(x, y_ctx, N_FEATURES, task, **kwargs)


@pytest.mark.parametrize("task", TASKS)
def test_predict_from_cache_equals_forward(model, task):
    """The KV-cache path gives the logits of the plain forward pass."""
    x, y_ctx = _data(task)
    logits, depth = _cached(model, x, y_ctx, task)
    expected = _forward(model, x, y_ctx, task)
    n_out = CONFIG.max_classes if task == CLASSIFICATION else CONFIG.n_buckets
    assert logits.shape == expected.shape == (B, M, n_out)
    torch.testing.assert_close(logits, expected, atol=ATOL, rtol=0)
    assert torch.equal(depth, torch.full((B, M), CONFIG.n_layers))


@pytest.mark.parametrize("task", TASKS)
def test_context_matters(model, task):
    """Sanity check for the invariance tests: other context labels change the predictions."""
    x, y_ctx = _data(task)
    other = (y_ctx + 1) % 3 if task == CLASSIFICATION else -y_ctx
    diff = (_forward(model, x, y_ctx, task) - _forward(model, x, other, task)).abs().max()
    assert diff > 1e-2


@pytest.mark.parametrize("task", TASKS)
def test_test_rows_do_not_see_each_other(model, task):
    """Each test row predicted alone gets the logits it gets among the others."""
    x, y_ctx = _data(task)
    together = _forward(model, x, y_ctx, task)
    for j in range(M):
        alone = _forward(model, x[:, list(range(N)) + [N + j]], y_ctx, task)
        torch.testing.assert_close(alone[:, 0], together[:, j], atol=ATOL, rtol=0)
    cache = model.context_cache(x[:, :N], y_ctx, N_FEATURES, task)
    alone, _ = model.predict_from_cache(x[:, N + 2 : N + 3], x[:, :N], cache, N_FEATURES, task)
    torch.testing.assert_close(alone[:, 0], together[:, 2], atol=ATOL, rtol=0)


@pytest.mark.parametrize("task", TASKS)
def test_permuting_test_rows_permutes_outputs(model, task):
    """Test rows are processed independently: a permutation commutes with the model."""
    x, y_ctx = _data(task)
    perm = torch.randperm(M, generator=torch.Generator().manual_seed(3))
    x_perm = torch.cat([x[:, :N], x[:, N:][:, perm]], dim=1)
    together = _forward(model, x, y_ctx, task)
    permuted = _forward(model, x_perm, y_ctx, task)
    torch.testing.assert_close(permuted, together[:, perm], atol=ATOL, rtol=0)


@pytest.mark.parametrize("task", TASKS)
def test_permuting_context_rows_changes_nothing(model, task):
    """No positional encoding: the context is a set."""
    x, y_ctx = _data(task)
    perm = torch.randperm(N, generator=torch.Generator().manual_seed(4))
    x_perm = torch.cat([x[:, :N][:, perm], x[:, N:]], dim=1)
    expected = _forward(model, x, y_ctx, task)
    torch.testing.assert_close(
        _forward(model, x_perm, y_ctx[:, perm], task), expected, atol=ATOL, rtol=0
    )
    logits, _ = _cached(model, x_perm, y_ctx[:, perm], task)
    torch.testing.assert_close(logits, expected, atol=ATOL, rtol=0)


@pytest.mark.parametrize("task", TASKS)
def test_all_layers_shape_and_last_layer(model, task):
    """``all_layers=True`` stacks one prediction per layer; the last is the plain output."""
    x, y_ctx = _data(task)
    per_layer = _forward(model, x, y_ctx, task, all_layers=True)
    n_out = CONFIG.max_classes if task == CLASSIFICATION else CONFIG.n_buckets
    assert per_layer.shape == (CONFIG.n_layers, B, M, n_out)
    torch.testing.assert_close(per_layer[-1], _forward(model, x, y_ctx, task), atol=ATOL, rtol=0)
    assert (per_layer[0] - per_layer[-1]).abs().max() > 1e-3  # layers do differ


@pytest.mark.parametrize("task", TASKS)
def test_max_layers_is_the_kth_exit_head(model, task):
    """Anytime inference after k layers reads the k-th entry of the deep-supervision output."""
    x, y_ctx = _data(task)
    per_layer = _forward(model, x, y_ctx, task, all_layers=True)
    for k in range(1, CONFIG.n_layers + 1):
        logits, depth = _cached(model, x, y_ctx, task, max_layers=k)
        torch.testing.assert_close(logits, per_layer[k - 1], atol=ATOL, rtol=0)
        assert torch.equal(depth, torch.full((B, M), k))
    logits, depth = _cached(model, x, y_ctx, task, max_layers=CONFIG.n_layers + 5)
    torch.testing.assert_close(logits, per_layer[-1], atol=ATOL, rtol=0)
    assert int(depth.max()) == CONFIG.n_layers


def _expected_depth(per_layer: torch.Tensor, threshold: float, patience: int) -> torch.Tensor:
    """Reference exit rule, row by row: first layer after ``patience`` settled layers."""
    probs = per_layer.float().softmax(-1)  # (L, B, M, C)
    moved = 0.5 * (probs[1:] - probs[:-1]).abs().sum(-1)  # (L-1, B, M)
    n_layers, b, m = probs.shape[:3]
    depth = torch.full((b, m), n_layers)
    for i in range(b):
        for j in range(m):
            run = 0
            for layer in range(1, n_layers):
                run = run + 1 if moved[layer - 1, i, j] <= 1 - threshold else 0
                if run >= patience:
                    depth[i, j] = layer + 1
                    break
    return depth


@pytest.mark.parametrize("task", TASKS)
def test_early_exit_rows_leave_once_their_prediction_settles(model, task):
    """Each row exits after ``patience`` layers in a row moved its prediction little."""
    x, y_ctx = _data(task)
    per_layer = _forward(model, x, y_ctx, task, all_layers=True)  # (L, B, M, C)
    probs = per_layer.float().softmax(-1)
    moved = 0.5 * (probs[1:] - probs[:-1]).abs().sum(-1)
    threshold = 1 - float(moved[:2].amax(0).flatten().quantile(0.5))  # about half leave early
    for patience in (1, 2):
        logits, depth = _cached(model, x, y_ctx, task, exit_threshold=threshold,
                                patience=patience)
        expected = _expected_depth(per_layer, threshold, patience)
        assert torch.equal(depth, expected)
        if patience == 1:  # with 3 layers, patience 2 can only exit at the last one
            assert (depth < CONFIG.n_layers).any() and (depth == CONFIG.n_layers).any()
        for b in range(B):
            for m in range(M):
                d = int(depth[b, m])
                torch.testing.assert_close(logits[b, m], per_layer[d - 1, b, m], atol=ATOL,
                                           rtol=0)


@pytest.mark.parametrize("task", TASKS)
def test_early_exit_extremes_and_batch_independence(model, task):
    """Any movement allowed: all leave after patience + 1 layers; none: all run to the end."""
    x, y_ctx = _data(task)
    per_layer = _forward(model, x, y_ctx, task, all_layers=True)
    logits, depth = _cached(model, x, y_ctx, task, exit_threshold=1e-6, patience=1)
    assert torch.equal(depth, torch.full((B, M), 2))
    torch.testing.assert_close(logits, per_layer[1], atol=ATOL, rtol=0)
    _, depth = _cached(model, x, y_ctx, task, exit_threshold=1.0)
    assert torch.equal(depth, torch.full((B, M), CONFIG.n_layers))
    threshold = 0.9
    together, depth = _cached(model, x, y_ctx, task, exit_threshold=threshold, patience=1)
    alone, depth_alone = _cached(model, x[:, : N + 1], y_ctx, task, exit_threshold=threshold,
                                 patience=1)  # the first test row without the others
    torch.testing.assert_close(alone[:, 0], together[:, 0], atol=ATOL, rtol=0)
    assert torch.equal(depth_alone[:, 0], depth[:, 0])


@pytest.mark.parametrize("task", TASKS)
def test_missing_values_give_finite_outputs(model, task):
    """NaN anywhere in the real features (even a whole context column) is handled."""
    x, y_ctx = _data(task)
    x[0, 3, 1] = x[1, N + 2, 4] = x[1, 0, 7] = float("nan")
    x[0, :N, 2] = float("nan")  # missing in every context row
    x[1, N:, 0] = float("nan")  # missing in every test row
    out = _forward(model, x, y_ctx, task)
    assert torch.isfinite(out).all()
    logits, _ = _cached(model, x, y_ctx, task)
    assert torch.isfinite(logits).all()
    torch.testing.assert_close(logits, out, atol=ATOL, rtol=0)


def test_standardize_context_uses_context_statistics_only():
    """Test rows are scaled with context statistics; they do not influence each other."""
    x, _ = _data(CLASSIFICATION)
    x[0, 2, 0] = x[1, N + 1, 3] = float("nan")
    values, missing = standardize_context(x, N, N_FEATURES)
    assert values.shape == missing.shape == x.shape
    assert missing.sum() == 2 and missing[0, 2, 0] == 1 and missing[1, N + 1, 3] == 1
    assert values[0, 2, 0] == 0 and values[1, N + 1, 3] == 0
    assert torch.isfinite(values).all()
    # real context columns are z-scored (times F / n_features), padded columns stay zero
    scale = CONFIG.max_features / N_FEATURES.float()
    ctx = values[1, :N] / scale[1]
    torch.testing.assert_close(ctx.mean(0), torch.zeros(8), atol=1e-5, rtol=0)
    torch.testing.assert_close(ctx.std(0, unbiased=False), torch.ones(8), atol=1e-5, rtol=0)
    assert torch.equal(values[0, :, 5:], torch.zeros(N + M, 3))
    # changing a test row changes nothing else
    x2 = x.clone()
    x2[:, N] = 50.0 * torch.randn(B, CONFIG.max_features)
    values2, _ = standardize_context(x2, N, N_FEATURES)
    assert torch.equal(values2[:, :N], values[:, :N])
    assert torch.equal(values2[:, N + 1 :], values[:, N + 1 :])
    assert not torch.equal(values2[:, N], values[:, N])
    # changing a context row changes the statistics, hence every test row
    x3 = x.clone()
    x3[:, 0, :5] += 10.0
    values3, _ = standardize_context(x3, N, N_FEATURES)
    changed = (values3[:, N:, :5] - values[:, N:, :5]).abs() > 1e-3
    assert changed.sum() == B * M * 5 - 1  # all but the missing value


@pytest.mark.parametrize("task", TASKS)
def test_blocks_are_the_identity_at_init(task):
    """Zero-initialised output projections: at init the output is head(encoder tokens)."""
    model = _model(randomize=False)
    x, y_ctx = _data(task)
    with torch.no_grad():
        tokens = model.embed(x, y_ctx, N_FEATURES, task)
        expected = model.head(tokens[:, CONFIG.n_registers + N :], task)
        for block in model.blocks:
            k, v = block.keys_values(tokens)
            torch.testing.assert_close(block(tokens, k, v), tokens, atol=0, rtol=0)
    torch.testing.assert_close(_forward(model, x, y_ctx, task), expected, atol=ATOL, rtol=0)
    per_layer = _forward(model, x, y_ctx, task, all_layers=True)
    torch.testing.assert_close(per_layer, expected.expand_as(per_layer), atol=ATOL, rtol=0)
