"""asv benchmarks: TabSwift at its defaults (guard and blend included) against
HistGradientBoosting, fit + predict of the same table.

The suites of ``bench_tabswift.py`` time one ensemble member; these time what a user gets from
``TabSwiftClassifier()`` and ``TabSwiftRegressor()``: on 1,000 training rows the guard's
cross-fitted partners (``skfm.tabular.guard``), on 10,000 the blend with gradient boosting
(``skfm.tabular.blend``). HistGradientBoosting at its defaults on the same table is the
reference, so the ratio of the two entries of one size is TabSwift's cost in boosters. Tables:
20 numeric features, 1,000 test rows (``_data.make_data``). Run from ``asv_bench/`` with
``asv run --python=same --bench TabSwiftDefault``.
"""

from sklearn.ensemble import HistGradientBoostingClassifier, HistGradientBoostingRegressor

from ._data import make_data

N_TEST, N_FEATURES = 1000, 20


class _DefaultSuite:
    """Shared setup: a table of ``n_train`` rows and the model's fit + predict."""

    params = [[1000, 10000], ["tabswift", "hist_gradient_boosting"]]
    param_names = ["n_train", "model"]
    timeout = 1200
    task = "classification"

    def setup(self, n_train, model):
        self.X, self.y, self.X_test = make_data(n_train, N_TEST, N_FEATURES, task=self.task)

    def make_model(self, model):
        raise NotImplementedError

    def predict(self, fitted):
        raise NotImplementedError

    def time_fit_predict(self, n_train, model):
        self.predict(self.make_model(model).fit(self.X, self.y))


class TabSwiftDefaultClassifierSuite(_DefaultSuite):
    """``TabSwiftClassifier()`` and ``HistGradientBoostingClassifier()``, binary labels,
    ``predict_proba``."""

    def make_model(self, model):
        from skfm import TabSwiftClassifier

        if model == "tabswift":
            return TabSwiftClassifier(random_state=0)
        return HistGradientBoostingClassifier(random_state=0)

    def predict(self, fitted):
        return fitted.predict_proba(self.X_test)


class TabSwiftDefaultRegressorSuite(_DefaultSuite):
    """``TabSwiftRegressor()`` and ``HistGradientBoostingRegressor()``, ``predict``."""

    task = "regression"

    def make_model(self, model):
        from skfm import TabSwiftRegressor

        if model == "tabswift":
            return TabSwiftRegressor(random_state=0)
        return HistGradientBoostingRegressor(random_state=0)

    def predict(self, fitted):
        return fitted.predict(self.X_test)
