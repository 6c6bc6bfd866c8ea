"""skfm: small, fast foundation models for scikit-learn and sktime.

Every estimator runs offline with weights that ship inside the package.
"""

from skfm._version import __version__
from skfm.relational import Database, RDBEncoder
from skfm.tabular import SPNClassifier, TabMGPRegressor, TabSwiftClassifier, TabSwiftRegressor
from skfm.timeseries import MantisTimeSeriesClassifier


def __getattr__(name: str):
    # The forecaster subclasses sktime's BaseForecaster: import sktime only when asked for.
    if name == "TimePEFTForecaster":
        from skfm.timeseries.forecasting import TimePEFTForecaster

        return TimePEFTForecaster
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "Database",
    "MantisTimeSeriesClassifier",
    "RDBEncoder",
    "SPNClassifier",
    "TabMGPRegressor",
    "TabSwiftClassifier",
    "TabSwiftRegressor",
    "TimePEFTForecaster",
    "__version__",
]
