"""Yeo-Johnson lambdas fitted once per column and rows, all columns searched together, as
scikit-learn's PowerTransformer finds them (issue 47: the per-member fits were most of a small
table's fit time)."""

import numpy as np
import pytest
from scipy import stats
from sklearn.preprocessing import PowerTransformer

from skfm.tabular import power
from skfm.tabular.ensemble import build_members
from skfm.tabular.power import LambdaCache, search_lambdas, yeo_johnson


@pytest.fixture
def columns():
    """Skewed, negative, missing, binary and constant columns: (300, 5)."""
    rng = np.random.default_rng(0)
    x = np.column_stack([rng.lognormal(size=300), -rng.exponential(size=300),
                         rng.normal(size=300), rng.integers(0, 2, 300), np.full(300, 3.0)])
    x[rng.random(300) < 0.1, 2] = np.nan
    return x


def test_lambdas_and_values_are_scikit_learn_s(columns):
    """The searched lambdas are PowerTransformer's within SciPy's own tolerance (its Brent
    search stops about 1e-8 wide; a flat likelihood leaves both a little apart), and the
    transform is PowerTransformer's for the same lambdas, to the bit."""
    reference = PowerTransformer(method="yeo-johnson", standardize=False).fit(columns)
    lambdas = LambdaCache().lambdas(columns, list(range(columns.shape[1])))
    np.testing.assert_allclose(lambdas, reference.lambdas_, rtol=1e-5, atol=1e-7)
    assert lambdas[-1] == 1.0  # constant: the identity, as scikit-learn leaves it
    np.testing.assert_allclose(yeo_johnson(columns, lambdas), reference.transform(columns),
                               rtol=1e-5, atol=1e-7)
    reference.lambdas_ = lambdas  # the same lambdas: the same bits
    np.testing.assert_array_equal(yeo_johnson(columns, lambdas), reference.transform(columns))
    huge = columns[:, :1] * 1e300  # its variance overflows: scikit-learn keeps the identity
    assert LambdaCache().lambdas(huge, [0])[0] == PowerTransformer().fit(huge).lambdas_[0] == 1


@pytest.mark.parametrize("kind", ["lognormal", "negative", "mixed", "heavy", "small"])
def test_the_search_finds_scipy_s_lambda_column_by_column(kind):
    rng = np.random.default_rng(len(kind))
    draw = {"lognormal": lambda: rng.lognormal(sigma=1.5, size=(400, 3)),
            "negative": lambda: -rng.exponential(size=(400, 3)) * 50,
            "mixed": lambda: rng.gamma(0.5, size=(400, 3)) - 0.3,
            "heavy": lambda: rng.standard_t(2, size=(400, 3)) * 1e4,
            "small": lambda: rng.normal(size=(25, 3)) * 1e-3}[kind]
    x = draw()
    x[::7, 1] = np.nan  # missing values are left out of a column's search
    expected = [stats.yeojohnson(column[~np.isnan(column)])[1] for column in x.T]
    np.testing.assert_allclose(search_lambdas(x), expected, rtol=1e-5, atol=1e-7)


def test_a_column_the_search_cannot_bound_keeps_the_identity():
    x = np.array([[-1e307], [1e307], [5e306], [2.0]])  # SciPy: "lower bound exceeds upper"
    with pytest.raises(ValueError, match="bound"):
        stats.yeojohnson(x[:, 0])
    assert search_lambdas(x)[0] == 1.0


def test_the_search_ends_on_tiny_and_zero_columns(monkeypatch):
    """Values of 1e-12 put the likelihood's maximum at a lambda near 1e11, where float64
    cannot resolve the tolerance: the search looped forever there (the slow hostile-input
    tests hung CI). It now ends by its width test, long before its step bound, with SciPy's
    lambda. An all-zero column (an infinite interval) keeps the identity and leaves the
    other columns' search alone (it ended every column's search at once, with NaN)."""
    rng = np.random.default_rng(3)
    skewed = rng.lognormal(size=200)
    tiny = np.column_stack([skewed, rng.normal(size=200) * 1e-9, rng.normal(size=200) * 1e-12])
    calls = []
    likelihood = power._log_likelihood
    monkeypatch.setattr(power, "_log_likelihood",
                        lambda *args: calls.append(1) or likelihood(*args))
    lambdas = search_lambdas(tiny)
    assert len(calls) < power.MAX_STEPS / 10
    np.testing.assert_allclose(lambdas, [stats.yeojohnson(c)[1] for c in tiny.T], rtol=1e-5)
    with_zeros = search_lambdas(np.column_stack([skewed, np.zeros(200)]))
    assert with_zeros[0] == pytest.approx(lambdas[0], rel=1e-7) and with_zeros[1] == 1.0


def test_a_lambda_is_searched_once_per_column_and_rows(columns, monkeypatch):
    """Eight members, four of them power-transformed, read the same 300 rows: each of the 4
    non-constant columns is searched once (it was 4 times, once per power member)."""
    searches = []
    original = power.search_lambdas

    def counted(x):
        searches.extend([int((~np.isnan(column)).sum()) for column in x.T])
        return original(x)

    monkeypatch.setattr(power, "search_lambdas", counted)
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


def test_a_member_pickled_with_its_power_transformer_still_reads_the_same(columns):
    """Members pickled before the lambdas were kept held a fitted PowerTransformer."""
    import pickle

    member = next(m for m in build_members(columns, None, n_members=2, max_features=10,
                                            max_rows=1000, rng=np.random.default_rng(0))
                  if m.norm == "power")
    power_transformer = PowerTransformer(standardize=False).fit(columns[:, member.features])
    power_transformer.lambdas_ = member.lambdas
    old = member.__dict__.copy()
    old["power"] = power_transformer
    del old["lambdas"]
    restored = type(member).__new__(type(member))
    restored.__setstate__(old)
    np.testing.assert_array_equal(restored.transform(columns), member.transform(columns))
    again = pickle.loads(pickle.dumps(member))
    np.testing.assert_array_equal(again.transform(columns), member.transform(columns))

