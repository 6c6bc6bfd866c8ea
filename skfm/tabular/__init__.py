"""Tabular in-context learning: TabSwift model, prior and estimators."""

from skfm.tabular.classifier import TabSwiftClassifier
from skfm.tabular.regressor import TabSwiftRegressor

__all__ = ["TabSwiftClassifier", "TabSwiftRegressor"]
