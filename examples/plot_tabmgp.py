"""
A posterior for regression coefficients without a prior: TabMGP
================================================================

:class:`~skfm.tabular.martingale.TabMGPRegressor` gives a point prediction from the in-context
learner and, for an estimand defined by a loss (here the least-squares intercept and slopes),
a *martingale posterior*: the model imputes future rows again and again (``x`` by a Bayesian
bootstrap of the rows so far, ``y`` from its predictive given all rows so far), and each
completed data set gives one draw of the coefficients. No prior and no likelihood for the
coefficients are needed, and the coefficients keep their meaning even when the data are not
linear.

This example takes 50 patients of scikit-learn's diabetes data (442 patients in all), draws the
posterior of the coefficients of three clinical measurements, and checks it against the
least-squares fit on the whole table: the value a study of all 442 patients would have found.
"""

# %%
# Data: disease progression after one year against body-mass index (``bmi``), blood pressure
# (``bp``) and a blood serum measurement (``s5``, log triglycerides). Features and target are
# standardised on the whole table, so a slope is the change of the target, in standard
# deviations, per standard deviation of a feature, the same quantity on the sample and on the
# whole table. The model sees a random sample of 50 patients.
import matplotlib.pyplot as plt
import numpy as np
from sklearn.datasets import load_diabetes
from sklearn.linear_model import LinearRegression

from skfm import TabSwiftRegressor
from skfm.tabular.martingale import TabMGPRegressor, plot_posterior

table = load_diabetes(as_frame=True).frame
features = ["bmi", "bp", "s5"]
table = (table - table.mean()) / table.std()
full = LinearRegression().fit(table[features], table["target"])
whole_table = np.r_[full.intercept_, full.coef_]  # what all 442 patients say

sample = table.sample(50, random_state=0)
X, y = sample[features], sample["target"]

# %%
# Fit: 40 rollouts, each imputing 150 rows (three times the sample: a horizon much shorter
# than the sample would understate the uncertainty), 30% more rows per model call. One
# ensemble member keeps it to a few seconds; the defaults (100 rollouts of 250 rows, 10% more
# rows per call, 8 members) take a few minutes on a laptop CPU.
mgp = TabMGPRegressor(TabSwiftRegressor(n_estimators=1), n_rollouts=40, horizon=150,
                      block_size=0.3)
mgp.fit(X, y)

lower, upper = mgp.credible_interval(level=0.95)
print(f"{'':>10} {'50 rows':>8} {'95% credible interval':>24}   442 rows")
for name, estimate, lo, hi, reference in zip(
    mgp.posterior_names_, mgp.estimate_, lower, upper, whole_table, strict=True
):
    print(f"{name:>10} {estimate:8.2f}   [{lo:7.2f}, {hi:7.2f}]        {reference:5.2f}")

region = mgp.credible_region(level=0.95)
print("whole-table fit inside the joint 95% ellipsoid:", region.contains(whole_table))

# %%
# The marginal posteriors: shaded, the 95% credible interval; dashed, the least-squares fit on
# the 50 observed rows alone; red, the fit on all 442 patients. Each interval holds the value
# of the whole table, the intercept's too, where the 50 rows' own fit is furthest from it.
axes = plot_posterior(mgp, level=0.95, bins=10)
for ax, reference in zip(axes, whole_table, strict=True):
    ax.axvline(reference, color="tab:red", lw=1.5, label="fit on all 442 rows")
axes[0].legend(fontsize="small")  # replaces plot_posterior's legend
plt.tight_layout()
plt.show()
