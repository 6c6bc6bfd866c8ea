"""The TabSwift model in plain torch, and the bar distribution of its regression head.

Nothing here knows scikit-learn: :mod:`~skfm.tabular.model.tabswift` is the network (shapes in
its comments), :mod:`~skfm.tabular.model.buckets` turns regression targets into bucket indices
and bucket probabilities back into means, quantiles and draws. The estimators in
:mod:`skfm.tabular` and pretraining (:mod:`skfm.pretrain.tabswift`) build on both.
"""

from skfm.tabular.model.tabswift import (
    CLASSIFICATION,
    REGRESSION,
    TabSwift,
    TabSwiftConfig,
    count_parameters,
    standardize_context,
)

__all__ = [
    "CLASSIFICATION",
    "REGRESSION",
    "TabSwift",
    "TabSwiftConfig",
    "count_parameters",
    "standardize_context",
]
