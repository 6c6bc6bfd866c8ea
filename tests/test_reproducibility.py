"""Same ``random_state``, same bits: across processes, thread settings and concurrent callers.

Every public estimator is fitted on small fixed data in two fresh Python processes, one
with one torch thread and ``n_jobs=1``, the other with two threads and ``n_jobs=2``;
the sha256 of every output must be equal. The exception is training in torch (Mantis
``fine_tuning="head"``/``"full"``): its float32 reductions depend on the thread count,
so it is bit-identical across processes at one thread setting (``-m slow``), not across
settings. Then two threads predict at once with one fitted estimator (and with a freshly
unpickled one, whose torch cache is rebuilt concurrently) and must give the
single-thread result, bit for bit.
"""

from __future__ import annotations

import json
import pickle
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from skfm import (
    Database,
    MantisTimeSeriesClassifier,
    RDBEncoder,
    SPNClassifier,
    TabMGPRegressor,
    TabSwiftClassifier,
    TabSwiftRegressor,
)

OUTPUT_DIGESTS = r"""
import hashlib, json, sys
import numpy as np, pandas as pd, torch

torch.set_num_threads(int(sys.argv[1]))
n_jobs = int(sys.argv[2])
from skfm import (Database, MantisTimeSeriesClassifier, RDBEncoder, SPNClassifier,
                  TabMGPRegressor, TabSwiftClassifier, TabSwiftRegressor)

def digest(array):
    return hashlib.sha256(np.ascontiguousarray(np.asarray(array, dtype=np.float64))).hexdigest()

rng = np.random.default_rng(0)
X = rng.normal(size=(60, 4)); X[::7, 1] = np.nan
y = (X[:, 0] + X[:, 2] > 0).astype(int); y_reg = X[:, 0] * 2 + rng.normal(size=60)
X_test = rng.normal(size=(25, 4))
out = {}
clf = TabSwiftClassifier(n_estimators=4, n_jobs=n_jobs, random_state=3).fit(X, y)
out["TabSwiftClassifier"] = digest(clf.predict_proba(X_test))
reg = TabSwiftRegressor(n_estimators=4, n_jobs=n_jobs, random_state=3).fit(X, y_reg)
out["TabSwiftRegressor"] = digest(np.c_[reg.predict(X_test), reg.predict(X_test, "quantiles"),
                                         reg.sample_y(X_test, 3, random_state=5)])
spn = SPNClassifier(TabSwiftClassifier(n_estimators=2, n_jobs=n_jobs), random_state=3).fit(X, y)
out["SPNClassifier"] = digest(np.c_[spn.predict_proba(X_test), spn.best_response(X_test)])
mgp = TabMGPRegressor(TabSwiftRegressor(n_estimators=2, n_jobs=n_jobs), n_rollouts=4,
                      horizon=5, random_state=3).fit(X[:, [0, 2]], y_reg)
out["TabMGPRegressor"] = digest(mgp.posterior_samples_)
panel = rng.normal(size=(16, 2, 40)).cumsum(-1); labels = np.arange(16) % 2
mantis = MantisTimeSeriesClassifier(n_jobs=n_jobs, random_state=3).fit(panel, labels)
out["MantisTimeSeriesClassifier"] = digest(np.c_[mantis.transform(panel),
                                                 mantis.predict_proba(panel)])
tuned = MantisTimeSeriesClassifier(fine_tuning="head", max_epochs=3, n_jobs=n_jobs,
                                   random_state=3).fit(panel, labels)
out[TRAINED] = digest(tuned.predict_proba(panel))
users = pd.DataFrame({"user_id": range(6), "country": list("ababcc")})
orders = pd.DataFrame({"order_id": range(40), "user_id": rng.integers(0, 6, 40),
                       "amount": rng.normal(size=40),
                       "time": pd.Timestamp("2024-01-01") + pd.to_timedelta(rng.integers(0, 90, 40), "D")})
database = (Database().add_table("users", users, primary_key="user_id")
            .add_table("orders", orders, primary_key="order_id", foreign_keys={"user_id": "users"},
                       time_column="time"))
entities = pd.DataFrame({"user_id": [0, 1, 2, 3, 4, 5, 0],
                         "cutoff": pd.to_datetime(["2024-02-01"] * 6 + ["2024-03-01"])})
encoder = RDBEncoder(database, "users", cutoff_column="cutoff").fit(entities)
out["RDBEncoder"] = digest(encoder.transform(entities))
print(json.dumps(out))
"""


TRAINED = "MantisTimeSeriesClassifier(fine_tuning='head')"


