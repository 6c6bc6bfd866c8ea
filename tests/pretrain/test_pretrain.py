"""Pretraining loop: logging, resuming, export to a shipped-format checkpoint, CLI."""

import json
import math

import numpy as np
import pytest
import torch
from pretraining_runs import four_then_six_steps, read_log, train_tiny

from skfm import TabSwiftClassifier, TabSwiftRegressor
from skfm._backend import threads
from skfm._weights import load_checkpoint, sha256_file
from skfm.cli import main
from skfm.pretrain import tabswift
from skfm.pretrain.tabswift import export, load_config
from skfm.tabular.model import TabSwift, TabSwiftConfig

pytestmark = pytest.mark.usefixtures("one_thread")


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """A tiny run: 4 steps, then resumed to 6; logs and states captured at both points."""
    return four_then_six_steps(tabswift, tmp_path_factory.mktemp("run"))


@pytest.fixture(scope="module")
def exported(run, tmp_path_factory):
    path = export(run["state_path"], tmp_path_factory.mktemp("export") / "m.safetensors")
    return path


def test_train_writes_state_and_log(run):
    """After 4 steps: state.pt at step 4 and one log record per step, evals every 2 steps."""
    first = run["first"]
    assert run["state_path"].name == "state.pt"
    assert first["state"]["step"] == 4
    assert set(first["state"]) >= {"model", "ema", "optim", "generator", "config", "seed"}
    records = first["log"]
    assert [r["step"] for r in records] == [1, 2, 3, 4]
    assert ["eval_ema" in r for r in records] == [False, True, False, True]
    for r in records:
        assert r["task"] in {"classification", "regression"}
        assert math.isfinite(r["loss_final"]) and r["loss_final"] > 0
        assert 32 <= r["rows"] <= 64
    evals = records[-1]["eval_ema"]
    assert set(evals) == {"classification_loss", "classification_acc", "regression_loss"}
    assert all(math.isfinite(v) for v in evals.values())


def test_resume_continues_from_saved_step(run):
    """Resuming to 6 steps appends steps 5 and 6 to the log and saves step 6."""
    records = read_log(run["out"])
    assert [r["step"] for r in records] == [1, 2, 3, 4, 5, 6]
    assert records[:4] == run["first"]["log"]
    state = torch.load(run["state_path"], weights_only=True)
    assert state["step"] == 6
    assert state["wall_seconds"] > run["first"]["state"]["wall_seconds"]
    changed = [
        not torch.equal(state["model"][k], run["first"]["state"]["model"][k])
        for k in state["model"]
    ]
    assert any(changed)


def test_resume_restores_the_data_stream(run, tmp_path):
    """Steps 5-6 after a resume see the tasks and sizes of an uninterrupted run."""
    train_tiny(tabswift, tmp_path, 6)
    straight = read_log(tmp_path)
    resumed = read_log(run["out"])
    assert [(r["task"], r["rows"]) for r in straight] == [(r["task"], r["rows"]) for r in resumed]


def test_training_again_to_the_same_step_does_nothing(run, tmp_path):
    """A finished run is not trained further (nor logged again) when called with its steps."""
    import shutil

    out = tmp_path / "copy"
    shutil.copytree(run["out"], out)
    train_tiny(tabswift, out, 6)
    assert len(read_log(out)) == 6
    assert torch.load(out / "state.pt", weights_only=True)["step"] == 6


def test_export_writes_card(run, exported):
    """The card records the model, its config, the training steps and the file's sha256."""
    card = json.loads(exported.with_suffix(".json").read_text())
    assert card["model"] == "tabswift"
    assert card["config"] == load_config("tiny")["model"]
    assert card["training"]["steps"] == 6
    assert card["training"]["datasets_seen"] == 6 * load_config("tiny")["optim"]["batch_size"]
    assert card["sha256"] == sha256_file(exported)
    assert set(card["held_out_prior"]) == {
        "classification_loss", "classification_acc", "regression_loss"
    }


def test_card_hardware_is_the_training_runs(run):
    """The card names the run's threads and device, not those of the exporting process."""
    from skfm._backend import threads
    from skfm.pretrain._loop import training_card

    state = torch.load(run["state_path"], weights_only=True)
    assert (state["threads"], state["device"]) == (1, "cpu")  # the run used threads=1
    with threads(2):
        hardware = training_card(state, "datasets")["hardware"]
    assert ", cpu, 1 threads," in hardware


