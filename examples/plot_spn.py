"""
Strategic classification with SPNClassifier
===========================================

Once a classifier decides who gets a loan, people who are refused change what they can -
within what it costs them - until they are accepted. Their true label does not change, so a
model fitted on clean data is fooled. :class:`~skfm.tabular.strategic.SPNClassifier` corrects
an in-context learner at inference time: it moves its context rows as they would best-respond
to the deployed classifier (labels kept) and predicts against that strategic context.

This example simulates the agents with :func:`~skfm.tabular.strategic.best_response` on
synthetic data with a known ground truth, and plots accuracy on the manipulated test rows
against the agents' budget.
"""

# %%
# Data: a logistic ground truth on four features; the last one cannot be changed.
import copy

import matplotlib.pyplot as plt
import numpy as np
from sklearn.linear_model import LogisticRegression

from skfm import TabSwiftClassifier
from skfm.tabular.strategic import SPNClassifier, best_response

rng = np.random.default_rng(0)
w = np.array([1.5, 1.0, -1.0, 1.0])


def sample(n):
    X = rng.standard_normal((n, 4))
    y = np.where(rng.random(n) < 1 / (1 + np.exp(-2 * X @ w)), 1, 0)
    return X, y


X, y = sample(200)
X_test, y_test = sample(150)
mutable = [0, 1, 2]
bayes = np.mean((X_test @ w > 0) == y_test)  # the best any classifier can do
print(f"Bayes accuracy on clean test rows: {bayes:.3f}")

# %%
# For each budget (l2 cost), the test rows answer each deployed model. ``SPN`` is scored on the
# rows that answered its deployed classifier (the TabSwift fitted on clean data);
# ``SPN, rows answer SPN`` on rows that answered SPN's own predictions. The robust logistic
# regression shifts its threshold by budget x ||w|| over the mutable features.
tabswift = TabSwiftClassifier(n_estimators=1, n_jobs=1).fit(X, y)  # one member: fast
lr = LogisticRegression().fit(X, y)
budgets = [0.0, 0.4, 0.8, 1.2]
accuracy = {name: [] for name in ["TabSwift", "SPN", "SPN, rows answer SPN", "LR", "robust LR"]}
for budget in budgets:
    kwargs = {"budget": budget, "manipulable": mutable, "random_state": 0}
    spn = SPNClassifier(tabswift, **kwargs).fit(X, y)
    robust = copy.deepcopy(lr)
    robust.intercept_ = lr.intercept_ - budget * np.linalg.norm(lr.coef_[0, mutable])
    for name, model, answered in [
        ("TabSwift", tabswift, tabswift),
        ("SPN", spn, spn.deployed_estimator_),
        ("SPN, rows answer SPN", spn, spn),
        ("LR", lr, lr),
        ("robust LR", robust, robust),
    ]:
        X_moved = best_response(answered, X_test, **kwargs)
        accuracy[name].append(model.score(X_moved, y_test))

# %%
# Manipulation costs the plain models accuracy as the budget grows; SPN and the robust
# regression keep most of it.
fig, ax = plt.subplots(figsize=(5, 3.5))
for name, values in accuracy.items():
    ax.plot(budgets, values, marker="o", ls="--" if "answer" in name else "-", label=name)
ax.axhline(bayes, color="k", ls=":", lw=1, label="Bayes (clean)")
ax.set_xlabel("budget (l2 distance an agent can move)")
ax.set_ylabel("accuracy on manipulated test rows")
ax.legend(fontsize=8)
fig.tight_layout()
plt.show()
