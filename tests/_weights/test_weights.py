"""Tests of skfm._weights: saving, resolving, verifying, caching and listing checkpoints."""

import dataclasses
import hashlib
import json
import shutil
import sys
import types

import numpy as np
import pytest
import safetensors.numpy
import safetensors.torch
import torch

from skfm._weights import (
    Checkpoint,
    list_checkpoints,
    load_checkpoint,
    registry,
    save_checkpoint,
    sha256_file,
    skfm_home,
)

REAL_SHIPPED_DIR = registry._shipped_dir
CARD = {"model": "tabswift", "config": {"d_model": 8, "n_layers": 2}}


@pytest.fixture(autouse=True)
def home(tmp_path, monkeypatch):
    """An empty SKFM_HOME and an empty shipped folder, so that no real file matters."""
    shipped = tmp_path / "shipped"
    shipped.mkdir()
    monkeypatch.setattr(registry, "_shipped_dir", lambda: shipped)
    monkeypatch.setenv("SKFM_HOME", str(tmp_path / "home"))
    return tmp_path / "home"


@pytest.fixture
def state():
    rng = np.random.default_rng(0)
    return {
        "encoder.weight": rng.normal(size=(4, 3)),
        "encoder.bias": torch.linspace(-1, 1, 3),
        "head.half": torch.ones(2, dtype=torch.bfloat16) / 3,
        "vocab": np.arange(5, dtype=np.int64),
        "mask": np.array([True, False, True]),
    }


def _save(path, state=None, **kwargs):
    return save_checkpoint(path, state or {"w": np.ones(3)}, CARD, **kwargs)


def _rewrite_card_sha(path):
    card_path = path.with_suffix(".json")
    card = json.loads(card_path.read_text())
    card["sha256"] = sha256_file(path)
    card_path.write_text(json.dumps(card))


# -- save_checkpoint --------------------------------------------------------------------


def test_round_trip(tmp_path, state):
    path = save_checkpoint(tmp_path / "sub" / "dir" / "model", state, CARD)
    assert path == tmp_path / "sub" / "dir" / "model.safetensors"
    ckpt = load_checkpoint(path)
    assert isinstance(ckpt, Checkpoint)
    assert ckpt.name == "model" and ckpt.path == path.resolve()
    assert set(ckpt.state) == set(state)
    for key in ["encoder.weight", "encoder.bias", "head.half"]:
        assert ckpt.state[key].dtype == np.float32
        expected = np.asarray(torch.as_tensor(state[key]).float())
        np.testing.assert_allclose(ckpt.state[key], expected, rtol=1e-3, atol=1e-4)
    np.testing.assert_array_equal(ckpt.state["vocab"], state["vocab"])
    assert ckpt.state["vocab"].dtype == np.int64
    np.testing.assert_array_equal(ckpt.state["mask"], state["mask"])
    on_disk = safetensors.numpy.load_file(path)
    assert on_disk["encoder.weight"].dtype == np.float16
    assert on_disk["vocab"].dtype == np.int64


def test_card_fields(tmp_path):
    card = {**CARD, "task": "classification"}
    path = save_checkpoint(tmp_path / "m.safetensors", {"w": np.ones(3)}, card)
    written = json.loads(path.with_suffix(".json").read_text())
    assert written["model"] == "tabswift" and written["config"] == CARD["config"]
    assert written["task"] == "classification"
    assert written["file"] == "m.safetensors"
    assert written["sha256"] == sha256_file(path) == hashlib.sha256(path.read_bytes()).hexdigest()
    assert written["size_bytes"] == path.stat().st_size
    assert written["storage_dtype"] == "float16"
    assert "sha256" not in card  # the caller's card is not modified
    assert load_checkpoint(path).card == written


def test_storage_dtype_none_keeps_precision(tmp_path):
    values = np.array([1 / 3, 1e-6])
    path = _save(tmp_path / "m", {"w": values}, storage_dtype=None)
    assert safetensors.numpy.load_file(path)["w"].dtype == np.float64
    assert json.loads(path.with_suffix(".json").read_text())["storage_dtype"] is None
    np.testing.assert_array_equal(load_checkpoint(path).state["w"], values.astype(np.float32))


@pytest.mark.parametrize(
    "card",
    [
        {"config": {}},
        {"model": 1, "config": {}},
        {"model": "m"},
        {"model": "m", "config": []},
        {"model": "m", "config": {"f": object()}},
        ["model", "config"],
    ],
)
def test_invalid_card(tmp_path, card):
    with pytest.raises(ValueError, match="card"):
        save_checkpoint(tmp_path / "m", {"w": np.ones(2)}, card)
    assert not (tmp_path / "m.safetensors").exists()


