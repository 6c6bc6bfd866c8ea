"""Tabular in-context learning, in three layers.

- :mod:`skfm.tabular.model`: the TabSwift network and its bar distribution (pure torch);
- this package's modules: the scikit-learn estimators TabSwiftClassifier and TabSwiftRegressor,
  with their input encoding, inference-time ensemble and optional fine-tuning on the training
  table (:mod:`skfm.tabular.finetune`);
- methods built on those estimators: :mod:`skfm.tabular.strategic` (SPNClassifier,
  best_response) and :mod:`skfm.tabular.martingale` (TabMGPRegressor, plot_posterior).
"""

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
