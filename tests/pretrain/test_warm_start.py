"""Starting a run from a checkpoint, the same network or a grown one (skfm.pretrain.warm_start)."""

import numpy as np
import pytest
import torch

from skfm.pretrain.tabswift import GROWTH
from skfm.pretrain.warm_start import check_growth, load_grown
from skfm.tabular.model import CLASSIFICATION, REGRESSION, TabSwift, TabSwiftConfig

pytestmark = pytest.mark.usefixtures("one_thread")

SMALL = dict(max_features=6, max_classes=4, n_buckets=16, d_model=16, n_heads=2, n_layers=2,
             ffn_factor=2, n_registers=2)


def _trained_looking(model: torch.nn.Module) -> torch.nn.Module:
    """Every weight random, so that no zero-initialised projection hides a mistake."""
    torch.manual_seed(1)
    with torch.no_grad():
        for p in model.parameters():
            p.normal_(0, 0.3)
    return model


def _weights(model):
    return {k: v.detach().numpy().copy() for k, v in model.state_dict().items()}


@pytest.mark.parametrize("task", [CLASSIFICATION, REGRESSION])
def test_a_deeper_and_wider_tabswift_computes_what_the_checkpoint_did(task):
    small = _trained_looking(TabSwift(TabSwiftConfig(**SMALL))).eval()
    large = _trained_looking(TabSwift(TabSwiftConfig(**{**SMALL, "n_layers": 4, "ffn_factor": 4}))).eval()
    check_growth(small.config.to_dict(), large.config.to_dict(), GROWTH.fields)
    grown = load_grown(large, _weights(small), GROWTH.residual_outputs)
    assert "blocks.3.attn.out.weight: new" in grown
    assert "blocks.0.ffn.0.weight: (32, 16) -> (64, 16)" in grown
    g = torch.Generator().manual_seed(0)
    x = torch.randn(3, 40, SMALL["max_features"], generator=g)
    y = (torch.randint(0, 3, (3, 30), generator=g) if task == CLASSIFICATION
         else torch.randn(3, 30, generator=g))
    n_features = torch.tensor([6, 4, 5])
    with torch.no_grad():
        expected = small(x, y, n_features, task)
        got = large(x, y, n_features, task, all_layers=True)
    # the new blocks (3, 4) and the new hidden units add exactly zero: float32 round-off only
    for layer in (1, 2, 3):
        torch.testing.assert_close(got[layer], expected, rtol=1e-5, atol=1e-5)
    assert any(float(p.detach().abs().sum()) > 0 for n, p in large.named_parameters() if "blocks.3" in n)


def test_the_same_architecture_copies_everything():
    small = _trained_looking(TabSwift(TabSwiftConfig(**SMALL)))
    other = TabSwift(TabSwiftConfig(**SMALL))
    assert load_grown(other, _weights(small)) == []
    for (name, a), b in zip(small.state_dict().items(), other.state_dict().values(), strict=True):
        assert torch.equal(a, b), name


@pytest.mark.parametrize("field, value, message", [
    ("d_model", 32, "cannot grow d_model from 16 to 32: only n_layers, ffn_factor may grow"),
    ("max_features", 8, "cannot grow max_features"),
    ("n_layers", 1, "cannot grow n_layers from 2 to 1: it may only increase"),
])
def test_growth_that_would_change_the_function_is_refused(field, value, message):
    with pytest.raises(ValueError, match=message):
        check_growth(SMALL, {**SMALL, field: value}, GROWTH.fields)


def test_a_checkpoint_tensor_the_model_lacks_or_cannot_hold_is_refused():
    model = torch.nn.Linear(3, 2)
    with pytest.raises(ValueError, match="tensors the model does not have: \\['extra'\\]"):
        load_grown(model, {"weight": np.zeros((2, 3), np.float32), "extra": np.zeros(1)})
    with pytest.raises(ValueError, match="cannot grow weight from \\(4, 3\\) to \\(2, 3\\)"):
        load_grown(model, {"weight": np.zeros((4, 3), np.float32)})


def test_a_deeper_and_wider_mantis_embeds_as_the_checkpoint_did():
    from skfm.pretrain.mantis import GROWTH as MANTIS_GROWTH
    from skfm.timeseries.mantis.model import Mantis, MantisConfig

    config = dict(seq_len=64, n_patches=8, d_model=16, n_layers=2, n_heads=2, dim_head=8,
                  mlp_dim=32, scalar_dim=4, n_scales=3, dropout=0.0, proj_dim=8)
    small = _trained_looking(Mantis(MantisConfig(**config))).eval()
    large = _trained_looking(Mantis(MantisConfig(**{**config, "n_layers": 3, "mlp_dim": 64}))).eval()
    check_growth(small.config.to_dict(), large.config.to_dict(), MANTIS_GROWTH.fields)
    grown = load_grown(large, _weights(small), MANTIS_GROWTH.residual_outputs)
    assert "blocks.2.qkv.weight: new" in grown and "blocks.1.mlp.3.weight: (16, 32) -> (16, 64)" in grown
    x = torch.randn(5, 64, generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        torch.testing.assert_close(large(x), small(x), rtol=1e-5, atol=1e-5)
        torch.testing.assert_close(large.project(x), small.project(x), rtol=1e-5, atol=1e-5)