def test_exported_weights_are_the_ema(run, exported):
    """The checkpoint loads and holds the EMA weights (up to float16 storage)."""
    ckpt = load_checkpoint(exported)
    ema = torch.load(run["state_path"], weights_only=True)["ema"]
    assert set(ckpt.state) == set(ema)
    for k, v in ema.items():
        np.testing.assert_allclose(ckpt.state[k], v.numpy(), rtol=1e-3, atol=1e-4)
    model = TabSwift(TabSwiftConfig(**ckpt.card["config"]))
    model.load_state_dict({k: torch.from_numpy(np.array(v)) for k, v in ckpt.state.items()})


def test_exported_checkpoint_drives_the_estimators(exported):
    """TabSwiftClassifier/Regressor fit and predict with the freshly exported checkpoint."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 6))
    y = (X[:, 0] > 0).astype(int)
    clf = TabSwiftClassifier(n_estimators=1, checkpoint=str(exported), device="cpu").fit(X, y)
    proba = clf.predict_proba(X[:10])
    assert proba.shape == (10, 2)
    np.testing.assert_allclose(proba.sum(1), 1.0, rtol=1e-6)
    assert set(clf.predict(X[:10])) <= {0, 1}
    reg = TabSwiftRegressor(n_estimators=1, checkpoint=str(exported), device="cpu")
    pred = reg.fit(X, X[:, 1]).predict(X[:10])
    assert pred.shape == (10,) and np.isfinite(pred).all()


def test_cli_pretrain_and_export(tmp_path):
    """``skfm pretrain tabswift ... --export`` trains, exports and records the command."""
    out, target = tmp_path / "cli", tmp_path / "cli.safetensors"
    main(["pretrain", "tabswift", "--config", "tiny", "--steps", "2", "--out", str(out),
          "--export", str(target), "--quiet", "--device", "cpu", "--threads", "1"])
    assert (out / "state.pt").is_file() and (out / "log.jsonl").is_file()
    assert target.is_file()
    card = json.loads(target.with_suffix(".json").read_text())
    assert card["command"].startswith("skfm pretrain")
    assert card["training"]["steps"] == 2
    assert len(read_log(out)) == 2


def test_cli_card_records_the_given_arguments(tmp_path, monkeypatch):
    """The card's command reflects the arguments given to ``main``."""
    monkeypatch.setattr("sys.argv", ["pytest"])
    target = tmp_path / "cli.safetensors"
    main(["pretrain", "tabswift", "--config", "tiny", "--steps", "1", "--out",
          str(tmp_path / "cli"), "--export", str(target), "--quiet", "--device", "cpu",
          "--threads", "1"])
    card = json.loads(target.with_suffix(".json").read_text())
    assert "--steps 1" in card["command"] and "tabswift" in card["command"]


def test_load_config_names_and_paths(tmp_path):
    """Shipped names load; a json path loads; an unknown name raises ValueError."""
    tiny = load_config("tiny")
    assert set(tiny) == {"model", "prior", "optim"}
    assert load_config("small")["model"]["d_model"] > tiny["model"]["d_model"]
    path = tmp_path / "mine.json"
    path.write_text(json.dumps(tiny))
    assert load_config(path) == tiny
    assert load_config(str(path)) == tiny
    with pytest.raises(ValueError, match="unknown pretraining config 'huge'"):
        load_config("huge")


def test_shared_loop_schedule():
    """Warmup reaches the peak, the cosine ends at its floor."""
    from skfm.pretrain import _loop

    settings = _loop.OptimSettings(lr=1.0, weight_decay=0.0, warmup=4, grad_clip=1.0,
                                   ema_decay=0.9, min_lr_ratio=0.1)
    lrs = [settings.lr_at(step, 20) for step in range(21)]
    assert lrs[:4] == [0.25, 0.5, 0.75, 1.0]
    assert all(a >= b for a, b in zip(lrs[3:-1], lrs[4:], strict=True))
    assert lrs[-1] == pytest.approx(0.1)


def test_log_records_the_learning_rate(run):
    """Every step's record carries the scheduled learning rate (warmup 2, peak 1e-3)."""
    records = read_log(run["out"])
    assert records[1]["lr"] == pytest.approx(1e-3)
    assert records[-1]["lr"] < records[1]["lr"]


