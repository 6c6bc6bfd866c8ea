"""
Strategic classification with SPNClassifier
===========================================

Once a classifier decides who gets a loan, people who are refused change what they can -
within what it costs them - until they are accepted. Their true label does not change, so a
model fitted on clean data is fooled. :class:`~skfm.tabular.strategic.SPNClassifier` anticipates
this without retraining the in-context learner: it raises its favourable threshold to the one
that is right on the most context rows *after* they have gamed it (a Stackelberg rule), so it
stays accurate when the people it scores game SPN itself. By default it also fits the
strategic-robust logistic regression and deploys whichever of the two rules is more accurate on
held-out context rows that game it, the logistic regression unless TabSwift's rule is clearly
better.

This example draws a small credit-scoring table with scikit-learn's ``make_classification``
(no download), lets the applicants of the test set game each deployed model with
:func:`~skfm.tabular.strategic.best_response`, and plots accuracy on their manipulated rows
against the applicants' budget. It runs in well under a minute on one CPU thread.
"""

# %%
# Data: 6 standardised features and a label, 1 for a good applicant, the decision every
# applicant wants. 200 rows are the context and 100 other rows the applicants.
import matplotlib.pyplot as plt
import numpy as np
from sklearn.datasets import make_classification
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import train_test_split
from sklearn.preprocessing import StandardScaler

from skfm import TabSwiftClassifier
from skfm.tabular.strategic import SPNClassifier, best_response

X_all, y_all = make_classification(n_samples=300, n_features=6, n_informative=4, n_redundant=1,
                                   flip_y=0.05, random_state=0)
X_all = StandardScaler().fit_transform(X_all)
X, X_test, y, y_test = train_test_split(X_all, y_all, train_size=200, stratify=y_all,
                                        random_state=0)
print(f"context {X.shape}, applicants {X_test.shape}, share of 1: {np.mean(y == 1):.2f}")

# %%
# For each budget (the l2 distance an applicant can move, in standard deviations), the
# applicants game each deployed model itself: they move to the nearest point it accepts if that
# is within budget. SPN is the deployed model in its own line, so the applicants answer SPN. ``base="estimator"`` and
# ``base="logistic"`` fix SPN's rule: TabSwift's threshold rule, or the strategic-robust
# logistic regression (its threshold raised by budget x the norm of its weights). The plain
# logistic regression is the linear baseline (its best response is exact).
tabswift = TabSwiftClassifier(n_estimators=1, n_jobs=1, random_state=0).fit(X, y)
logistic = LogisticRegression().fit(X, y)
budgets = [0.0, 0.5, 1.0, 1.5]
accuracy = {name: [] for name in ["TabSwift", "SPN", "SPN, TabSwift rule", "logistic regression",
                                  "SPN, robust logistic rule"]}
for budget in budgets:
    spn = SPNClassifier(tabswift, budget=budget, random_state=0).fit(X, y)
    if spn.validation_scores_:  # empty at budget 0: nobody moves, SPN is TabSwift
        print(f"budget {budget}: SPN deploys the {spn.selected_} rule; held-out accuracy "
              + ", ".join(f"{rule} {acc:.3f}" for rule, acc in spn.validation_scores_.items()))
    rules = {rule: SPNClassifier(tabswift, budget=budget, base=rule, random_state=0).fit(X, y)
             if rule != spn.selected_ else spn for rule in ("estimator", "logistic")}
    for name, model in [("TabSwift", tabswift), ("SPN", spn),
                        ("SPN, TabSwift rule", rules["estimator"]),
                        ("logistic regression", logistic),
                        ("SPN, robust logistic rule", rules["logistic"])]:
        X_moved = best_response(model, X_test, budget=budget, random_state=0)
        accuracy[name].append(model.score(X_moved, y_test))
for name, values in accuracy.items():
    print(f"{name:<28}" + " ".join(f"{value:.3f}" for value in values))

# %%
# Gaming costs TabSwift and the logistic regression accuracy as the budget grows: the refused
# applicants who move are mostly bad ones, now accepted. Both of SPN's rules read a moved row as
# the row it was before moving, so they keep most of their clean accuracy against applicants who
# game them; the robust logistic rule keeps all of the regression's. SPN with its defaults
# deploys one of the two, so its line follows the one its held-out rows favour.
fig, ax = plt.subplots(figsize=(5, 3.5))
for name, values in accuracy.items():
    ax.plot(budgets, values, marker="o", ls="--" if "logistic" in name else "-", label=name)
ax.set_xlabel("budget (l2 distance an applicant can move)")
ax.set_ylabel("accuracy when applicants game the model")
ax.set_title("synthetic credit table, 100 applicants")
ax.legend(fontsize=8)
fig.tight_layout()
plt.show()

# %%
# A different deployment: the applicants see and game the plain TabSwift (its scores are what
# is published), and SPN only reads their rows. Then ``method="context"`` fits: SPN moves its
# context rows as they would answer that TabSwift and predicts against this strategic context.
# ``spn.best_response`` simulates the applicants of either deployment.
for budget in budgets[1:]:
    spn = SPNClassifier(tabswift, budget=budget, method="context", random_state=0).fit(X, y)
    X_moved = spn.best_response(X_test)  # the applicants answer the plain TabSwift
    print(f"budget {budget}: TabSwift {tabswift.score(X_moved, y_test):.3f}, "
          f"SPN (context) {spn.score(X_moved, y_test):.3f}")
