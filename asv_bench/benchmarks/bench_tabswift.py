"""asv micro-benchmarks: TabSwift fit/predict time and memory, with HistGradientBoosting as a
reference, and TabSwift's accuracy on real data.

The timing suites are parametrised by ``(n_ctx, n_test, n_features)``: the model is fitted on
``n_ctx`` random rows (the context) and predicts ``n_test`` rows. Run from ``asv_bench/`` with
``asv run --python=same`` (see ``docs/benchmarks/README.md``).
"""

import numpy as np
from sklearn.ensemble import HistGradientBoostingClassifier

from ._data import make_data, real_split

# small enough that `asv run --quick` stays at minutes; benchmarks/tabswift_speed.py times more
SIZES = [(200, 200, 10), (1000, 2000, 20)]


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

    def time_fit(self, size):
        self.make_model().fit(self.X, self.y)

    def time_predict(self, size):
        self.model.predict(self.X_test)

    def peakmem_predict(self, size):
        self.model.predict(self.X_test)


class TabSwiftAccuracy:
    """``n_estimators=2`` on 50/50 splits of breast cancer (ROC-AUC) and diabetes (R²)."""

    timeout = 600

    def setup_cache(self):
        from sklearn.metrics import r2_score, roc_auc_score

        from skfm import TabSwiftClassifier, TabSwiftRegressor

        X_train, X_test, y_train, y_test = real_split("breast_cancer")
        clf = TabSwiftClassifier(n_estimators=2, random_state=0).fit(X_train, y_train)
        auc = roc_auc_score(y_test, clf.predict_proba(X_test)[:, 1])
        X_train, X_test, y_train, y_test = real_split("diabetes")
        reg = TabSwiftRegressor(n_estimators=2, random_state=0).fit(X_train, y_train)
        return {"roc_auc": float(auc), "r2": float(r2_score(y_test, reg.predict(X_test)))}

    def track_classifier_roc_auc_breast_cancer(self, scores):
        return scores["roc_auc"]

    track_classifier_roc_auc_breast_cancer.unit = "ROC-AUC"

    def track_regressor_r2_diabetes(self, scores):
        return scores["r2"]

    track_regressor_r2_diabetes.unit = "R^2"


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


class EarlyExitSuite(_Suite):
    """``predict_proba`` of 8 members at full depth, with ``early_exit=True`` and ``max_layers=3``.

    Each row settles on its own, so the saving grows with the test batch; compare the three
    timings of one size. The network alone (``guard=False``): the guard's cross-fitted
    partners are not what this measures, and where the guard gives a partner all the weight
    the network does not run at all.
    """

    params = [[(1000, 2000, 20)], [False, True, "max_layers=3"]]
    param_names = ["(n_ctx, n_test, n_features)", "mode"]

    def make_model(self):
        from skfm import TabSwiftClassifier

        return TabSwiftClassifier(guard=False, random_state=0)

    def setup(self, size, mode):
        super().setup(size)
        if mode == "max_layers=3":
            self.model.set_params(max_layers=3)
        else:
            self.model.set_params(early_exit=mode)

    def time_predict_proba(self, size, mode):
        self.model.predict_proba(self.X_test)


class ContextCacheSuite(_Suite):
    """10 calls of ``predict_proba`` on 100 rows, with the context cached or recomputed per call
    (the network alone, ``guard=False``, as in :class:`EarlyExitSuite`)."""

    params = [[(1000, 1000, 20)], [True, False]]
    param_names = ["(n_ctx, n_test, n_features)", "cached"]

    def make_model(self):
        from skfm import TabSwiftClassifier

        return TabSwiftClassifier(guard=False, random_state=0)

    def setup(self, size, cached):
        super().setup(size)
        self.batches = np.array_split(self.X_test, 10)

    def time_repeated_small_predictions(self, size, cached):
        for batch in self.batches:
            if not cached:
                self.model._cache.clear()  # what a model without a context cache pays
            self.model.predict_proba(batch)


class LimitsSuite:
    """The paths past the checkpoint's limits: 25 classes, 300 features, 5,000 context rows."""

    params = ["many classes", "wide", "many rows"]
    param_names = ["limit"]
    timeout = 600

    def setup(self, limit):
        from skfm import TabSwiftClassifier

        rng = np.random.default_rng(0)
        n, f, k = {"many classes": (1000, 10, 25), "wide": (500, 300, 2),
                   "many rows": (5000, 10, 2)}[limit]
        X = rng.standard_normal((n + 500, f)).astype(np.float32)
        y = X[:, :k].argmax(1) if k > 2 else X[:, 0] > 0
        self.X, self.y, self.X_test = X[:n], y[:n].astype(int), X[n:]
        self.model = TabSwiftClassifier(n_estimators=4, max_context_rows=4096, random_state=0)

    def time_fit_predict_proba(self, limit):
        self.model.fit(self.X, self.y).predict_proba(self.X_test)

    def peakmem_fit_predict_proba(self, limit):
        self.model.fit(self.X, self.y).predict_proba(self.X_test)


class LargeTableSuite:
    """Tables larger than the context (2,048 rows): the default blend with HistGradientBoosting
    (its in-context model at the default "auto" sizes: 3 members of 512 rows, early exit)
    against TabSwift alone (8 members of 2,048 rows), TabSwift with retrieved contexts (up to
    8 clusters of 4 members of 1,024 rows) and HistGradientBoosting alone, fit + predict of
    2,000 test rows (``benchmarks/tabswift_large.py`` measures accuracy on real tables)."""

    params = [[10_000, 30_000], ["blend", "subsample", "retrieve", "hgb"]]
    param_names = ["n_train", "model"]
    timeout = 900

    def setup(self, n_train, model):
        self.X, self.y, self.X_test = make_data(n_train, 2000, 20)

    def make_model(self, model):
        if model == "hgb":
            return HistGradientBoostingClassifier(random_state=0)
        from skfm import TabSwiftClassifier

        return TabSwiftClassifier(random_state=0, large_table=model)

    def time_fit_predict_proba(self, n_train, model):
        self.make_model(model).fit(self.X, self.y).predict_proba(self.X_test)

    def peakmem_fit_predict_proba(self, n_train, model):
        self.make_model(model).fit(self.X, self.y).predict_proba(self.X_test)
