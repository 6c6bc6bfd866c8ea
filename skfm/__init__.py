"""skfm: small, fast foundation models for scikit-learn and sktime.

Every estimator runs offline with weights that ship inside the package.
"""

from skfm.relational import Database, RDBEncoder
from skfm.tabular import SPNClassifier, TabMGPRegressor, TabSwiftClassifier, TabSwiftRegressor
from skfm.timeseries import MantisTimeSeriesClassifier

__version__ = "0.1.0"

__all__ = [
    "Database",
    "MantisTimeSeriesClassifier",
    "RDBEncoder",
    "SPNClassifier",
    "TabMGPRegressor",
    "TabSwiftClassifier",
    "TabSwiftRegressor",
    "__version__",
]
