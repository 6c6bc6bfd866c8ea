"""Batch inference over Dask collections on a dask.distributed LocalCluster."""


import numpy as np
import pandas as pd
import pytest

da = pytest.importorskip("dask.array")
dd = pytest.importorskip("dask.dataframe")
distributed = pytest.importorskip("distributed")

from skfm import (  # noqa: E402
    TabSwiftClassifier,
    TabSwiftRegressor,
    batch,
)


@pytest.fixture(scope="module")
def client():
    """Two workers in this process (threads): the same scheduler and pickling as processes."""
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster) as c:
        yield c


@pytest.fixture(scope="module")
def table():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 5))
    frame = pd.DataFrame(X, columns=[f"x{i}" for i in range(5)])
    frame["kind"] = pd.Categorical(rng.choice(["a", "b", "c"], 300))
    y = (X[:, 0] + (frame["kind"] == "a") > 0).astype(int)
    return frame, y


def test_dataframe_partitions_match_in_memory_predictions(client, table):
    frame, y = table
    clf = TabSwiftClassifier(n_estimators=2, n_jobs=1).fit(frame[:100], y[:100])
    lazy = batch.predict_partitions(clf, dd.from_pandas(frame[100:], npartitions=4),
                                    "predict_proba")
    assert lazy.numblocks == (4, 1)
    np.testing.assert_allclose(client.compute(lazy).result(), clf.predict_proba(frame[100:]),
                               atol=1e-5)
    labels = batch.predict_partitions(clf, dd.from_pandas(frame[100:], npartitions=3))
    assert labels.ndim == 1
    assert (client.compute(labels).result() == clf.predict(frame[100:])).mean() > 0.99


def test_array_blocks_and_regression(client, table):
    frame, y = table
    X = frame.drop(columns="kind").to_numpy()
    reg = TabSwiftRegressor(n_estimators=1, n_jobs=1).fit(X[:100], X[:100, 0] * 2.0)
    lazy = batch.predict_partitions(reg, da.from_array(X[100:], chunks=(64, 5)))
    np.testing.assert_allclose(client.compute(lazy).result(), reg.predict(X[100:]), atol=1e-4)


def test_bad_inputs_name_the_problem(table):
    frame, y = table
    X = frame.drop(columns="kind").to_numpy()
    clf = TabSwiftClassifier(n_estimators=1, n_jobs=1).fit(X[:50], y[:50])
    with pytest.raises(ValueError, match="chunked along rows only"):
        batch.predict_partitions(clf, da.from_array(X, chunks=(50, 2)))
    with pytest.raises(ValueError, match="method must be one of"):
        batch.predict_partitions(clf, da.from_array(X, chunks=(50, 5)), "fit")
    with pytest.raises(ValueError, match="method must be one of"):
        batch.predict_partitions(clf, da.from_array(X, chunks=(50, 5)), "transform")
    with pytest.raises(TypeError, match="dask DataFrame or Array"):
        batch.predict_partitions(clf, X)


# ---------------------------------------------------------------- Spark (fixture in conftest.py)
@pytest.mark.slow  # starts a JVM: ~15 s
def test_spark_batches_match_in_memory_predictions(spark, table):
    frame, y = table
    frame = frame.assign(kind=frame["kind"].astype(str), row_id=np.arange(len(frame)))
    features = ["x0", "x1", "x2", "x3", "x4", "kind"]
    clf = TabSwiftClassifier(n_estimators=2, n_jobs=1).fit(frame[features][:100], y[:100])
    rows = spark.createDataFrame(frame[100:]).repartition(3)

    scored = batch.predict_spark(clf, rows, "predict_proba").toPandas().sort_values("row_id")
    assert list(scored.columns) == [*frame.columns, "probability"]  # input columns kept
    expected = clf.predict_proba(frame[features][100:])
    np.testing.assert_allclose(np.stack(scored["probability"]), expected, atol=1e-5)

    labels = batch.predict_spark(clf, rows, output="label").toPandas().sort_values("row_id")
    assert (labels["label"].to_numpy() == clf.predict(frame[features][100:])).mean() > 0.99


@pytest.mark.slow
def test_spark_bad_inputs_name_the_problem(spark, table):
    frame, y = table
    clf = TabSwiftClassifier(n_estimators=1, n_jobs=1).fit(frame[:50], y[:50])
    rows = spark.createDataFrame(frame.assign(kind=frame["kind"].astype(str)))
    with pytest.raises(ValueError, match=r"lacks the feature column\(s\) \['x4'\]"):
        batch.predict_spark(clf, rows.drop("x4"))
    with pytest.raises(ValueError, match="already has a column 'x0'"):
        batch.predict_spark(clf, rows, output="x0")
    with pytest.raises(ValueError, match="method must be one of"):
        batch.predict_spark(clf, rows, "score")
    with pytest.raises(TypeError, match="pyspark.sql.DataFrame"):
        batch.predict_spark(clf, frame)