def test_invalid_storage_dtype_and_state(tmp_path):
    with pytest.raises(ValueError, match="storage_dtype"):
        _save(tmp_path / "m", storage_dtype="int8")
    with pytest.raises(ValueError, match="unsupported dtype"):
        _save(tmp_path / "m", {"names": np.array(["a", "b"], dtype=object)})


# -- resolution -------------------------------------------------------------------------


def test_load_by_name_from_home(home):
    path = _save(home / "tiny")
    ckpt = load_checkpoint("tiny")
    assert ckpt.path == path.resolve()
    assert load_checkpoint("tiny.safetensors") is ckpt
    assert load_checkpoint(path) is ckpt
    assert load_checkpoint(str(path.with_suffix(""))) is ckpt


def test_shipped_name_wins_over_cache(home):
    shipped = registry._shipped_dir()
    _save(shipped / "tiny", {"w": np.zeros(2)})
    _save(home / "tiny", {"w": np.ones(2)})
    ckpt = load_checkpoint("tiny")
    assert ckpt.path.parent == shipped.resolve()
    np.testing.assert_array_equal(ckpt.state["w"], [0, 0])


def test_shipped_dir_is_the_package_folder():
    shipped = REAL_SHIPPED_DIR()
    assert shipped.name == "weights" and shipped.parent.name == "skfm"
    assert (shipped / "__init__.py").is_file()


def test_skfm_home(monkeypatch, tmp_path):
    assert skfm_home() == tmp_path / "home"
    monkeypatch.delenv("SKFM_HOME")
    assert skfm_home().parts[-2:] == (".cache", "skfm")


def test_unknown_name_lists_alternatives(home):
    _save(registry._shipped_dir() / "alpha")
    _save(home / "beta")
    with pytest.raises(ValueError, match=r"'gamma'.*alpha \(shipped\), beta \(cache\)"):
        load_checkpoint("gamma")


@pytest.mark.parametrize("name", ["", "missing/dir/model.safetensors", "."])
def test_unknown_path(name):
    with pytest.raises(ValueError, match="Unknown checkpoint.*Available checkpoints: none"):
        load_checkpoint(name)


def test_list_checkpoints(home):
    assert list_checkpoints() == []
    _save(registry._shipped_dir() / "b-shipped")
    _save(home / "a-cached")
    (home / "orphan.safetensors").write_bytes(b"no card")
    listing = list_checkpoints()
    assert [(c["name"], c["location"]) for c in listing] == [
        ("b-shipped", "shipped"),
        ("a-cached", "cache"),
        ("orphan", "cache"),
    ]
    assert listing[0]["model"] == "tabswift" and "sha256" in listing[1]
    assert set(listing[2]) == {"name", "location"}


# -- integrity --------------------------------------------------------------------------


def test_tampered_byte(tmp_path):
    path = _save(tmp_path / "m", {"w": np.arange(8.0)})
    data = bytearray(path.read_bytes())
    data[-1] ^= 0xFF
    path.write_bytes(bytes(data))
    with pytest.raises(ValueError, match=r"changed or corrupted.*sha256") as info:
        load_checkpoint(path)
    card = json.loads(path.with_suffix(".json").read_text())
    assert card["sha256"] in str(info.value) and sha256_file(path) in str(info.value)


def test_truncated_file(tmp_path):
    path = _save(tmp_path / "m", {"w": np.arange(64.0)})
    path.write_bytes(path.read_bytes()[:-10])
    with pytest.raises(ValueError, match="sha256"):
        load_checkpoint(path)
    _rewrite_card_sha(path)
    with pytest.raises(ValueError, match="not a valid safetensors file") as info:
        load_checkpoint(path)
    assert isinstance(info.value.__cause__, safetensors.SafetensorError)


@pytest.mark.parametrize("content", [b"", b"not a safetensors file at all"])
def test_empty_or_foreign_file(tmp_path, content):
    path = _save(tmp_path / "m")
    path.write_bytes(content)
    _rewrite_card_sha(path)
    with pytest.raises(ValueError, match="is empty|not a valid safetensors file"):
        load_checkpoint(path)


class _Payload:
    """Unpickling this object would create ``marker``."""

    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (open, (str(self.marker), "w"))


