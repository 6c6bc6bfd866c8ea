"""asv micro-benchmarks: TabSwift fit/predict time and memory, with HistGradientBoosting as a
reference.

Each suite is parametrised by ``(n_ctx, n_test, n_features)``: the model is fitted on ``n_ctx``
random rows (the context) and predicts ``n_test`` rows. Run from ``asv_bench/`` with
``asv run --python=same`` (see ``docs/benchmarks/README.md``).
"""

import numpy as np
from sklearn.ensemble import HistGradientBoostingClassifier

SIZES = [(200, 200, 10), (1000, 1000, 20), (2000, 5000, 50)]


def make_data(n_ctx, n_test, n_features, task="classification", seed=0):
    """Random features with a linear signal in half of them.

    Parameters
    ----------
    n_ctx, n_test, n_features : int
        Training rows, test rows and columns.
    task : {"classification", "regression"}, default="classification"
        Binary labels or a continuous target.
    seed : int, default=0
        Seed of the generator.

    Returns
    -------
    X_ctx : ndarray of shape (n_ctx, n_features)
    y_ctx : ndarray of shape (n_ctx,)
    X_test : ndarray of shape (n_test, n_features)
    """
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n_ctx + n_test, n_features)).astype(np.float32)
    k = max(1, n_features // 2)
    y = X[:, :k] @ rng.standard_normal(k) + 0.5 * rng.standard_normal(len(X))
    if task == "classification":
        y = (y > 0).astype(np.int64)
    return X[:n_ctx], y[:n_ctx], X[n_ctx:]


class _Suite:
    """Shared setup: data of the given size and a model fitted on its context rows."""

    params = [SIZES]
    param_names = ["(n_ctx, n_test, n_features)"]
    timeout = 600
    task = "classification"

    def make_model(self):
        raise NotImplementedError

    def setup(self, size):
        self.X, self.y, self.X_test = make_data(*size, task=self.task)
        self.model = self.make_model().fit(self.X, self.y)


class TabSwiftClassifierSuite(_Suite):
    """``TabSwiftClassifier(n_estimators=1)``."""

    def make_model(self):
        from skfm import TabSwiftClassifier

        return TabSwiftClassifier(n_estimators=1, random_state=0)

    def time_fit(self, size):
        self.make_model().fit(self.X, self.y)

    def time_predict_proba(self, size):
        self.model.predict_proba(self.X_test)

    def peakmem_predict_proba(self, size):
        self.model.predict_proba(self.X_test)


class TabSwiftRegressorSuite(_Suite):
    """``TabSwiftRegressor(n_estimators=1)``."""

    task = "regression"

    def make_model(self):
        from skfm import TabSwiftRegressor

        return TabSwiftRegressor(n_estimators=1, random_state=0)

    def time_predict(self, size):
        self.model.predict(self.X_test)


class HistGradientBoostingClassifierSuite(_Suite):
    """Reference: ``HistGradientBoostingClassifier`` with default settings."""

    def make_model(self):
        return HistGradientBoostingClassifier(random_state=0)

    def time_fit(self, size):
        self.make_model().fit(self.X, self.y)

    def time_predict_proba(self, size):
        self.model.predict_proba(self.X_test)

    def peakmem_predict_proba(self, size):
        self.model.predict_proba(self.X_test)