def test_init_starts_from_an_exported_checkpoint(exported, tmp_path):
    """``--init`` loads the weights before the first step and the card records where from."""
    out, target = tmp_path / "init", tmp_path / "init.safetensors"
    main(["pretrain", "tabswift", "--config", "tiny", "--steps", "1", "--out", str(out),
          "--init", str(exported), "--export", str(target), "--quiet", "--device", "cpu",
          "--threads", "1"])
    card = json.loads(target.with_suffix(".json").read_text())
    assert card["init"]["sha256"] == sha256_file(exported)
    assert card["init"]["steps"] == 6 and "--init" in card["command"]
    state = torch.load(out / "state.pt", weights_only=True)
    start = load_checkpoint(str(exported)).state
    # one step at warmup's small learning rate: close to the initial weights, not equal
    moved = torch.cat([(state["model"][k].float() - torch.from_numpy(v.copy()).float()).abs().flatten()
                       for k, v in start.items()])
    assert 0 < float(moved.max()) < 0.05
    with pytest.raises(ValueError, match="holds a 'mantis' model"):
        main(["pretrain", "tabswift", "--config", "tiny", "--steps", "1", "--out",
              str(tmp_path / "bad"), "--init", "mantis-v2", "--quiet"])


def test_card_records_the_learning_curve(run, exported):
    """Every evaluation of the log (every 2 steps of 6) is a point of the card's learning curve."""
    curve = json.loads(exported.with_suffix(".json").read_text())["learning_curve"]
    assert [point["step"] for point in curve] == [2, 4, 6]
    assert all(math.isfinite(point["classification_loss"]) for point in curve)


def test_curriculum_grows_the_rows_and_shrinks_the_batch(tmp_path):
    """Steps of a later curriculum stage draw its row count and batch size."""
    config = load_config("tiny")
    config["prior"].update(min_rows=32, max_rows=32)
    config["curriculum"] = [{"from_step": 2, "prior": {"min_rows": 48, "max_rows": 48},
                             "batch_size": 2}]
    tabswift.train(config, steps=4, out=tmp_path, device="cpu", save_every=2, eval_every=2,
                   progress=False, threads=1)
    assert [r["rows"] for r in read_log(tmp_path)] == [32, 32, 48, 48]
    card_path = export(tmp_path / "state.pt", tmp_path / "m.safetensors")
    assert json.loads(card_path.with_suffix(".json").read_text())["curriculum"] == config["curriculum"]


def test_curriculum_stages_must_be_in_order():
    config = {**load_config("tiny"), "curriculum": [{"from_step": 5}, {"from_step": 2}]}
    with pytest.raises(ValueError, match="increasing from_step"):
        tabswift.stage_at(config, 0)


def test_screen_scores_the_weights_on_real_tables(exported, tmp_path):
    """The quick screen fits one TabSwift member per table and reports each ROC-AUC and the mean."""
    from skfm.pretrain.screen import tabular_screen

    rng = np.random.default_rng(0)
    for name, n_classes in (("two", 2), ("three", 3)):
        X = rng.normal(size=(60, 4)).astype(np.float32)
        y = np.digitize(X[:, 0], np.quantile(X[:, 0], np.linspace(0, 1, n_classes + 1)[1:-1]))
        np.savez(tmp_path / f"{name}.npz", X=X, y=y)
    model = TabSwift(TabSwiftConfig(**load_checkpoint(exported).card["config"]))
    scores = tabular_screen(model, tmp_path, tables=("two", "three"))
    assert set(scores) == {"screen_roc_auc", "screen_seconds", "screen_two", "screen_three"}
    assert 0 <= scores["screen_two"] <= 1 and 0 <= scores["screen_three"] <= 1
    assert scores["screen_roc_auc"] == pytest.approx((scores["screen_two"] + scores["screen_three"]) / 2,
                                                     abs=1e-4)


def test_cli_screen_is_only_for_tabswift_and_mantis(tmp_path):
    with pytest.raises(SystemExit, match="--screen is supported for tabswift, mantis, not "
                                         "timeseries-backbone"):
        main(["pretrain", "timeseries-backbone", "--config", "tiny", "--steps", "1", "--out", str(tmp_path),
              "--screen", str(tmp_path), "--quiet"])


def test_screens_default_to_every_table_of_their_folder(exported, tmp_path):
    """Without a list the classification screen scores every table of its folder; the regression
    screen scores R2 on its own folder (the network alone in both)."""
    from skfm.pretrain.screen import regression_screen, tabular_screen

    rng = np.random.default_rng(1)
    (tmp_path / "clf").mkdir()
    (tmp_path / "reg").mkdir()
    for name in ("a", "b"):
        X = rng.normal(size=(60, 3)).astype(np.float32)
        np.savez(tmp_path / "clf" / f"{name}.npz", X=X, y=(X[:, 0] > 0).astype(int))
        np.savez(tmp_path / "reg" / f"{name}.npz", X=X, y=2 * X[:, 0] + 0.1 * rng.normal(size=60))
    model = TabSwift(TabSwiftConfig(**load_checkpoint(exported).card["config"]))
    assert {"screen_a", "screen_b"} <= set(tabular_screen(model, tmp_path / "clf"))
    scores = regression_screen(model, tmp_path / "reg")
    # keys of their own: a regression table may share its name with a CC18 one ("diabetes")
    assert {"screen_r2", "screen_r2_a", "screen_r2_b", "screen_r2_seconds"} == set(scores)
    assert scores["screen_r2"] == pytest.approx((scores["screen_r2_a"] + scores["screen_r2_b"]) / 2,
                                                abs=1e-4)
    with pytest.raises(FileNotFoundError, match="no .npz regression tables"):
        regression_screen(model, tmp_path)
    with pytest.raises(FileNotFoundError, match="no .npz classification tables"):
        tabular_screen(model, tmp_path)  # not a mean of no scores (NaN) in the learning curve