def _digests(n_threads: int, n_jobs: int) -> dict[str, str]:
    script = OUTPUT_DIGESTS.replace("TRAINED", repr(TRAINED))
    result = subprocess.run(
        [sys.executable, "-c", script, str(n_threads), str(n_jobs)],
        capture_output=True, text=True, timeout=600, cwd=Path(__file__).parent,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def one_thread_digests() -> dict[str, str]:
    return _digests(1, 1)


def test_bit_identical_across_processes_and_thread_settings(one_thread_digests):
    """Two processes, 1 thread / n_jobs=1 and 2 threads / n_jobs=2: the same bits."""
    one, two = one_thread_digests, _digests(2, 2)
    assert set(one) == {
        "TabSwiftClassifier", "TabSwiftRegressor", "SPNClassifier", "TabMGPRegressor",
        "MantisTimeSeriesClassifier", "RDBEncoder", TRAINED,
    }
    differing = sorted(name for name in one if one[name] != two[name] and name != TRAINED)
    assert not differing, f"outputs differ between processes/thread settings: {differing}"


@pytest.mark.slow
def test_torch_training_bit_identical_across_processes(one_thread_digests):
    """Fine-tuning in torch, at one thread setting, gives the same bits in another process."""
    assert _digests(1, 1)[TRAINED] == one_thread_digests[TRAINED]


def _concurrently(call, n_threads: int = 2) -> list:
    """``call()`` in ``n_threads`` threads released together; their results, in order."""
    barrier = threading.Barrier(n_threads)
    results, errors = [None] * n_threads, []

    def worker(i):
        barrier.wait()
        try:
            results[i] = call()
        except Exception as err:  # re-raised in the main thread below
            errors.append(err)

    workers = [threading.Thread(target=worker, args=(i,)) for i in range(n_threads)]
    for thread in workers:
        thread.start()
    for thread in workers:
        thread.join()
    if errors:
        raise errors[0]
    return results


def _tabular():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(80, 5))
    return X, (X[:, 0] > 0).astype(int), rng.normal(size=(300, 5))


def _database():
    rng = np.random.default_rng(2)
    users = pd.DataFrame({"user_id": range(20), "segment": rng.choice(["a", "b"], 20)})
    orders = pd.DataFrame({"order_id": range(200), "user_id": rng.integers(0, 20, 200),
                           "amount": rng.normal(size=200)})
    database = (Database().add_table("users", users, primary_key="user_id")
                .add_table("orders", orders, primary_key="order_id",
                           foreign_keys={"user_id": "users"}))
    return database, pd.DataFrame({"user_id": rng.integers(0, 25, 50)})


def _fitted(name: str):
    """A fitted estimator and a function of it to call from several threads."""
    X, y, X_test = _tabular()
    if name == "TabSwiftClassifier":
        est = TabSwiftClassifier(n_estimators=2, n_jobs=1, batch_size=64).fit(X, y)
        return est, lambda e: e.predict_proba(X_test)
    if name == "TabSwiftRegressor":
        est = TabSwiftRegressor(n_estimators=2, n_jobs=1, batch_size=64).fit(X, X[:, 0])
        return est, lambda e: e.predict(X_test, output_type="quantiles")
    if name == "SPNClassifier":
        est = SPNClassifier(TabSwiftClassifier(n_estimators=1, n_jobs=1)).fit(X, y)
        return est, lambda e: e.predict_proba(X_test)
    if name == "TabMGPRegressor":
        est = TabMGPRegressor(TabSwiftRegressor(n_estimators=1, n_jobs=1), n_rollouts=2,
                              horizon=2).fit(X, X[:, 0])
        return est, lambda e: e.predict(X_test)
    if name == "MantisTimeSeriesClassifier":
        panel = np.random.default_rng(3).normal(size=(40, 1, 64)).cumsum(-1)
        est = MantisTimeSeriesClassifier(n_jobs=1).fit(panel[:20], np.arange(20) % 2)
        return est, lambda e: e.predict_proba(panel)
    database, entities = _database()
    est = RDBEncoder(database, "users").fit(entities)
    return est, lambda e: e.transform(entities)


ESTIMATOR_NAMES = ["TabSwiftClassifier", "TabSwiftRegressor", "SPNClassifier",
                   "TabMGPRegressor", "MantisTimeSeriesClassifier", "RDBEncoder"]


@pytest.mark.parametrize("name", ESTIMATOR_NAMES)
def test_two_threads_predict_like_one(name):
    """Two threads calling one fitted estimator (warm, then freshly unpickled) agree with one."""
    est, call = _fitted(name)
    expected = call(est)
    for result in _concurrently(lambda: call(est)):
        np.testing.assert_array_equal(result, expected)
    cold = pickle.loads(pickle.dumps(est))  # torch cache / DuckDB connection rebuilt on demand
    for result in _concurrently(lambda: call(cold)):
        np.testing.assert_array_equal(result, expected)
