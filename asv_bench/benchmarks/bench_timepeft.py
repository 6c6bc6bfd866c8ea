"""asv benchmarks: TimePEFTForecaster on the Airline series (shipped with sktime).

Log monthly passengers 1949-1960; the last 24 months are forecast from the rest with a
48-month context. Fit time and memory with five fine-tuning epochs; predict time and the R² of
the forecast with the demo's setting (up to 30 epochs, early stopping).
"""

import numpy as np

HORIZON = 24


def make_model(max_epochs=5):
    from skfm import TimePEFTForecaster

    return TimePEFTForecaster(context_length=48, finetune=True, max_epochs=max_epochs,
                              learning_rate=3e-3, validation_fraction=0.15, random_state=0)


class TimePEFTSuite:
    """Fine-tuning fit, forecast, and the forecast's R² on the held-out 24 months."""

    timeout = 600

    def setup_cache(self):
        from sktime.datasets import load_airline

        y = np.log(load_airline())
        y_train, y_test = y.iloc[:-HORIZON], y.iloc[-HORIZON:]
        fh = np.arange(1, HORIZON + 1)
        return y_train, y_test, fh, make_model(max_epochs=30).fit(y_train, fh=fh)

    def setup(self, cache):
        self.y, self.y_test, self.fh, self.model = cache

    def time_fit(self, cache):
        make_model().fit(self.y, fh=self.fh)

    def peakmem_fit(self, cache):
        make_model().fit(self.y, fh=self.fh)

    def time_predict(self, cache):
        self.model.predict()

    def track_r2_airline(self, cache):
        from sklearn.metrics import r2_score

        return float(r2_score(self.y_test, self.model.predict()))

    track_r2_airline.unit = "R^2"