def test_cli_regression_screen_is_only_for_tabswift(tmp_path):
    with pytest.raises(SystemExit, match="--regression-screen is supported for tabswift, not mantis"):
        main(["pretrain", "mantis", "--config", "tiny", "--steps", "1", "--out", str(tmp_path),
              "--regression-screen", str(tmp_path), "--quiet"])


def test_a_compact_state_resumes_the_run(tmp_path):
    """The committed copy of a long run's state (float16 weights, bfloat16 moments) is a
    state.pt the run resumes from: same step, weights within float16's rounding."""
    import shutil

    from skfm.pretrain._loop import compact_state

    config = load_config("tiny")
    with threads(1):
        state = tabswift.train(config, steps=2, out=tmp_path / "a", progress=False)
        small = compact_state(state, tmp_path / "small.pt")
        assert small.stat().st_size < 0.6 * state.stat().st_size
        (tmp_path / "b").mkdir()
        shutil.copy(small, tmp_path / "b" / "state.pt")
        resumed = tabswift.train(config, steps=3, out=tmp_path / "b", progress=False)
    full, after = (torch.load(p, weights_only=True) for p in (state, resumed))
    assert after["step"] == 3
    assert {v.dtype for v in after["model"].values() if v.is_floating_point()} == {torch.float32}
    for name, value in full["model"].items():
        if value.is_floating_point():  # one more step moves each weight by about lr at most
            torch.testing.assert_close(after["model"][name], value, atol=5e-3, rtol=1e-2)


def test_a_step_with_a_non_finite_gradient_changes_nothing(tmp_path):
    """One NaN loss must not poison the weights (a real-table task once did, at step 2,059 of
    the tabswift-v4 run): the step is skipped, logged, and training goes on."""
    from skfm.pretrain._loop import OptimSettings, train_loop

    torch.manual_seed(0)
    net = torch.nn.Linear(3, 1)

    def step_fn(step, gen):
        x = torch.randn(8, 3, generator=gen)
        loss = ((net(x) - x.sum(1, keepdim=True)) ** 2).mean()
        return (loss * float("nan") if step == 2 else loss), {}, {}

    settings = OptimSettings(lr=0.1, weight_decay=0.0, warmup=1, grad_clip=1.0, ema_decay=0.5)
    train_loop(net, step_fn, config={}, optim=settings, steps=4, out=tmp_path, progress=False)
    records = [json.loads(line) for line in (tmp_path / "log.jsonl").read_text().splitlines()]
    assert [r.get("skipped") for r in records] == [None, None, "non-finite", None]
    state = torch.load(tmp_path / "state.pt", weights_only=True)
    assert all(torch.isfinite(v).all() for v in (*state["model"].values(), *state["ema"].values()))


def test_init_grows_a_checkpoint_into_a_larger_config(exported, tmp_path):
    """A config with more layers and wider blocks than ``--init``'s checkpoint starts from it;
    the card says what grew; a narrower residual stream is refused."""
    from skfm.pretrain.tabswift import train

    config = load_config("tiny")
    tiny = config["model"]
    grown = {**config, "model": {**tiny, "n_layers": tiny["n_layers"] + 1,
                                 "ffn_factor": 2 * tiny["ffn_factor"]}}
    train(grown, steps=1, out=tmp_path / "grown", init=str(exported), progress=False, threads=1,
          save_every=1, eval_every=10)
    state = torch.load(tmp_path / "grown" / "state.pt", weights_only=True)
    record = state["config"]["init"]
    assert f"blocks.{tiny['n_layers']}.attn.out.weight: new" in record["grown"]
    assert record["sha256"] == sha256_file(exported)
    narrower = {**config, "model": {**tiny, "d_model": 2 * tiny["d_model"]}}
    with pytest.raises(ValueError, match="cannot grow d_model"):
        train(narrower, steps=1, out=tmp_path / "wide", init=str(exported), progress=False)
