"""Fixtures shared by the tabular tests."""

import pytest
from sklearn.datasets import make_classification


@pytest.fixture(scope="module")
def classification():
    """600 training rows of 3 classes and 200 test rows, 6 features: a table "large" for a
    context of 128 rows."""
    X, y = make_classification(800, 6, n_informative=4, n_classes=3, random_state=0)
    return X[:600], y[:600], X[600:]
