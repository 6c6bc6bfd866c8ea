"""
Calibrated probabilities with TabSwiftClassifier
================================================

:class:`~skfm.TabSwiftClassifier` predicts by *in-context learning*: ``fit`` stores the
training rows as the context of a transformer pretrained on synthetic tables, and
``predict_proba`` reads the labels of new rows off one forward pass. Nothing is trained on
your data, and there is nothing to tune.

Beyond accuracy, a classifier's probabilities should mean what they say: of the rows given
a probability of 0.8, about 80% should be positive. This example compares TabSwift's
calibration and ROC-AUC with logistic regression, a random forest and gradient boosting on
the breast-cancer data that ships with scikit-learn, with out-of-fold predictions of a
3-fold cross-validation.
"""

# %%
# Data: 569 tumours, 30 features measured on images of cell nuclei; 1 is benign.
import time

import matplotlib.pyplot as plt
import numpy as np
from sklearn.calibration import calibration_curve
from sklearn.datasets import load_breast_cancer
from sklearn.ensemble import HistGradientBoostingClassifier, RandomForestClassifier
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import brier_score_loss, roc_auc_score
from sklearn.model_selection import StratifiedKFold, cross_val_predict
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from skfm import TabSwiftClassifier

X, y = load_breast_cancer(return_X_y=True)
print(f"{X.shape[0]} rows, {X.shape[1]} features, {y.mean():.0%} positive")

# %%
# Out-of-fold probabilities of each model. TabSwift runs with 2 ensemble members (8 is the
# default: a little better, four times slower) to keep the example fast; its ``fit`` only
# encodes the context.
models = {
    "TabSwift": TabSwiftClassifier(n_estimators=2, random_state=0),
    "logistic regression": make_pipeline(StandardScaler(), LogisticRegression(max_iter=1000)),
    "random forest": RandomForestClassifier(n_estimators=100, random_state=0),
    "gradient boosting": HistGradientBoostingClassifier(random_state=0),
}
cv = StratifiedKFold(3, shuffle=True, random_state=0)
proba = {}
for name, model in models.items():
    start = time.perf_counter()
    proba[name] = cross_val_predict(model, X, y, cv=cv, method="predict_proba")[:, 1]
    seconds = time.perf_counter() - start
    print(f"{name:>20}: ROC-AUC {roc_auc_score(y, proba[name]):.4f}, "
          f"Brier {brier_score_loss(y, proba[name]):.4f}  ({seconds:.1f} s for 3 folds)")

# %%
# Calibration curves: the share of positives among the rows in each bin of predicted
# probability. A calibrated model lies on the diagonal; the histogram below shows how
# confident each model is.
fig, (ax, hist) = plt.subplots(2, 1, figsize=(6, 6.5), height_ratios=[3, 1.2], sharex=True)
ax.plot([0, 1], [0, 1], ls=":", color="gray", label="perfectly calibrated")
for name, p in proba.items():
    frac_pos, mean_pred = calibration_curve(y, p, n_bins=8, strategy="quantile")
    ax.plot(mean_pred, frac_pos, marker="o", label=name)
ax.set_ylabel("fraction of positives")
ax.set_title("Calibration on breast cancer (3-fold out-of-fold)")
ax.legend(loc="upper left", fontsize=8)
bins = np.linspace(0, 1, 21)
hist.hist(list(proba.values()), bins=bins, label=list(proba), histtype="step", lw=1.5)
hist.set_yscale("log")
hist.set_xlabel("predicted probability of the positive class")
hist.set_ylabel("rows")
fig.tight_layout()
plt.show()
