"""Progress bars: ``verbose`` turns them on, ``SKFM_PROGRESS=0`` silences every one of them."""

import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from sklearn.gaussian_process import GaussianProcessRegressor

import skfm
from skfm import TabMGPRegressor
from skfm._progress import ENV_VAR, progress_enabled
from skfm.relational import Database, RDBEncoder


@pytest.mark.parametrize("value", ["0", "false", "No", " off "])
def test_env_var_switches_progress_off(monkeypatch, value):
    monkeypatch.setenv(ENV_VAR, value)
    assert not progress_enabled(True)


@pytest.mark.parametrize("value", [None, "1", "true", ""])
def test_verbose_decides_unless_switched_off(monkeypatch, value):
    if value is None:
        monkeypatch.delenv(ENV_VAR, raising=False)
    else:
        monkeypatch.setenv(ENV_VAR, value)
    assert progress_enabled(True) and progress_enabled(1)
    assert not progress_enabled(False)


def _fit_tabmgp(verbose):
    rng = np.random.default_rng(0)
    X = rng.standard_normal((20, 2))
    y = X @ [1.0, -1.0] + 0.1 * rng.standard_normal(20)
    mgp = TabMGPRegressor(GaussianProcessRegressor(alpha=0.1, optimizer=None), n_rollouts=2,
                          horizon=10, verbose=verbose)
    return mgp.fit(X, y)


def test_tabmgp_bar_follows_verbose_and_the_env_var(monkeypatch, capsys):
    monkeypatch.delenv(ENV_VAR, raising=False)
    _fit_tabmgp(verbose=True)
    assert "TabMGP rollouts" in capsys.readouterr().err
    _fit_tabmgp(verbose=False)
    assert capsys.readouterr().err == ""
    monkeypatch.setenv(ENV_VAR, "0")
    _fit_tabmgp(verbose=True)
    assert capsys.readouterr().err == ""


def test_rdb_encoder_duckdb_bar_follows_verbose_and_the_env_var(monkeypatch, capfd):
    rng = np.random.default_rng(0)
    n = 50_000
    orders = pd.DataFrame({"order_id": np.arange(n), "user_id": rng.integers(0, 100, n),
                           "amount": rng.random(n)})
    db = (Database()
          .add_table("users", pd.DataFrame({"user_id": np.arange(100)}), primary_key="user_id")
          .add_table("orders", orders, primary_key="order_id", foreign_keys={"user_id": "users"}))
    X = pd.DataFrame({"user_id": np.arange(100)})
    con = db.duckdb_connection()

    def encode(verbose):
        RDBEncoder(db, "users", aggregations=("count", "mean"), verbose=verbose).fit_transform(X)
        return con.execute("SELECT current_setting('enable_progress_bar')").fetchone()[0]

    # the setting the encoder's queries ran with
    monkeypatch.delenv(ENV_VAR, raising=False)
    assert encode(verbose=False) is False
    monkeypatch.setenv(ENV_VAR, "0")
    assert encode(verbose=True) is False
    monkeypatch.delenv(ENV_VAR)
    con.execute("SET progress_bar_time = 0")  # and the bar drawn, even for a query this short
    capfd.readouterr()
    assert encode(verbose=True) is True
    assert "100%" in capfd.readouterr().out


def test_every_bar_of_the_package_is_made_by_the_one_helper():
    package = Path(skfm.__file__).parent
    users = [path.relative_to(package).as_posix() for path in package.rglob("*.py")
             if re.search(r"^\s*(from|import) tqdm", path.read_text(), re.M)]
    assert users == ["_progress.py"]
