"""Tables larger than the context with large_table="retrieve": each cluster of rows reads
the training rows nearest to it."""

import math
import pickle
import warnings

import numpy as np
import pytest
import skops.io as sio
from sklearn.datasets import make_regression

from skfm import TabSwiftClassifier, TabSwiftRegressor
from skfm.tabular.retrieval import MAX_CLUSTERS, fit_retrieval

# 600 training rows are "large" for a context of 128 rows: 5 clusters of 2 members
TINY = {"checkpoint": "random:tiny", "n_estimators": 2, "n_jobs": 1, "max_context_rows": 128,
        "large_table": "retrieve"}


@pytest.fixture(scope="module")
def retrieved_classifier(classification):
    X, y, _ = classification
    return TabSwiftClassifier(**TINY).fit(X, y)


def test_every_cluster_reads_the_rows_nearest_to_its_centre():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(1000, 3))
    X[rng.random(X.shape) < 0.05] = np.nan  # missing values sit at the mean
    pool = np.arange(100, 1000)
    retrieval, contexts = fit_retrieval(X, pool, 200, np.random.default_rng(0))
    assert len(contexts) == math.ceil(900 / 200) == len(retrieval.centres)
    z = retrieval.space(X)
    for centre, rows in zip(retrieval.centres, contexts, strict=True):
        assert len(rows) == 200 and np.isin(rows, pool).all()  # never a row outside the pool
        distance = np.linalg.norm(z - centre, axis=1)
        outside = np.setdiff1d(pool, rows)
        assert distance[rows].max() <= distance[outside].min()


def test_an_all_missing_column_is_clustered_quietly():
    X = np.random.default_rng(0).normal(size=(300, 3))
    X[:, 1] = np.nan
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # numpy's "Mean of empty slice" would raise
        retrieval, contexts = fit_retrieval(X, np.arange(300), 100, np.random.default_rng(0))
    assert len(contexts) == 3 and retrieval.scale[1] == 1.0 and retrieval.mean[1] == 0.0


def test_the_clusters_are_capped():
    X = np.random.default_rng(0).normal(size=(2000, 2))
    _, contexts = fit_retrieval(X, np.arange(2000), 100, np.random.default_rng(0))
    assert len(contexts) == MAX_CLUSTERS  # not 20: each cluster adds a cached context


def test_a_retrieved_fit_has_one_group_of_members_per_cluster(retrieved_classifier):
    est = retrieved_classifier
    assert est.retrieved_ and est.blend_scores_ is None and est.booster_ is None
    n_clusters = len(est.retrieval_.centres)
    assert n_clusters == math.ceil(600 / 128)
    np.testing.assert_array_equal(est.member_groups_, 2 * np.arange(n_clusters + 1))
    for g in range(n_clusters):
        group = est.members_[est.member_groups_[g]:est.member_groups_[g + 1]]
        assert len(group[0].rows) == 128
        np.testing.assert_array_equal(group[0].rows, group[1].rows)  # the cluster's context


def test_a_table_the_context_holds_is_not_retrieved(classification):
    X, y, _ = classification
    est = TabSwiftClassifier(**{**TINY, "max_context_rows": 600}).fit(X, y)
    assert not est.retrieved_ and est.retrieval_ is None
    np.testing.assert_array_equal(est.member_groups_, [0, 2])


def test_retrieved_predictions_do_not_depend_on_the_batch(retrieved_classifier, classification):
    X_test = classification[2]
    together = retrieved_classifier.predict_proba(X_test)
    one_by_one = np.concatenate([retrieved_classifier.predict_proba(X_test[i:i + 1])
                                 for i in range(0, 40)])
    shuffled = np.random.default_rng(0).permutation(len(X_test))
    np.testing.assert_allclose(one_by_one, together[:40], atol=1e-6)
    np.testing.assert_allclose(retrieved_classifier.predict_proba(X_test[shuffled]),
                               together[shuffled], atol=1e-6)
    np.testing.assert_allclose(together.sum(1), 1.0, atol=1e-6)


