"""asv benchmarks: SPNClassifier fit, the agents' best response, memory, accuracy on gamed rows.

Breast cancer (standardised, 150 training and 150 test rows), a one-member TabSwift base and a
budget of 0.5 standard deviations: refused test rows move against the deployed classifier.
"""

from ._data import real_split, standardised


def make_model():
    from skfm import SPNClassifier, TabSwiftClassifier

    return SPNClassifier(TabSwiftClassifier(n_estimators=1, random_state=0), budget=0.5)


class SPNSuite:
    """Fit, ``best_response`` on the test rows, and SPN's accuracy on the gamed rows."""

    timeout = 600

    def setup_cache(self):
        X_train, X_test, y, y_test = real_split("breast_cancer", n_train=150)
        X, X_test = standardised(X_train, X_test)
        return X, y, X_test, y_test, make_model().fit(X, y)

    def setup(self, cache):
        self.X, self.y, self.X_test, self.y_test, self.model = cache

    def time_fit(self, cache):
        make_model().fit(self.X, self.y)

    def peakmem_fit(self, cache):
        make_model().fit(self.X, self.y)

    def time_best_response(self, cache):
        self.model.best_response(self.X_test)

    def track_accuracy_on_gamed_rows(self, cache):
        return float(self.model.score(self.model.best_response(self.X_test), self.y_test))

    track_accuracy_on_gamed_rows.unit = "accuracy"