def test_pickle_disguised_as_safetensors_is_never_unpickled(tmp_path):
    """A pickle (or torch.save file) named .safetensors, with a matching card, is refused."""
    import pickle

    marker = tmp_path / "code-ran"
    path = _save(tmp_path / "m")
    path.write_bytes(pickle.dumps({"w": _Payload(marker)}))
    _rewrite_card_sha(path)
    with pytest.raises(ValueError, match="not a valid safetensors file"):
        load_checkpoint(path)
    torch.save({"w": torch.ones(2)}, path)
    _rewrite_card_sha(path)
    with pytest.raises(ValueError, match="not a valid safetensors file"):
        load_checkpoint(path)
    assert not marker.exists()


def test_bfloat16_file_written_by_torch(tmp_path):
    path = tmp_path / "m.safetensors"
    safetensors.torch.save_file({"w": torch.tensor([1.5, -2.0], dtype=torch.bfloat16)}, path)
    path.with_suffix(".json").write_text(json.dumps({**CARD, "sha256": sha256_file(path)}))
    w = load_checkpoint(path).state["w"]
    assert w.dtype == np.float32 and w.tolist() == [1.5, -2.0]


def test_missing_card(tmp_path):
    path = _save(tmp_path / "m")
    path.with_suffix(".json").unlink()
    with pytest.raises(ValueError, match=r"no card.*m\.json"):
        load_checkpoint(path)


@pytest.mark.parametrize("text", ["{not json", '{"model": "m"}', "[1, 2]"])
def test_invalid_card_on_load(tmp_path, text):
    path = _save(tmp_path / "m")
    path.with_suffix(".json").write_text(text)
    with pytest.raises(ValueError, match="card"):
        load_checkpoint(path)


# -- caching ----------------------------------------------------------------------------


def test_cached_and_read_only(tmp_path):
    path = _save(tmp_path / "m", {"w": np.arange(3.0), "i": np.arange(3)})
    ckpt = load_checkpoint(path)
    assert load_checkpoint(str(path)) is ckpt
    for array in ckpt.state.values():
        assert not array.flags.writeable
        with pytest.raises(ValueError, match="read-only"):
            array[0] = 10
    with pytest.raises(dataclasses.FrozenInstanceError):
        ckpt.name = "other"


def test_cache_sees_new_contents(tmp_path):
    path = _save(tmp_path / "m", {"w": np.arange(3.0)})
    first = load_checkpoint(path)
    _save(path, {"w": np.arange(5.0)})
    second = load_checkpoint(path)
    assert second is not first
    np.testing.assert_array_equal(second.state["w"], np.arange(5.0))


# -- hub --------------------------------------------------------------------------------

HUB_ID = "hf://owner/repo/tiny.safetensors"


def _fake_hub(monkeypatch, hf_hub_download):
    module = types.ModuleType("huggingface_hub")
    module.hf_hub_download = hf_hub_download
    monkeypatch.setitem(sys.modules, "huggingface_hub", module)


def test_hub_without_huggingface_hub(monkeypatch):
    monkeypatch.setitem(sys.modules, "huggingface_hub", None)
    with pytest.raises(ValueError, match=r"hub could not be reached.*not installed.*offline"):
        load_checkpoint(HUB_ID)


def test_hub_offline(monkeypatch):
    def offline(**kwargs):
        raise OSError("Connection refused")

    _fake_hub(monkeypatch, offline)
    with pytest.raises(ValueError, match=r"hub could not be reached.*Connection refused.*offline"):
        load_checkpoint(HUB_ID)


def test_hub_download_then_reuse(monkeypatch, tmp_path, home):
    remote = tmp_path / "remote"
    _save(remote / "tiny", {"w": np.arange(4.0)})
    calls = []

    def download(repo_id, filename, local_dir):
        calls.append((repo_id, filename))
        target = local_dir / filename
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(remote / filename, target)
        return str(target)

    _fake_hub(monkeypatch, download)
    ckpt = load_checkpoint(HUB_ID)
    assert calls == [("owner/repo", "tiny.safetensors"), ("owner/repo", "tiny.json")]
    assert ckpt.path == (home / "hub" / "owner" / "repo" / "tiny.safetensors").resolve()
    np.testing.assert_array_equal(ckpt.state["w"], np.arange(4.0))
    assert load_checkpoint(HUB_ID) is ckpt
    assert len(calls) == 2


@pytest.mark.parametrize("hub_id", ["hf://owner/tiny.safetensors", "hf://owner/repo/../x"])
def test_invalid_hub_id(hub_id):
    with pytest.raises(ValueError, match="Invalid hub id"):
        load_checkpoint(hub_id)


