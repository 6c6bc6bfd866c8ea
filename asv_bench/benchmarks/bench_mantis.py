"""asv benchmarks: MantisTimeSeriesClassifier on GunPoint (shipped with sktime).

Official split: 50 training and 150 test series of length 150. Fit as shipped (frozen embeddings
fused with MiniRocket features, the head chosen by cross-validation) and with three epochs of
head fine-tuning; predict; peak memory; test accuracy.
"""


def load_gunpoint(split):
    from sktime.datasets import load_gunpoint as load

    return load(split=split, return_type="numpy3D")


def make_model(**params):
    from skfm.timeseries import MantisTimeSeriesClassifier

    return MantisTimeSeriesClassifier(random_state=0, **params)


class MantisSuite:
    """Frozen-embedding fit, head fine-tuning, ``predict_proba`` and accuracy."""

    timeout = 600

    def setup_cache(self):
        X, y = load_gunpoint("train")
        return X, y, *load_gunpoint("test"), make_model().fit(X, y)

    def setup(self, cache):
        self.X, self.y, self.X_test, self.y_test, self.model = cache

    def time_fit(self, cache):
        make_model().fit(self.X, self.y)

    def time_fit_fine_tune_head(self, cache):
        make_model(fine_tuning="head", max_epochs=3).fit(self.X, self.y)

    def peakmem_fit(self, cache):
        make_model().fit(self.X, self.y)

    def time_predict_proba(self, cache):
        self.model.predict_proba(self.X_test)

    def track_accuracy_gunpoint(self, cache):
        return float(self.model.score(self.X_test, self.y_test))

    track_accuracy_gunpoint.unit = "accuracy"
