"""skfm: small, fast foundation models for scikit-learn and sktime.

Every estimator runs offline with weights that ship inside the package.

The public classes and the function ``best_response`` are imported on first access
(``skfm.TabSwiftClassifier``, ``from skfm import RDBEncoder``), so that ``import skfm``
imports none of torch, scikit-learn, sktime, DuckDB or sqlglot until a name is asked for.
"""

import importlib

from skfm._version import __version__

# public name -> the module that defines it
_DEFINED_IN = {
    "Database": "skfm.relational.database",
    "MantisTimeSeriesClassifier": "skfm.timeseries.mantis.classifier",
    "MantisTransformer": "skfm.timeseries.mantis.transformer",
    "RDBEncoder": "skfm.relational.encoder",
    "SPNClassifier": "skfm.tabular.strategic.classifier",
    "TabMGPRegressor": "skfm.tabular.martingale.regressor",
    "TabSwiftClassifier": "skfm.tabular.classifier",
    "TabSwiftRegressor": "skfm.tabular.regressor",
    "TimePEFTForecaster": "skfm.timeseries.forecasting.forecaster",
    "best_response": "skfm.tabular.strategic.response",
}


def __getattr__(name: str):
    if name in _DEFINED_IN:
        value = getattr(importlib.import_module(_DEFINED_IN[name]), name)
        globals()[name] = value  # later lookups skip this function
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(__all__))


__all__ = [
    "Database",
    "MantisTimeSeriesClassifier",
    "MantisTransformer",
    "RDBEncoder",
    "SPNClassifier",
    "TabMGPRegressor",
    "TabSwiftClassifier",
    "TabSwiftRegressor",
    "TimePEFTForecaster",
    "__version__",
    "best_response",
]
