"""skfm: small, fast foundation models for scikit-learn and sktime.

Every estimator runs offline with weights that ship inside the package.
"""

from skfm._version import __version__
from skfm.tabular import SPNClassifier, TabMGPRegressor, TabSwiftClassifier, TabSwiftRegressor
from skfm.timeseries import MantisTimeSeriesClassifier


def __getattr__(name: str):
    # Imported on first access, so that `import skfm` imports neither sktime (the forecaster
    # subclasses its BaseForecaster) nor sqlglot and DuckDB (the relational classes).
    if name == "TimePEFTForecaster":
        from skfm.timeseries.forecasting.forecaster import TimePEFTForecaster

        return TimePEFTForecaster
    if name == "Database":
        from skfm.relational.database import Database

        return Database
    if name == "RDBEncoder":
        from skfm.relational.encoder import RDBEncoder

        return RDBEncoder
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(__all__))


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
