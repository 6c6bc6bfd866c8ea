"""TabularEncoder: every numeric dtype, interleaved with categorical columns, encodes to the
values of its own column."""

import numpy as np
import pandas as pd
import pytest

from skfm.tabular.encoding import TabularEncoder


class _Estimator:
    """What the encoder records ``n_features_in_`` and ``feature_names_in_`` on."""


def _mixed_table(n: int = 60) -> pd.DataFrame:
    rng = np.random.default_rng(0)
    return pd.DataFrame({
        "int": rng.integers(-5, 5, n),
        "colour": pd.Categorical(rng.choice(["red", "blue"], n)),
        "float32": rng.standard_normal(n).astype(np.float32),
        "nullable_int": pd.array(np.where(rng.random(n) < 0.3, None, rng.integers(0, 9, n)),
                                 dtype="Int64"),
        "flag": rng.random(n) < 0.5,
        "nullable_float": pd.array(np.where(rng.random(n) < 0.3, None, rng.random(n)),
                                   dtype="Float64"),
        "uint8": rng.integers(0, 250, n).astype(np.uint8),
        "numbers_as_objects": pd.Series(rng.choice([1.5, 2.0, None], n), dtype=object),
        "huge": rng.standard_normal(n) * 1e300,
    })


def test_numeric_columns_keep_their_values_and_positions():
    table = _mixed_table()
    encoder = TabularEncoder().fit(table, _Estimator())
    out = encoder.encode(table)
    assert out.dtype == np.float64 and out.shape == table.shape
    for j, name in enumerate(table.columns):
        if j in encoder.categories_:
            continue
        expected = pd.to_numeric(table[name].astype(object).where(table[name].notna(), np.nan))
        np.testing.assert_array_equal(out[:, j], expected.to_numpy(dtype=np.float64))
    assert set(encoder.categories_) == {1, 4}  # the categorical and the boolean column
    np.testing.assert_array_equal(out[:, 1], (table["colour"] == "red").astype(float))
    np.testing.assert_array_equal(out[:, 4], table["flag"].astype(float))


@pytest.mark.parametrize("rows", [slice(None), slice(5, 17), slice(0, 60, 7)])
def test_row_slices_encode_as_the_whole_table_does(rows):
    table = _mixed_table()
    encoder = TabularEncoder().fit(table, _Estimator())
    np.testing.assert_array_equal(encoder.encode(table.iloc[rows]),
                                  encoder.encode(table)[rows])


def test_an_unseen_category_is_predicted_silently_as_a_missing_cell():
    """As documented (TabSwiftClassifier's Notes, the user guide): no warning, and the same
    prediction as an empty cell, the guard's partners included."""
    import warnings

    from skfm import TabSwiftClassifier

    table = _mixed_table(80)[["int", "colour", "float32"]]
    table.loc[::9, "colour"] = np.nan
    y = (table["colour"] == "red").to_numpy(int) ^ (table["int"] > 2).to_numpy(int)
    # a random network, so that a partner takes part in the prediction
    clf = TabSwiftClassifier(checkpoint="random:tiny", n_estimators=1, n_jobs=1).fit(table, y)
    assert clf.blend_weight_ < 1.0
    unseen, empty = table.head(6).copy(), table.head(6).copy()
    unseen["colour"] = pd.Categorical(["green"] * 6)
    empty["colour"] = np.nan
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        proba = clf.predict_proba(unseen)
    np.testing.assert_array_equal(proba, clf.predict_proba(empty))
    assert not np.allclose(proba, clf.predict_proba(table.head(6)))
