"""Yeo-Johnson lambdas fitted once per column and rows, as scikit-learn's PowerTransformer fits
them (issue 47: the per-member fits were most of a small table's fit time)."""

import numpy as np
import pytest
from sklearn.preprocessing import PowerTransformer

from skfm.tabular import power
from skfm.tabular.ensemble import build_members
from skfm.tabular.power import LambdaCache, yeo_johnson


@pytest.fixture
def columns():
    """Skewed, negative, missing, binary and constant columns: (300, 5)."""
    rng = np.random.default_rng(0)
    x = np.column_stack([rng.lognormal(size=300), -rng.exponential(size=300),
                         rng.normal(size=300), rng.integers(0, 2, 300), np.full(300, 3.0)])
    x[rng.random(300) < 0.1, 2] = np.nan
    return x


def test_lambdas_and_values_are_scikit_learn_s_bits(columns):
    reference = PowerTransformer(method="yeo-johnson", standardize=False)
    expected = reference.fit_transform(columns)
    lambdas = LambdaCache().lambdas(columns, list(range(columns.shape[1])))
    np.testing.assert_array_equal(lambdas, reference.lambdas_)
    np.testing.assert_array_equal(yeo_johnson(columns, lambdas), expected)
    assert lambdas[-1] == 1.0  # constant: the identity, as scikit-learn leaves it
    huge = columns[:, :1] * 1e300  # its variance overflows: scikit-learn keeps the identity
    assert LambdaCache().lambdas(huge, [0])[0] == PowerTransformer().fit(huge).lambdas_[0] == 1


def test_a_lambda_is_searched_once_per_column_and_rows(columns, monkeypatch):
    """Eight members, four of them power-transformed, read the same 300 rows: each of the 4
    non-constant columns is searched once (it was 4 times, once per power member)."""
    searches = []
    original = power.stats.yeojohnson

    def counted(x, lmbda=None):
        if lmbda is None:
            searches.append(len(x))
        return original(x, lmbda)

    monkeypatch.setattr(power.stats, "yeojohnson", counted)
    members = build_members(columns, None, n_members=8, max_features=10, max_rows=1000,
                            rng=np.random.default_rng(0))
    assert sum(m.norm == "power" for m in members) == 4
    assert len(searches) == 4
    powered = [m for m in members if m.norm == "power"]
    by_column = dict(zip(powered[0].features, powered[0].lambdas, strict=True))
    for member in powered[1:]:  # other column orders, the same lambda per column
        assert dict(zip(member.features, member.lambdas, strict=True)) == by_column
    searches.clear()  # fewer rows than the table: other rows, other lambdas
    build_members(columns, None, n_members=2, max_features=10, max_rows=100,
                  rng=np.random.default_rng(0))
    assert len(searches) == 4 and max(searches) == 100  # (one column has missing values)
