"""SHAP values of TabSwift with shap's model-agnostic explainers (the user guide's recipe)."""

import numpy as np
import pandas as pd
import pytest

from skfm import TabSwiftClassifier
from skfm.tabular.model import TabSwift

shap = pytest.importorskip("shap", reason="shap is not installed (the `explain` extra)")


def permutation(f, background, rows):
    explainer = shap.PermutationExplainer(f, shap.maskers.Independent(background), seed=0)
    return explainer(rows, max_evals=2 * rows.shape[1] + 1, silent=True)


def kernel(f, background, rows):
    return shap.KernelExplainer(f, background, keep_index=True)(rows, silent=True)


@pytest.mark.parametrize("explain", [
    # shap compiles the permutation explainer's masking code with numba on its first call
    # (about 10 CPU seconds); the kernel explainer runs the same checks without compiling
    pytest.param(permutation, marks=pytest.mark.slow, id="permutation"),
    pytest.param(kernel, id="kernel"),
])
def test_shap_values_add_up_on_the_cached_context(monkeypatch, explain):
    """The explainer's calls reuse the context cached by fit; base value + SHAP values is the
    model's output; the informative columns (one of them integer categories, which shap's
    masker hands back as floats) outweigh the noise column."""
    rng = np.random.default_rng(0)
    frame = pd.DataFrame({"signal": rng.normal(size=120), "noise": rng.normal(size=120),
                          "group": pd.Categorical(rng.integers(0, 3, 120))})
    y = ((frame["signal"] > 0) ^ (frame["group"] == 1)).astype(int).to_numpy()
    clf = TabSwiftClassifier(n_estimators=1, n_jobs=1).fit(frame[:100], y[:100])

    builds = []
    context_cache = TabSwift.context_cache
    monkeypatch.setattr(TabSwift, "context_cache",
                        lambda *args, **kwargs: builds.append(1) or context_cache(*args, **kwargs))

    def positive(X):
        return clf.predict_proba(X)[:, 1]

    explanation = explain(positive, frame[:20], frame[100:])

    assert builds == []  # no call recomputed the context's keys and values
    assert explanation.values.shape == (20, 3)
    np.testing.assert_allclose(explanation.base_values + explanation.values.sum(1),
                               positive(frame[100:]), atol=1e-5)
    importance = np.abs(explanation.values).mean(0)
    assert importance[1] < min(importance[0], importance[2])