# ---- one loader for every model family ---------------------------------------------------


def _families():
    from skfm.tabular.base import TABSWIFT
    from skfm.timeseries.forecasting.loading import BACKBONE
    from skfm.timeseries.mantis.loading import MANTIS

    return [TABSWIFT, MANTIS, BACKBONE]


@pytest.mark.parametrize("index", range(3))
def test_random_config_for_every_family(index):
    """``random:<config>`` builds every family's architecture at seed 0, the same every time,
    without touching the global random state."""
    from skfm._weights import fresh_model, load_named_config, load_weights, shared_model
    from skfm._weights.loader import clear_cache

    family = _families()[index]
    # The shared modules and the weights are two LRU caches; other tests' loads (in random
    # order) can evict the weights but not the module, whose card is then an equal copy.
    clear_cache()
    before = torch.random.get_rng_state()
    weights = load_weights("random:tiny", family)
    assert weights.card == {"model": family.name,
                            "config": load_named_config(family.name, "tiny")["model"],
                            "weights": "random initialisation, seed 0"}
    module, card = shared_model("random:tiny", family, "cpu")
    assert card is weights.card and shared_model("random:tiny", family, "cpu")[0] is module
    assert not module.training and not any(p.requires_grad for p in module.parameters())
    fresh = fresh_model("random:tiny", family)
    assert fresh is not module and fresh_model("random:tiny", family) is not fresh
    for key, value in fresh.state_dict().items():
        np.testing.assert_array_equal(value.numpy(), weights.state[key])
    assert torch.equal(torch.random.get_rng_state(), before)


def test_random_tabswift_draws_its_output_projections():
    """TabSwift's output projections start at zero; its random baseline draws them too (as
    the former benchmarks/random_init_checkpoint.py did)."""
    from skfm._weights import load_named_config, load_weights
    from skfm.tabular.base import TABSWIFT
    from skfm.tabular.model import TabSwift, TabSwiftConfig

    config = load_named_config("tabswift", "small")["model"]
    torch.manual_seed(0)
    expected = TabSwift(TabSwiftConfig(**config))
    for name, p in expected.named_parameters():
        if name.endswith(("attn.out.weight", "ffn.2.weight")):
            torch.nn.init.normal_(p, std=0.02)
    state = load_weights("random:small", TABSWIFT).state
    for key, value in expected.state_dict().items():
        np.testing.assert_array_equal(value.numpy(), state[key])
    assert np.abs(state["blocks.0.attn.out.weight"]).max() > 0


def test_loader_refuses_another_familys_checkpoint(monkeypatch):
    from skfm._weights import load_weights

    monkeypatch.setattr(registry, "_shipped_dir", REAL_SHIPPED_DIR)
    tabswift, mantis, backbone = _families()
    with pytest.raises(ValueError, match="holds a 'tabswift' model, not mantis"):
        load_weights("tabswift-v2", mantis)
    with pytest.raises(ValueError, match="holds a 'mantis' model, not a timeseries-backbone"):
        load_weights("mantis-v2", backbone)
    with pytest.raises(ValueError, match="unknown pretraining config 'huge'"):
        load_weights("random:huge", tabswift)


def test_saved_cards_name_the_package_licence_unless_given(tmp_path):
    """A checkpoint written by skfm ships under the package's licence (tests/test_package_data.py
    requires every data file in the wheel to name one); a card may name another."""
    import numpy as np

    from skfm._weights import save_checkpoint

    default = save_checkpoint(tmp_path / "a", {"w": np.ones(2)}, {"model": "m", "config": {}})
    given = save_checkpoint(tmp_path / "b", {"w": np.ones(2)},
                            {"model": "m", "config": {}, "licence": "CC0-1.0"})
    assert json.loads(default.with_suffix(".json").read_text())["licence"] == "BSD-3-Clause"
    assert json.loads(given.with_suffix(".json").read_text())["licence"] == "CC0-1.0"


def test_every_shipped_card_has_a_learning_curve():
    """Each shipped card records its evaluations over the run (at least the final one), so a
    next run can tell whether more compute pays."""
    from importlib import resources

    for card_path in resources.files("skfm.weights").iterdir():
        if card_path.name.endswith(".json"):
            card = json.loads(card_path.read_text())
            assert card.get("learning_curve"), card_path.name
            assert all("step" in point for point in card["learning_curve"]), card_path.name
