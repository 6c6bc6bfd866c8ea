"""asv benchmarks: TabMGPRegressor fit (the rollouts), memory, and how well its intervals cover.

100 rows of the diabetes data (standardised), a one-member TabSwift base, 30 rollouts of 100
imputed rows. The tracked number is the share of the 11 least-squares coefficients of the
whole data set (442 rows) inside their 95% credible intervals from those 100 rows.
"""

import numpy as np

from ._data import real_split, standardised


def make_model():
    from skfm import TabMGPRegressor, TabSwiftRegressor

    return TabMGPRegressor(TabSwiftRegressor(n_estimators=1, random_state=0), n_rollouts=30,
                           horizon=100)


class TabMGPSuite:
    """Fit (predictive resampling) and the coverage of the coefficients' credible intervals."""

    timeout = 600

    def setup(self):
        X_train, X_test, y_train, y_test = real_split("diabetes")
        self.X, self.X_all = standardised(X_train[:100], np.vstack([X_train, X_test]))
        self.y, self.y_all = y_train[:100], np.concatenate([y_train, y_test])

    def time_fit(self):
        make_model().fit(self.X, self.y)

    def peakmem_fit(self):
        make_model().fit(self.X, self.y)

    def track_coverage_of_full_data_coefficients(self):
        model = make_model().fit(self.X, self.y)
        lower, upper = model.credible_interval(0.95)
        design = np.column_stack([np.ones(len(self.X_all)), self.X_all])  # intercept first
        theta = np.linalg.lstsq(design, self.y_all, rcond=None)[0]
        return float(np.mean((lower <= theta) & (theta <= upper)))

    track_coverage_of_full_data_coefficients.unit = "fraction covered"
