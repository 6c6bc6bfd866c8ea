"""MantisTransformer (label-free embeddings) and its sktime adapter; the same bits for any n_jobs;
probabilities as float64 rows that sum to 1; inference_precision=float64."""

import pickle

import numpy as np
import pandas as pd
import pytest
import torch
from sklearn.cluster import KMeans
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import Pipeline

from skfm.timeseries import MantisTimeSeriesClassifier, MantisTransformer

TINY = dict(checkpoint="random:tiny", device="cpu")


pytestmark = pytest.mark.usefixtures("one_thread")


def test_a_pipeline_and_clustering_on_the_embeddings(sine_panel):
    X, y, X_test, y_test = sine_panel
    pipe = Pipeline([("mantis", MantisTransformer(**TINY)), ("clf", LogisticRegression())])
    assert pipe.fit(X, y).score(X_test, y_test) >= 0.9
    assert pipe.predict(X_test).shape == (20,)
    embeddings = MantisTransformer(**TINY).fit_transform(X)
    assert embeddings.shape == (40, 3 * 2 * 16) and embeddings.dtype == np.float32
    clusters = KMeans(n_clusters=2, n_init=10, random_state=0).fit_predict(embeddings)
    agreement = (clusters == y).mean()
    assert max(agreement, 1 - agreement) >= 0.9  # the two sine frequencies, without labels


@pytest.mark.parametrize("params", [
    {},
    {"layer": 1, "output_token": "cls"},
    {"ensemble_lengths": (64, 128), "output_token": "mean"},
])
def test_the_embeddings_are_the_classifiers_frozen_features(sine_panel, params):
    X, y, X_test, _ = sine_panel
    transformer = MantisTransformer(**TINY, **params).fit(X)
    classifier = MantisTimeSeriesClassifier(**TINY, fusion=None, **params).fit(X, y)
    np.testing.assert_array_equal(transformer.transform(X_test), classifier.transform(X_test))
    assert transformer.layer_ == classifier.layer_
    if "ensemble_lengths" not in params:
        np.testing.assert_array_equal(transformer.embed(X_test), classifier.embed(X_test))


def test_ensemble_lengths_as_an_array(sine_panel):
    """An array of lengths (array-like, as the constraint allows) is a tuple's equal, not
    numpy's ambiguous truth value; with full fine-tuning it is refused by name."""
    X, y, X_test, _ = sine_panel
    as_tuple = MantisTransformer(**TINY, ensemble_lengths=(64, 128)).fit(X).transform(X_test)
    as_array = MantisTransformer(**TINY, ensemble_lengths=np.array([64, 128])).fit(X)
    np.testing.assert_array_equal(as_array.transform(X_test), as_tuple)
    with pytest.raises(ValueError, match="fine_tuning='full' supports neither ensemble_lengths"):
        MantisTimeSeriesClassifier(**TINY, fine_tuning="full", fusion=None,
                                   ensemble_lengths=np.array([64, 128])).fit(X, y)


def test_names_pandas_output_and_pickling(sine_panel):
    X, _, X_test, _ = sine_panel
    flat = pd.DataFrame(X[:, 0], columns=[f"t{j}" for j in range(X.shape[-1])])
    transformer = MantisTransformer(**TINY).set_output(transform="pandas").fit(flat)
    out = transformer.transform(flat.iloc[:5])
    assert list(out.columns) == [f"mantis{i}" for i in range(32)]
    assert list(out.index) == [0, 1, 2, 3, 4]
    assert list(transformer.get_feature_names_out(flat.columns)) == list(out.columns)
    with pytest.raises(ValueError, match="input_features is not equal to feature_names_in_"):
        transformer.get_feature_names_out(["a"] * X.shape[-1])
    again = pickle.loads(pickle.dumps(transformer))
    pd.testing.assert_frame_equal(again.transform(flat.iloc[:5]), out)
    with pytest.raises(ValueError, match="channel"):
        MantisTransformer(**TINY).fit(X).transform(X_test[:, :2])
    with pytest.raises(ValueError, match="multiples of the model's 8 patches"):
        MantisTransformer(**TINY, seq_len=60).fit(X)


def test_the_sktime_transformer_gives_the_same_rows(sine_panel):
    from skfm.timeseries import MantisSktimeTransformer

    X, _, X_test, _ = sine_panel
    expected = MantisTransformer(**TINY).fit(X).transform(X_test)
    adapter = MantisSktimeTransformer(**TINY).fit(X)
    out = adapter.transform(X_test)
    assert isinstance(out, pd.DataFrame) and list(out.columns[:2]) == ["mantis0", "mantis1"]
    np.testing.assert_array_equal(out.to_numpy(), expected)
    ragged = [series[:, : 60 + i] for i, series in enumerate(X_test)]  # lengths 60..79
    sktime_ragged = [pd.DataFrame(series.T) for series in ragged]  # df-list, (T_i, C)
    np.testing.assert_array_equal(
        adapter.transform(sktime_ragged).to_numpy(),
        MantisTransformer(**TINY).fit(X).transform(ragged))


@pytest.mark.parametrize("params", [
    {"fine_tuning": "head", "max_epochs": 2},  # the torch head, trained with BatchNorm
    {"fine_tuning": "none"},  # the logistic head on the embeddings
])
def test_n_jobs_does_not_change_a_bit(sine_panel, params):
    """predict_proba with one torch thread and with two is bit-identical (sktime's
    test_multiprocessing_idempotent): attention by the math kernel, fine-tuning on torch's own
    thread count."""
    X, y, X_test, _ = sine_panel
    fitted = [MantisTimeSeriesClassifier(**TINY, fusion=None, n_jobs=n_jobs, **params).fit(X, y)
              for n_jobs in (1, 2)]
    np.testing.assert_array_equal(fitted[0].predict_proba(X_test),
                                  fitted[1].predict_proba(X_test))
    np.testing.assert_array_equal(fitted[0].transform(X_test), fitted[1].transform(X_test))


@pytest.mark.parametrize("params", [
    {"fine_tuning": "head", "max_epochs": 2},
    {"fine_tuning": "none"},
    {"fusion": "minirocket", "minirocket_kernels": 84, "cv": 2},
])
def test_probabilities_are_float64_rows_that_sum_to_one(sine_panel, params):
    X, y, X_test, _ = sine_panel
    clf = MantisTimeSeriesClassifier(**{"fusion": None, **TINY, **params}).fit(X, y)
    proba = clf.predict_proba(X_test)
    assert proba.dtype == np.float64
    np.testing.assert_allclose(proba.sum(1), 1.0, rtol=0, atol=4e-16)


def test_float64_mantis_embeddings(sine_panel):
    """fp64: a float64 copy of the backbone (the shared module stays float32), float64
    embeddings close to the float32 ones."""
    from skfm.timeseries.mantis.loading import load_model

    X, y, X_test, _ = sine_panel
    fp32 = MantisTransformer(**TINY).fit(X).transform(X_test)
    fp64 = MantisTransformer(inference_precision=torch.float64, **TINY).fit(X)
    assert fp32.dtype == np.float32 and fp64.transform(X_test).dtype == np.float64
    np.testing.assert_allclose(fp64.transform(X_test), fp32, atol=1e-5)
    assert fp64._runtime_model(torch.device("cpu")).cls.dtype == torch.float64
    assert load_model("random:tiny", torch.device("cpu"))[0].cls.dtype == torch.float32
    classifier = MantisTimeSeriesClassifier(inference_precision="fp64", fusion=None, **TINY)
    assert classifier.fit(X, y).predict_proba(X_test).dtype == np.float64
