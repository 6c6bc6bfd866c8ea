"""
Prediction intervals with TabSwiftRegressor
===========================================

:class:`~skfm.TabSwiftRegressor` predicts, for every row, a whole distribution of the target
(probabilities over buckets), from one forward pass of the pretrained in-context learner.
The mean, the median, any quantile and random draws all come from it, so prediction
intervals need no extra model.

This example predicts disease progression one year after baseline (scikit-learn's diabetes
data: 442 patients, 10 features), compares its accuracy with ridge regression and gradient
boosting, and plots 90% intervals of the test patients with their coverage.
"""

# %%
# Data and models.
import matplotlib.pyplot as plt
import numpy as np
from sklearn.datasets import load_diabetes
from sklearn.ensemble import HistGradientBoostingRegressor
from sklearn.linear_model import RidgeCV
from sklearn.metrics import r2_score
from sklearn.model_selection import train_test_split

from skfm import TabSwiftRegressor

X, y = load_diabetes(return_X_y=True)
X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.4, random_state=0)

reg = TabSwiftRegressor(n_estimators=4, random_state=0).fit(X_train, y_train)
for name, model in {
    "TabSwift": reg,
    "ridge": RidgeCV(alphas=np.logspace(-3, 3, 13)).fit(X_train, y_train),
    "gradient boosting": HistGradientBoostingRegressor(max_iter=100).fit(X_train, y_train),
}.items():
    print(f"{name:>18}: R2 {r2_score(y_test, model.predict(X_test)):.3f}")

# %%
# The 5%, 50% and 95% quantiles of each test patient's predictive distribution: a 90%
# interval around the median. About 90% of the true values should fall inside.
q = reg.predict(X_test, output_type="quantiles", quantiles=[0.05, 0.5, 0.95])
inside = (q[:, 0] <= y_test) & (y_test <= q[:, 2])
print(f"90% intervals: coverage {inside.mean():.1%}, mean width {np.mean(q[:, 2] - q[:, 0]):.0f}")

order = np.argsort(q[:, 1])
rank = np.arange(len(order))
fig, ax = plt.subplots(figsize=(7, 3.8))
ax.fill_between(rank, q[order, 0], q[order, 2], step="mid", alpha=0.3,
                label="90% prediction interval")
ax.plot(rank, q[order, 1], color="C0", lw=1.2, label="predicted median")
ax.scatter(rank, y_test[order], s=9, c=np.where(inside[order], "k", "tab:red"),
           label="true value (red: outside)", zorder=3)
ax.set_xlabel("test patients, sorted by predicted median")
ax.set_ylabel("disease progression")
ax.set_title(f"TabSwiftRegressor on diabetes: coverage {inside.mean():.0%}")
ax.legend(fontsize=8, loc="upper left")
fig.tight_layout()
plt.show()

# %%
# Draws from the predictive distribution of three patients: the spread differs from patient
# to patient (the noise is heteroscedastic), and the distributions need not be symmetric.
draws = reg.sample_y(X_test[order[[10, 88, 170]]], n_samples=2000, random_state=0)
fig, ax = plt.subplots(figsize=(6, 3))
for i, row in enumerate(draws):
    ax.hist(row, bins=40, histtype="stepfilled", alpha=0.4, density=True,
            label=f"patient {order[[10, 88, 170]][i]}")
ax.set_xlabel("disease progression")
ax.set_ylabel("predictive density")
ax.legend(fontsize=8)
fig.tight_layout()
plt.show()
