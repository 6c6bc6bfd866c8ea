"""
Explaining TabSwiftClassifier's predictions with SHAP values
============================================================

Which features drove a prediction of :class:`~skfm.TabSwiftClassifier`? SHAP values answer per
row: each feature gets a share of the difference between the row's predicted probability and
the average prediction over a background sample, and the shares add up to that difference.
`shap <https://shap.readthedocs.io>`_ computes them for any model from its ``predict_proba``
alone, by predicting many copies of the row in which some features are replaced by the values
of background rows.

That means thousands of predictions per explained row. An in-context learner usually pays for
its context on every call; TabSwift does not: ``fit`` caches every layer's keys and values for
the context rows, and each call of the explainer only runs the new rows against them.

This example needs the ``explain`` extra (``pip install "skfm[explain]"``).
"""

# %%
# Data: the breast-cancer table that ships with scikit-learn (569 tumours, 30 features measured
# on images of cell nuclei; 1 is benign), half of it as the context.
import time

import matplotlib.pyplot as plt
import numpy as np
import shap
from sklearn.datasets import load_breast_cancer
from sklearn.inspection import permutation_importance
from sklearn.model_selection import train_test_split

from skfm import TabSwiftClassifier

X, y = load_breast_cancer(return_X_y=True, as_frame=True)
X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.5, stratify=y,
                                                    random_state=0)
clf = TabSwiftClassifier(n_estimators=4, random_state=0).fit(X_train, y_train)
print(f"accuracy on the test half: {clf.score(X_test, y_test):.3f}")

# %%
# The explainer: shap's model-agnostic permutation explainer, with 20 training rows as the
# background that stands in for a "missing" feature. Its cost per explained row is up to
# ``max_evals`` x background rows of ``predict_proba``: here two antithetic permutations of the
# 30 features (``max_evals=2 * 61``), 2,440 rows. The function explained is the probability of
# the positive class; ``seed`` makes the permutations reproducible.


def benign_probability(X):
    return clf.predict_proba(X)[:, 1]


background = shap.utils.sample(X_train, 20, random_state=0)
explainer = shap.PermutationExplainer(benign_probability, shap.maskers.Independent(background),
                                      seed=0)
rows = X_test.iloc[:20]
start = time.perf_counter()
explanation = explainer(rows, max_evals=2 * (2 * X.shape[1] + 1), silent=True)
seconds = time.perf_counter() - start
print(f"{seconds / len(rows):.2f} s per explained row (shap's first call also compiles its code)")

# %%
# SHAP values add up: the base value (the mean prediction over the background) plus a row's
# SHAP values is the model's prediction for that row.
gap = explanation.base_values + explanation.values.sum(1) - benign_probability(rows)
print(f"largest |base value + sum of SHAP values - predicted probability|: {np.abs(gap).max():.1e}")

# %%
# The beeswarm plot: one dot per explained row and feature, placed by its SHAP value and
# coloured by the feature's value. High concave points, concavity, perimeter and radius of the
# cell nuclei push the prediction towards malignant (negative values: a lower probability of
# benign).
shap.plots.beeswarm(explanation, max_display=10, show=False)
plt.title("TabSwift: SHAP values on 20 test rows")
plt.tight_layout()
plt.show()

# %%
# A sanity check on the whole test half: scikit-learn's permutation importance, the drop in
# ROC-AUC when one feature's values are shuffled. It measures something else (the score of
# the whole test half, where correlated features stand in for each other, so every drop is
# small), yet most features with large SHAP values also matter here.
importance = permutation_importance(clf, X_test, y_test, scoring="roc_auc", n_repeats=2,
                                    random_state=0).importances_mean
mean_abs = np.abs(explanation.values).mean(0)
top = np.argsort(-mean_abs)[:10][::-1]
fig, (left, right) = plt.subplots(1, 2, figsize=(9, 4), sharey=True)
left.barh(X.columns[top], mean_abs[top])
left.set_xlabel("mean |SHAP value| (probability)")
right.barh(X.columns[top], importance[top])
right.set_xlabel("permutation importance (ROC-AUC drop)")
fig.suptitle("The ten features with the largest mean |SHAP value|")
fig.tight_layout()
plt.show()