def test_a_row_is_predicted_by_its_own_cluster(retrieved_classifier, classification):
    est, X_test = retrieved_classifier, classification[2]
    clusters = est.retrieval_.assign(est.encoder_.encode(est.encoder_.check(X_test, est)))
    group = int(clusters[0])
    # a copy that keeps only that cluster's members, as one group: no retrieval
    alone = pickle.loads(pickle.dumps(est))
    lo, hi = est.member_groups_[group], est.member_groups_[group + 1]
    alone.members_, alone.member_groups_ = est.members_[lo:hi], np.array([0, hi - lo])
    alone.retrieval_ = None
    np.testing.assert_allclose(alone.predict_proba(X_test[:1]), est.predict_proba(X_test[:1]),
                               atol=1e-6)
    other = (group + 1) % len(est.retrieval_.centres)
    lo, hi = est.member_groups_[other], est.member_groups_[other + 1]
    alone = pickle.loads(pickle.dumps(alone))
    alone.members_ = est.members_[lo:hi]
    assert not np.allclose(alone.predict_proba(X_test[:1]), est.predict_proba(X_test[:1]))


def test_a_retrieved_regressor_predicts_its_distribution():
    X, y = make_regression(700, 5, noise=5.0, random_state=0)
    est = TabSwiftRegressor(**TINY).fit(X[:600], y[:600])
    assert est.retrieved_
    mean = est.predict(X[600:])
    quantiles = est.predict(X[600:], output_type="quantiles", quantiles=[0.1, 0.9])
    assert mean.shape == (100,) and quantiles.shape == (100, 2)
    assert (quantiles[:, 0] <= quantiles[:, 1]).all()
    np.testing.assert_allclose(est.predict(X[600:610]), mean[:10], rtol=1e-5)


def test_a_retrieved_estimator_pickles_and_skops_saves(retrieved_classifier, classification,
                                                       tmp_path):
    X_test = classification[2]
    expected = retrieved_classifier.predict_proba(X_test)
    np.testing.assert_allclose(
        pickle.loads(pickle.dumps(retrieved_classifier)).predict_proba(X_test), expected)
    path = tmp_path / "model.skops"
    sio.dump(retrieved_classifier, path)
    loaded = sio.load(path, trusted=sio.get_untrusted_types(file=path))
    np.testing.assert_allclose(loaded.predict_proba(X_test), expected)


def test_retrieval_reads_local_structure():
    """Eight far-apart groups of rows, each labelled by its own linear rule: a context drawn
    from all of them holds 32 rows per rule, each group's own nearest rows about 256."""
    rng = np.random.default_rng(0)
    n, n_groups = 2800, 8
    group = rng.integers(0, n_groups, n)
    angle = rng.uniform(0, 2 * np.pi, n_groups)[group]
    x = rng.normal(size=(n, 2))
    X = np.column_stack([x, 10.0 * group])
    y = (x[:, 0] * np.cos(angle) + x[:, 1] * np.sin(angle) > 0).astype(int)
    train, test = np.arange(2400), np.arange(2400, n)
    scores = {}
    for mode in ("subsample", "retrieve"):
        est = TabSwiftClassifier(n_estimators=2, max_context_rows=256, large_table=mode,
                                 random_state=0).fit(X[train], y[train])
        scores[mode] = est.score(X[test], y[test])
    # measured: 0.74 and 0.96 (0.79 / 0.94, 0.82 / 0.95 on two other draws of the table)
    assert scores["retrieve"] > scores["subsample"] + 0.1, scores


def test_a_retrieved_regressor_reads_each_context_standardised():
    X, y = make_regression(700, 5, noise=5.0, random_state=0)
    est = TabSwiftRegressor(**TINY).fit(X[:600], y[:600])
    for g in range(len(est.retrieval_.centres)):
        group = est.members_[est.member_groups_[g]:est.member_groups_[g + 1]]
        targets = est._targets(group[0], group[0].rows)  # as the model reads them
        assert abs(targets.mean()) < 1e-9 and abs(targets.std() - 1.0) < 1e-9
    probs, borders = est.predict_distribution(X[600:])  # on the estimator's common borders
    np.testing.assert_allclose(probs.sum(1), 1.0)
    np.testing.assert_array_equal(borders, est._borders(probs.shape[1]))
