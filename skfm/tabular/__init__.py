"""Tabular in-context learning: TabSwift model, estimators and methods on top."""

from skfm.tabular.classifier import TabSwiftClassifier
from skfm.tabular.martingale import TabMGPRegressor, plot_posterior
from skfm.tabular.regressor import TabSwiftRegressor
from skfm.tabular.strategic import SPNClassifier, best_response

__all__ = [
    "SPNClassifier",
    "TabMGPRegressor",
    "TabSwiftClassifier",
    "TabSwiftRegressor",
    "best_response",
    "plot_posterior",
]
