"""Hostile input over every public estimator: a hypothesis property battery.

Each test draws random data (sizes, seeds, numpy or pandas), applies one corruption
(NaN, +-inf, 1e300, constant or duplicated columns, a single row, zero features,
text/``pd.NA``/categorical columns, unicode or duplicate names, mismatched features,
unseen categories, empty arrays, wrong time-series shapes, ...) and runs ``fit`` and
the predict methods. The contract: the call ends in a finite, well-formed result, or
in a ``ValueError``/``TypeError`` whose message names the problem; never another
exception type, never a NaN or inf in an output that promises numbers. Where the
corruption has a known right answer (a single class, a constant target, an unseen
key) the answer is checked too.

The default run tries ``DEFAULT_EXAMPLES`` draws per (estimator, corruption), derandomised
so that CI sees the same cases every time; ``-m slow`` runs ``SLOW_EXAMPLES``. The number of
cases per estimator is printed at the end of the run (see ``tests/conftest.py``).
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from skfm import (
    Database,
    MantisTimeSeriesClassifier,
    RDBEncoder,
    SPNClassifier,
    TabMGPRegressor,
    TabSwiftClassifier,
    TabSwiftRegressor,
)

DEFAULT_EXAMPLES = 2
SLOW_EXAMPLES = 20


@dataclass(frozen=True)
class Expect:
    """What a corrupted call must end in.

    ``ok``: True, it must succeed; False, it must raise; None, either. ``match``: a regex
    (case-insensitive) that the message of a ``ValueError``/``TypeError`` must match.
    """

    ok: bool | None
    match: str = ""


SUCCEED = Expect(True)


def refuse(match: str) -> Expect:
    return Expect(False, match)


def either(match: str) -> Expect:
    return Expect(None, match)


@dataclass
class Case:
    """Data for one call: fit on ``X_fit, y``, then predict on ``X_pred``."""

    X_fit: object
    y: np.ndarray | None
    X_pred: object
    facts: dict = field(default_factory=dict)  # what the checks may rely on


def _check_outcome(run: Callable[[], None], expect: Expect, what: str) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            run()
        except (ValueError, TypeError) as err:
            assert expect.ok is not True, f"{what}: expected a result, got {err!r}"
            assert re.search(expect.match, str(err), re.IGNORECASE), (
                f"{what}: the message does not name the problem ({expect.match!r}): {err}"
            )
            return
    assert expect.ok is not False, f"{what}: expected an error matching {expect.match!r}"


def _run_property(strategy, body, n_examples: int) -> None:
    """Run ``body(draw)`` on ``n_examples`` derandomised draws of ``strategy``."""

    @settings(
        max_examples=n_examples,
        derandomize=True,
        deadline=None,
        database=None,
        suppress_health_check=list(HealthCheck),
        phases=[Phase.explicit, Phase.generate],  # no shrinking: a failure shows its draw
    )
    @given(strategy)
    def property_(drawn):
        body(drawn)

    property_()


def _finite(array, what: str) -> np.ndarray:
    array = np.asarray(array, dtype=np.float64)
    assert np.isfinite(array).all(), f"{what} has NaN or inf: {array}"
    return array


# ---------------------------------------------------------------- tabular estimators

TABULAR_DRAW = st.fixed_dictionaries(
    {
        "seed": st.integers(0, 2**32 - 1),
        "n_rows": st.integers(2, 24),
        "n_features": st.integers(1, 5),
        "n_pred": st.integers(1, 5),
        "as_frame": st.booleans(),
    }
)


def tabular_case(drawn: dict, task: str) -> tuple[np.random.Generator, Case]:
    """A clean table; corruptions edit it. ``X`` is a DataFrame until ``finish``."""
    rng = np.random.default_rng(drawn["seed"])
    n, f = drawn["n_rows"], drawn["n_features"]
    scale = 10.0 ** rng.integers(-3, 4)
    columns = [f"x{j}" for j in range(f)]
    X_fit = pd.DataFrame(rng.normal(size=(n, f)) * scale, columns=columns)
    X_pred = pd.DataFrame(rng.normal(size=(drawn["n_pred"], f)) * scale, columns=columns)
    if task == "classification":
        y = np.array(["no", "yes", "maybe"])[rng.integers(0, 3, n)]
        y[:2] = ["no", "yes"]
    else:
        y = X_fit.to_numpy()[:, 0] * rng.normal() + rng.normal(size=n) * scale
    return rng, Case(X_fit, y, X_pred, {"as_frame": drawn["as_frame"]})


def _cell(rng, frame: pd.DataFrame) -> tuple[int, int]:
    return int(rng.integers(len(frame))), int(rng.integers(frame.shape[1]))


def _numeric_columns(frame: pd.DataFrame) -> list[int]:
    return [j for j in range(frame.shape[1]) if pd.api.types.is_float_dtype(frame.dtypes.iloc[j])]


def _set_cells(rng, frame: pd.DataFrame, value, share: float) -> None:
    mask = rng.random(frame.shape) < share
    mask[rng.integers(len(frame)), rng.integers(frame.shape[1])] = True
    frame[mask] = value


def t_nan(rng, c):
    _set_cells(rng, c.X_fit, np.nan, 0.2)
    _set_cells(rng, c.X_pred, np.nan, 0.2)
    return SUCCEED


def t_inf_fit(rng, c):
    c.X_fit.iat[_cell(rng, c.X_fit)] = rng.choice([np.inf, -np.inf])
    return refuse("infinity")


def t_inf_predict(rng, c):
    c.X_pred.iat[_cell(rng, c.X_pred)] = -np.inf
    return refuse("infinity")


def t_huge(rng, c):
    _set_cells(rng, c.X_fit, 1e300, 0.2)
    _set_cells(rng, c.X_pred, -1e300, 0.2)
    return SUCCEED


def t_extreme_scale(rng, c):
    """Largest value 1e-300, 1e-13, 1e200 or 1e307."""
    largest, peak = rng.choice([1e-300, 1e-13, 1e200, 1e307]), np.abs(c.X_fit.to_numpy()).max()
    c.X_fit = c.X_fit / peak * largest  # in two steps: largest / peak may overflow
    c.X_pred = (c.X_pred / peak).clip(-1.0, 1.0) * largest
    return SUCCEED


def t_constant_column(rng, c):
    j = int(rng.integers(c.X_fit.shape[1]))
    c.X_fit.iloc[:, j] = 3.5
    c.X_pred.iloc[:, j] = rng.choice([3.5, -7.0])
    return SUCCEED


def t_all_constant(rng, c):
    c.X_fit.iloc[:, :] = 1.0
    return SUCCEED


def t_duplicated_column(rng, c):
    j = int(rng.integers(c.X_fit.shape[1]))
    c.X_fit["copy"] = c.X_fit.iloc[:, j]
    c.X_pred["copy"] = c.X_pred.iloc[:, j]
    return SUCCEED


def t_duplicated_rows(rng, c):
    rows = np.r_[np.arange(len(c.X_fit)), rng.integers(0, len(c.X_fit), len(c.X_fit))]
    c.X_fit = c.X_fit.iloc[rows].reset_index(drop=True)
    c.y = c.y[rows]
    return SUCCEED


def t_single_row(rng, c):
    c.X_fit, c.y = c.X_fit.iloc[:1], c.y[:1]
    c.facts["single_target"] = c.y[0]
    return SUCCEED


def t_single_class(rng, c):
    c.y = np.full_like(c.y, c.y[0])
    c.facts["single_target"] = c.y[0]
    return SUCCEED


def t_zero_features(rng, c):
    c.X_fit, c.X_pred = c.X_fit.iloc[:, :0], c.X_pred.iloc[:, :0]
    return refuse("0 feature")


def t_wide(rng, c):
    """More columns than the checkpoint's 100 features."""
    width = int(rng.integers(101, 160))
    for name in ("X_fit", "X_pred"):
        frame = getattr(c, name)
        wide = pd.DataFrame(rng.normal(size=(len(frame), width)),
                            columns=[f"w{j}" for j in range(width)])
        setattr(c, name, pd.concat([frame, wide], axis=1))
    return SUCCEED


def t_text_column(rng, c):
    levels = np.array(["red", "green", "blue", None], dtype=object)
    c.X_fit["text"] = levels[rng.integers(0, 4, len(c.X_fit))]
    c.X_pred["text"] = levels[rng.integers(0, 4, len(c.X_pred))]
    c.facts["frame_only"] = True
    return SUCCEED


def t_nullable_missing(rng, c):
    for frame in (c.X_fit, c.X_pred):
        values = rng.integers(0, 5, len(frame)).astype(object)
        values[rng.random(len(frame)) < 0.3] = None
        frame["int_na"] = pd.array(values, dtype="Int64")
        frame["object_na"] = pd.Series(
            [pd.NA if v is None else float(v) for v in values], dtype=object
        )
        frame["flag"] = pd.array([None if v is None else v > 2 for v in values], dtype="boolean")
    c.facts["frame_only"] = True
    return SUCCEED


def t_categorical_dtype(rng, c):
    c.X_fit["cat"] = pd.Categorical(rng.choice(["a", "b", "c"], len(c.X_fit)))
    c.X_pred["cat"] = pd.Categorical(rng.choice(["a", "c"], len(c.X_pred)),
                                     categories=["c", "a"])
    c.X_fit["string"] = pd.array(rng.choice(["u", "v", None], len(c.X_fit)), dtype="string")
    c.X_pred["string"] = pd.array(rng.choice(["u", None], len(c.X_pred)), dtype="string")
    c.facts["frame_only"] = True
    return SUCCEED


def t_unseen_categories(rng, c):
    c.X_fit["city"] = rng.choice(["Paris", "Oslo"], len(c.X_fit))
    c.X_pred["city"] = rng.choice(["Lima", "Ōsaka", "Paris"], len(c.X_pred))
    c.facts["frame_only"] = True
    return SUCCEED


def t_unicode_names(rng, c):
    names = [f"é名 ☃ {j} \"'`;--" for j in range(c.X_fit.shape[1])]
    c.X_fit.columns = c.X_pred.columns = names
    c.facts["frame_only"] = True
    return SUCCEED


def t_duplicate_names(rng, c):
    c.X_fit["again"] = c.X_fit.iloc[:, 0]
    c.X_pred["again"] = c.X_pred.iloc[:, 0]
    c.X_fit.columns = c.X_pred.columns = ["same"] * c.X_fit.shape[1]
    c.facts["frame_only"] = True
    return refuse("unique column names|duplicate")


def t_mixed_name_types(rng, c):
    c.X_fit["a"] = 1.0
    c.X_pred["a"] = 1.0
    c.X_fit.columns = c.X_pred.columns = list(range(c.X_fit.shape[1] - 1)) + ["a"]
    c.facts["frame_only"] = True
    return refuse("string")


def t_feature_mismatch(rng, c):
    if rng.random() < 0.5 or c.X_pred.shape[1] == 1:
        c.X_pred["extra"] = 0.0
    else:
        c.X_pred = c.X_pred.iloc[:, :-1]
    return refuse("feature")


def t_text_at_predict(rng, c):
    values = c.X_pred.iloc[:, 0].to_numpy(dtype=object, copy=True)
    values[0] = "oops"
    c.X_pred.isetitem(0, values)
    c.facts["frame_only"] = True
    return refuse("numeric")


def t_empty_fit(rng, c):
    c.X_fit, c.y = c.X_fit.iloc[:0], c.y[:0]
    return refuse("0 sample")


def t_empty_predict(rng, c):
    c.X_pred = c.X_pred.iloc[:0]
    return refuse("0 sample")


def t_missing_target(rng, c):
    c.y = np.array(c.y, dtype=object)
    c.y[int(rng.integers(len(c.y)))] = rng.choice([np.nan, None])
    return refuse("nan|label type|missing")


def t_object_array(rng, c):
    """A numpy object array holding numbers, None and numeric strings."""
    c.X_fit = c.X_fit.astype(object)
    c.X_fit.iat[_cell(rng, c.X_fit)] = None
    c.X_fit.iat[_cell(rng, c.X_fit)] = "2.5"
    c.facts["numpy_only"] = True
    return SUCCEED


TABULAR_CORRUPTIONS = {
    "nan": t_nan,
    "inf_at_fit": t_inf_fit,
    "inf_at_predict": t_inf_predict,
    "1e300": t_huge,
    "extreme_scale": t_extreme_scale,
    "constant_column": t_constant_column,
    "all_constant": t_all_constant,
    "duplicated_column": t_duplicated_column,
    "duplicated_rows": t_duplicated_rows,
    "single_row": t_single_row,
    "single_class": t_single_class,
    "zero_features": t_zero_features,
    "wide": t_wide,
    "text_column": t_text_column,
    "pd_NA_nullable": t_nullable_missing,
    "categorical_and_string_dtype": t_categorical_dtype,
    "unseen_categories": t_unseen_categories,
    "unicode_names": t_unicode_names,
    "duplicate_names": t_duplicate_names,
    "mixed_name_types": t_mixed_name_types,
    "feature_count_mismatch": t_feature_mismatch,
    "text_at_predict": t_text_at_predict,
    "empty_fit": t_empty_fit,
    "empty_predict": t_empty_predict,
    "missing_target": t_missing_target,
    "object_array": t_object_array,
}


def _finish(case: Case) -> Case:
    """Give the estimator numpy arrays where the draw asked for them and the data allow."""
    frame_only = case.facts.get("frame_only", False)
    if case.facts.get("numpy_only") or (not case.facts["as_frame"] and not frame_only):
        case.X_fit, case.X_pred = case.X_fit.to_numpy(), case.X_pred.to_numpy()
    return case


def check_classifier(est, case: Case) -> None:
    proba = _finite(est.predict_proba(case.X_pred), "predict_proba")
    n_pred = len(case.X_pred)
    assert proba.shape == (n_pred, len(est.classes_))
    np.testing.assert_allclose(proba.sum(1), 1.0, rtol=1e-5)
    predicted = est.predict(case.X_pred)
    assert set(predicted) <= set(est.classes_)
    if "single_target" in case.facts:
        assert (predicted == case.facts["single_target"]).all()


def check_regressor(est, case: Case) -> None:
    n_pred = len(case.X_pred)
    mean = _finite(est.predict(case.X_pred), "predict")
    assert mean.shape == (n_pred,)
    quantiles = _finite(est.predict(case.X_pred, output_type="quantiles"), "quantiles")
    assert (np.diff(quantiles, axis=1) >= 0).all()
    _finite(est.sample_y(case.X_pred, n_samples=2, random_state=0), "sample_y")
    if "single_target" in case.facts:  # a constant target is predicted as that constant
        target = float(case.facts["single_target"])
        np.testing.assert_allclose(mean, target, rtol=1e-9, atol=1e-300)


def check_spn(est, case: Case) -> None:
    check_classifier(est, case)
    moved = est.best_response(case.X_pred)
    assert np.shape(moved) == np.shape(case.X_pred)


def check_mgp(est, case: Case) -> None:
    mean = _finite(est.predict(case.X_pred), "predict")
    assert mean.shape == (len(case.X_pred),)
    _finite(est.posterior_samples_, "posterior_samples_")
    lower, upper = est.credible_interval(0.9)
    assert (_finite(lower, "lower") <= _finite(upper, "upper")).all()


FEW_COMPLETE_ROWS = either("complete rows|coefficients")


@dataclass(frozen=True)
class TabularSpec:
    name: str
    make: Callable
    task: str
    check: Callable
    overrides: dict = field(default_factory=dict)


TABULAR_SPECS = [
    TabularSpec("TabSwiftClassifier", lambda: TabSwiftClassifier(n_estimators=2, n_jobs=1),
                "classification", check_classifier),
    TabularSpec("TabSwiftRegressor", lambda: TabSwiftRegressor(n_estimators=2, n_jobs=1),
                "regression", check_regressor),
    TabularSpec(
        "SPNClassifier",
        lambda: SPNClassifier(TabSwiftClassifier(n_estimators=1, n_jobs=1)),
        "classification", check_spn,
    ),
    TabularSpec(
        "TabMGPRegressor",
        lambda: TabMGPRegressor(TabSwiftRegressor(n_estimators=1, n_jobs=1), n_rollouts=2,
                                horizon=2),
        "regression", check_mgp,
        overrides={
            # the linear estimand needs as many complete rows as coefficients
            "nan": FEW_COMPLETE_ROWS, "wide": FEW_COMPLETE_ROWS,
            "text_column": FEW_COMPLETE_ROWS, "pd_NA_nullable": FEW_COMPLETE_ROWS,
            "categorical_and_string_dtype": FEW_COMPLETE_ROWS,
            "unseen_categories": FEW_COMPLETE_ROWS, "duplicated_column": FEW_COMPLETE_ROWS,
            "object_array": FEW_COMPLETE_ROWS, "duplicated_rows": FEW_COMPLETE_ROWS,
            "single_class": FEW_COMPLETE_ROWS, "constant_column": FEW_COMPLETE_ROWS,
            "all_constant": FEW_COMPLETE_ROWS, "unicode_names": FEW_COMPLETE_ROWS,
            "1e300": either("complete rows|coefficients|rescale"),
            "extreme_scale": either("complete rows|coefficients|rescale"),
            "single_row": refuse("at least 2 rows"),
            # fit (which comes first) may refuse too few rows for the estimand
            "inf_at_predict": refuse("infinity|complete rows"),
            "feature_count_mismatch": refuse("feature|complete rows"),
            "text_at_predict": refuse("numeric|complete rows"),
            "empty_predict": refuse("0 sample|complete rows"),
            "huge_target": either("rescale|complete rows"),
        },
    ),
]


def t_huge_target(rng, c):
    c.y = c.y * 1e300
    return either("rescale")


REGRESSION_ONLY = {"huge_target": t_huge_target}


def _tabular_params():
    for spec in TABULAR_SPECS:
        corruptions = dict(TABULAR_CORRUPTIONS)
        if spec.task == "regression":
            corruptions.update(REGRESSION_ONLY)
        for name in corruptions:
            yield pytest.param(spec, name, corruptions[name], id=f"{spec.name}-{name}")


def _tabular_battery(spec: TabularSpec, name: str, corrupt, n_examples: int, counter) -> None:
    def body(drawn):
        counter[spec.name] += 1
        rng, case = tabular_case(drawn, spec.task)
        expect = corrupt(rng, case)
        expect = spec.overrides.get(name, expect)
        case = _finish(case)

        def run():
            est = spec.make().fit(case.X_fit, case.y)
            spec.check(est, case)

        _check_outcome(run, expect, f"{spec.name} / {name}")

    _run_property(TABULAR_DRAW, body, n_examples)


@pytest.mark.parametrize(("spec", "name", "corrupt"), list(_tabular_params()))
def test_tabular_hostile_input(spec, name, corrupt, hostile_case_counter):
    _tabular_battery(spec, name, corrupt, DEFAULT_EXAMPLES, hostile_case_counter)


@pytest.mark.slow
@pytest.mark.parametrize(("spec", "name", "corrupt"), list(_tabular_params()))
def test_tabular_hostile_input_many(spec, name, corrupt, hostile_case_counter):
    _tabular_battery(spec, name, corrupt, SLOW_EXAMPLES, hostile_case_counter)


# ------------------------------------------------------------------- time series

PANEL_DRAW = st.fixed_dictionaries(
    {
        "seed": st.integers(0, 2**32 - 1),
        "n_series": st.integers(4, 10),
        "n_channels": st.integers(1, 2),
        "length": st.integers(8, 48),
        "form": st.sampled_from(["3d", "2d", "frame", "list"]),
    }
)


def panel_case(drawn: dict) -> tuple[np.random.Generator, Case]:
    """A clean (n, C, T) panel; corruptions edit it, ``_panel_form`` picks the input type."""
    rng = np.random.default_rng(drawn["seed"])
    n, c, t = drawn["n_series"], drawn["n_channels"], drawn["length"]
    X = rng.normal(size=(n, c, t)).cumsum(-1) * 10.0 ** rng.integers(-3, 4)
    X_pred = rng.normal(size=(3, c, t)).cumsum(-1)
    y = np.arange(n) % 2
    return rng, Case(X, y, X_pred, {"form": drawn["form"]})


def _panel_form(X, form: str):
    """``X`` (n, C, T) as the drawn input type; 2-D forms only for one channel."""
    if not isinstance(X, np.ndarray) or X.ndim != 3:
        return X
    if form == "list":
        return [series for series in X]
    if X.shape[1] != 1 or form == "3d":
        return X
    if form == "frame":
        return pd.DataFrame(X[:, 0], columns=[f"t{j}" for j in range(X.shape[2])])
    return X[:, 0]


def p_nan(rng, c):
    c.X_fit[_panel_cell(rng, c.X_fit)] = np.nan
    return refuse("NaN")


def p_inf(rng, c):
    c.X_pred[_panel_cell(rng, c.X_pred)] = np.inf
    return refuse("inf")


def p_huge(rng, c):
    c.X_fit[_panel_cell(rng, c.X_fit)] = rng.choice([1e300, -1e16, 3e38])
    return refuse("rescale")


def _panel_cell(rng, X):
    return tuple(int(rng.integers(s)) for s in X.shape)


def p_constant(rng, c):
    c.X_fit[: len(c.X_fit) // 2] = 4.0
    c.X_pred[0] = 0.0
    return SUCCEED


def p_duplicated_rows(rng, c):
    c.X_fit = np.concatenate([c.X_fit, c.X_fit])
    c.y = np.concatenate([c.y, c.y])
    return SUCCEED


def p_single_row(rng, c):
    c.X_fit, c.y = c.X_fit[:1], c.y[:1]
    return refuse("2 classes")


def p_single_class(rng, c):
    c.y = np.zeros_like(c.y)
    return refuse("2 classes")


def p_too_short(rng, c):
    length = int(rng.integers(0, 2))
    c.X_fit = c.X_fit[..., :length]
    return refuse("time points")


def p_long(rng, c):
    c.X_fit = rng.normal(size=(len(c.X_fit), c.X_fit.shape[1], 3000)).cumsum(-1)
    if c.facts["form"] in ("2d", "frame"):  # there the length is the feature count
        c.facts["form"] = "3d"
    return SUCCEED


def p_many_channels(rng, c):
    channels = int(rng.integers(8, 24))
    c.X_fit = np.repeat(c.X_fit, channels, axis=1)
    c.X_pred = np.repeat(c.X_pred, channels, axis=1)
    return SUCCEED


def p_numeric_text(rng, c):
    c.X_fit = c.X_fit.astype(str)
    return SUCCEED


def p_text(rng, c):
    c.X_fit = c.X_fit.astype(object)
    c.X_fit[_panel_cell(rng, c.X_fit)] = "n/a"
    return refuse("numeric")


def p_pd_na(rng, c):
    c.X_pred = c.X_pred.astype(object)
    c.X_pred[_panel_cell(rng, c.X_pred)] = rng.choice([pd.NA, None])
    return refuse("NaN")


def p_complex(rng, c):
    c.X_fit = c.X_fit + 1j
    return refuse("numeric|complex")


def p_channel_mismatch(rng, c):
    c.X_pred = np.concatenate([c.X_pred, c.X_pred], axis=1)
    c.facts["form"] = "3d"
    return refuse("channel")


def p_ragged_lengths(rng, c):
    c.X_fit = [s[:, : int(rng.integers(4, s.shape[1] + 1))] for s in c.X_fit]
    c.X_pred = [s[:, : int(rng.integers(4, s.shape[1] + 1))] for s in c.X_pred]
    return SUCCEED


def p_other_length_at_predict(rng, c):
    c.X_pred = rng.normal(size=(2, c.X_pred.shape[1], int(rng.integers(5, 100))))
    c.facts["form"] = "3d"
    return SUCCEED


def p_length_mismatch_2d(rng, c):
    c.X_fit, c.X_pred = c.X_fit[:, :1], c.X_pred[:, :1, :-1]
    c.facts["form"] = rng.choice(["2d", "frame"])
    return refuse("feature")


def p_ragged_channels(rng, c):
    c.X_fit = [[s[0], s[0][:-1]] for s in c.X_fit]
    return refuse("ragged|equal length|same length")


def p_empty_fit(rng, c):
    c.X_fit, c.y = c.X_fit[:0], c.y[:0]
    c.facts["form"] = "3d"
    return refuse("0 sample")


def p_empty_predict(rng, c):
    c.X_pred = c.X_pred[:0]
    c.facts["form"] = rng.choice(["3d", "2d"])
    return refuse("0 sample")


def p_one_dimensional(rng, c):
    c.X_fit = c.X_fit[0, 0]
    return refuse("2D|2-D")


def p_four_dimensional(rng, c):
    c.X_fit = c.X_fit[..., None]
    return refuse("2-D")


def p_unicode_names(rng, c):
    c.X_fit, c.X_pred = c.X_fit[:, :1], c.X_pred[:, :1]
    names = [f"t ☃ é {j}" for j in range(c.X_fit.shape[2])]
    c.X_fit = pd.DataFrame(c.X_fit[:, 0], columns=names)
    c.X_pred = pd.DataFrame(c.X_pred[:, 0], columns=names)
    return SUCCEED


def p_duplicate_names(rng, c):
    c.X_fit = pd.DataFrame(c.X_fit[:, 0], columns=["t"] * c.X_fit.shape[2])
    return refuse("unique column names")


def p_y_length(rng, c):
    c.y = c.y[:-1]
    return refuse("inconsistent numbers of samples")


PANEL_CORRUPTIONS = {
    "nan": p_nan,
    "inf": p_inf,
    "1e300_and_float32_overflow": p_huge,
    "constant_series": p_constant,
    "duplicated_rows": p_duplicated_rows,
    "single_row": p_single_row,
    "single_class": p_single_class,
    "too_short": p_too_short,
    "long_series": p_long,
    "many_channels": p_many_channels,
    "numeric_text": p_numeric_text,
    "text": p_text,
    "pd_NA": p_pd_na,
    "complex": p_complex,
    "channel_mismatch": p_channel_mismatch,
    "ragged_lengths": p_ragged_lengths,
    "other_length_at_predict": p_other_length_at_predict,
    "length_mismatch_2d": p_length_mismatch_2d,
    "ragged_channels": p_ragged_channels,
    "empty_fit": p_empty_fit,
    "empty_predict": p_empty_predict,
    "one_dimensional": p_one_dimensional,
    "four_dimensional": p_four_dimensional,
    "unicode_names": p_unicode_names,
    "duplicate_names": p_duplicate_names,
    "y_length_mismatch": p_y_length,
}


def _panel_battery(name: str, corrupt, n_examples: int, counter) -> None:
    def body(drawn):
        counter["MantisTimeSeriesClassifier"] += 1
        rng, case = panel_case(drawn)
        expect = corrupt(rng, case)
        form = case.facts["form"]
        X_fit, X_pred = _panel_form(case.X_fit, form), _panel_form(case.X_pred, form)

        def run():
            est = MantisTimeSeriesClassifier(n_jobs=1).fit(X_fit, case.y)
            proba = _finite(est.predict_proba(X_pred), "predict_proba")
            np.testing.assert_allclose(proba.sum(1), 1.0, rtol=1e-6)
            features = _finite(est.transform(X_pred), "transform")
            assert features.shape[0] == proba.shape[0] == len(X_pred)

        _check_outcome(run, expect, f"Mantis / {name}")

    _run_property(PANEL_DRAW, body, n_examples)


@pytest.mark.parametrize(("name", "corrupt"), PANEL_CORRUPTIONS.items(), ids=list(PANEL_CORRUPTIONS))
def test_mantis_hostile_input(name, corrupt, hostile_case_counter):
    _panel_battery(name, corrupt, DEFAULT_EXAMPLES, hostile_case_counter)


@pytest.mark.slow
@pytest.mark.parametrize(("name", "corrupt"), PANEL_CORRUPTIONS.items(), ids=list(PANEL_CORRUPTIONS))
def test_mantis_hostile_input_many(name, corrupt, hostile_case_counter):
    _panel_battery(name, corrupt, SLOW_EXAMPLES, hostile_case_counter)


# -------------------------------------------------------------------- relational

DATABASE_DRAW = st.fixed_dictionaries(
    {
        "seed": st.integers(0, 2**32 - 1),
        "n_users": st.integers(1, 8),
        "n_orders": st.integers(0, 30),
        "text_keys": st.booleans(),
        "cutoff": st.booleans(),
    }
)


@dataclass
class DatabaseCase:
    users: pd.DataFrame
    orders: pd.DataFrame
    X_fit: pd.DataFrame
    X_pred: pd.DataFrame
    unseen: np.ndarray  # rows of X_pred whose key is in no table


def database_case(drawn: dict) -> tuple[np.random.Generator, DatabaseCase]:
    rng = np.random.default_rng(drawn["seed"])
    n_users, n_orders = drawn["n_users"], drawn["n_orders"]
    keys = np.arange(n_users) * 7 + 1
    if drawn["text_keys"]:
        keys = np.array([f"user-{k}" for k in keys], dtype=object)
    users = pd.DataFrame({"user_id": keys, "country": rng.choice(["FR", "DE", "JP"], n_users),
                          "age": rng.normal(40, 9, n_users)})
    orders = pd.DataFrame({
        "order_id": np.arange(n_orders),
        "user_id": keys[rng.integers(0, n_users, n_orders)],
        "amount": rng.lognormal(3, 1, n_orders),
        "time": pd.Timestamp("2024-01-01") + pd.to_timedelta(rng.integers(0, 300, n_orders), "D"),
    })
    X_fit = pd.DataFrame({"user_id": keys[rng.integers(0, n_users, 6)]})
    X_pred = pd.DataFrame({"user_id": keys[rng.integers(0, n_users, 4)]})
    if drawn["cutoff"]:
        for X in (X_fit, X_pred):
            X["cutoff"] = pd.Timestamp("2024-06-01") + pd.to_timedelta(
                rng.integers(-100, 100, len(X)), "D")
    return rng, DatabaseCase(users, orders, X_fit, X_pred, np.zeros(len(X_pred), bool))


def _order_cells(rng, orders, share=0.3):
    return rng.random(len(orders)) < share


def r_nan(rng, c):
    c.orders.loc[_order_cells(rng, c.orders), "amount"] = np.nan
    c.users.loc[rng.random(len(c.users)) < 0.3, "age"] = np.nan
    return SUCCEED


def r_inf(rng, c):
    c.orders["amount"] = np.r_[rng.choice([np.inf, -np.inf]), c.orders["amount"].iloc[1:]] \
        if len(c.orders) else []
    c.users.loc[0, "age"] = np.inf
    return refuse("infinite")


def r_huge(rng, c):
    c.orders["amount"] = c.orders["amount"] * rng.choice([1e300, -1e300, 1e-300])
    return either("overflow")


def r_constant(rng, c):
    c.orders["amount"] = 2.0
    c.users["country"] = "FR"
    return SUCCEED


def r_duplicated_column(rng, c):
    c.orders["amount_again"] = c.orders["amount"]
    return SUCCEED


def r_duplicated_rows(rng, c):
    copies = c.orders.copy()
    copies["order_id"] = copies["order_id"] + len(c.orders)
    c.orders = pd.concat([c.orders, copies], ignore_index=True)
    return SUCCEED


def r_duplicated_primary_key(rng, c):
    c.users = pd.concat([c.users, c.users.iloc[:1]], ignore_index=True)
    return refuse("not unique")


def r_single_rows(rng, c):
    c.users, c.orders = c.users.iloc[:1], c.orders.iloc[:1]
    c.X_fit = c.X_fit.assign(user_id=c.users["user_id"].iloc[0])
    c.X_pred = c.X_pred.assign(user_id=c.users["user_id"].iloc[0])
    return SUCCEED


def r_empty_child(rng, c):
    c.orders = c.orders.iloc[:0]
    return SUCCEED


def r_zero_columns(rng, c):
    c.X_fit = c.X_fit.iloc[:, :0]
    return refuse("0 feature|not a column")


def r_wide(rng, c):
    extra = pd.DataFrame(rng.normal(size=(len(c.orders), 40)),
                         columns=[f"m{j}" for j in range(40)])
    c.orders = pd.concat([c.orders, extra], axis=1)
    return SUCCEED


def r_dtypes(rng, c):
    n = len(c.orders)
    c.orders["mixed"] = np.array([1, "a", None, 2.5] * n, dtype=object)[:n]
    c.orders["int_na"] = pd.array(rng.choice([1, 2, None], n), dtype="Int64")
    c.orders["object_na"] = pd.Series(rng.choice([pd.NA, 1.5], n), dtype=object)
    c.orders["cat"] = pd.Categorical(rng.choice(["x", "y"], n))
    c.orders["string"] = pd.array(rng.choice(["s", None], n), dtype="string")
    c.orders["flag"] = rng.random(n) < 0.5
    return SUCCEED


def r_unicode_names(rng, c):
    c.orders = c.orders.rename(columns={"amount": "montant é名 \"'` ;--"})
    c.users = c.users.rename(columns={"age": "âge ☃"})
    return SUCCEED


def r_duplicate_table_columns(rng, c):
    c.orders = pd.concat([c.orders, c.orders[["amount"]]], axis=1)
    return refuse("duplicate column names")


def r_x_mismatch(rng, c):
    c.X_pred = c.X_pred.assign(extra=1.0)
    return refuse("feature")


def r_unseen_keys(rng, c):
    numeric = pd.api.types.is_numeric_dtype(c.users["user_id"])
    c.X_pred.loc[0, "user_id"] = -5 if numeric else "nobody"
    c.unseen[0] = True
    return SUCCEED


def r_empty_x(rng, c):
    c.X_pred = c.X_pred.iloc[:0]
    return refuse("0 sample")


def r_missing_key(rng, c):
    c.X_pred["user_id"] = c.X_pred["user_id"].astype(object)
    c.X_pred.loc[0, "user_id"] = rng.choice([None, pd.NA, np.nan])
    return refuse("missing")


def r_text_passthrough(rng, c):
    c.X_fit["note"] = rng.choice(["text", "more", None], len(c.X_fit))
    c.X_pred["note"] = rng.choice(["text", "unseen", None], len(c.X_pred))
    return SUCCEED


def r_missing_passthrough(rng, c):
    c.X_fit["score"] = pd.Series(rng.choice([pd.NA, 2.0, None], len(c.X_fit)), dtype=object)
    c.X_pred["score"] = pd.array(rng.choice([None, 3], len(c.X_pred)), dtype="Int64")
    return SUCCEED


def r_duplicate_x_names(rng, c):
    c.X_fit = pd.concat([c.X_fit, c.X_fit[["user_id"]]], axis=1)
    return refuse("unique column names")


RELATIONAL_CORRUPTIONS = {
    "nan": r_nan,
    "inf": r_inf,
    "1e300_and_1e-300": r_huge,
    "constant_columns": r_constant,
    "duplicated_column": r_duplicated_column,
    "duplicated_rows": r_duplicated_rows,
    "duplicated_primary_key": r_duplicated_primary_key,
    "single_rows": r_single_rows,
    "empty_child_table": r_empty_child,
    "zero_columns": r_zero_columns,
    "wide": r_wide,
    "object_pd_NA_categorical_string": r_dtypes,
    "unicode_names": r_unicode_names,
    "duplicate_table_columns": r_duplicate_table_columns,
    "feature_mismatch": r_x_mismatch,
    "unseen_keys": r_unseen_keys,
    "empty_X": r_empty_x,
    "missing_key": r_missing_key,
    "text_passthrough": r_text_passthrough,
    "missing_passthrough": r_missing_passthrough,
    "duplicate_X_names": r_duplicate_x_names,
}


def _relational_battery(name: str, corrupt, n_examples: int, counter) -> None:
    def body(drawn):
        counter["RDBEncoder"] += 1
        rng, case = database_case(drawn)
        expect = corrupt(rng, case)
        cutoff = "cutoff" if "cutoff" in case.X_fit else None

        def run():
            database = (
                Database()
                .add_table("users", case.users, primary_key="user_id")
                .add_table("orders", case.orders, primary_key="order_id",
                           foreign_keys={"user_id": "users"}, time_column="time")
            )
            encoder = RDBEncoder(database, "users", cutoff_column=cutoff,
                                 key_column="user_id" if case.X_fit.shape[1] == 0 else None)
            encoder.fit(case.X_fit)
            out = np.asarray(encoder.transform(case.X_pred), dtype=np.float64)
            names = encoder.get_feature_names_out()
            assert out.shape == (len(case.X_pred), len(names))
            assert not np.isinf(out).any(), "RDBEncoder output holds inf"
            counts = [j for j, n in enumerate(names) if n.startswith("count(")]
            assert (_finite(out[:, counts], "count features") >= 0).all()
            if case.unseen.any():  # an unknown entity has no rows on any path
                assert (out[case.unseen][:, counts] == 0).all()

        _check_outcome(run, expect, f"RDBEncoder / {name}")

    _run_property(DATABASE_DRAW, body, n_examples)


@pytest.mark.parametrize(("name", "corrupt"), RELATIONAL_CORRUPTIONS.items(),
                         ids=list(RELATIONAL_CORRUPTIONS))
def test_rdb_encoder_hostile_input(name, corrupt, hostile_case_counter):
    _relational_battery(name, corrupt, DEFAULT_EXAMPLES, hostile_case_counter)


@pytest.mark.slow
@pytest.mark.parametrize(("name", "corrupt"), RELATIONAL_CORRUPTIONS.items(),
                         ids=list(RELATIONAL_CORRUPTIONS))
def test_rdb_encoder_hostile_input_many(name, corrupt, hostile_case_counter):
    _relational_battery(name, corrupt, SLOW_EXAMPLES, hostile_case_counter)


# -------------------------------------------------------------------- forecasting

SERIES_DRAW = st.fixed_dictionaries(
    {
        "seed": st.integers(0, 2**32 - 1),
        "length": st.integers(14, 80),
        "n_channels": st.integers(1, 3),
        "as_series": st.booleans(),
    }
)
FORECAST_TINY = dict(checkpoint="random:tiny", context_length=8, horizon=6, max_epochs=2,
                     batch_size=8, device="cpu", n_jobs=1)


def series_case(drawn: dict) -> tuple[np.random.Generator, Case]:
    """A clean multivariate series ``y`` (DataFrame); ``X_pred`` holds the horizon ``fh``."""
    rng = np.random.default_rng(drawn["seed"])
    values = rng.normal(size=(drawn["length"], drawn["n_channels"])).cumsum(0)
    y = pd.DataFrame(values * 10.0 ** rng.integers(-3, 4),
                     columns=[f"c{j}" for j in range(drawn["n_channels"])])
    return rng, Case(None, y, [1, 2, 3], {"as_series": drawn["as_series"]})


def f_nan(rng, c):
    c.y.iat[int(rng.integers(len(c.y))), 0] = np.nan
    return refuse("nan|missing")


def f_inf(rng, c):
    c.y.iat[int(rng.integers(len(c.y))), 0] = -np.inf
    return refuse("inf")


def f_huge(rng, c):
    c.y.iat[int(rng.integers(len(c.y))), 0] = rng.choice([1e300, 1e30, 2e12])
    return refuse("rescale")


def f_large_allowed(rng, c):
    c.y = c.y / np.abs(c.y.to_numpy()).max() * 1e11
    return SUCCEED


def f_tiny(rng, c):
    c.y = c.y * 1e-300
    return SUCCEED


def f_constant(rng, c):
    c.y.iloc[:, 0] = 7.0
    return SUCCEED


def f_short(rng, c):
    c.y = c.y.iloc[: int(rng.integers(0, 14))]
    return refuse("time points")


def f_text(rng, c):
    c.y["note"] = "n/a"
    c.facts["as_series"] = False
    return refuse("categorical|numeric")


def f_pd_na(rng, c):
    c.y = c.y.astype("Float64")
    c.y.iat[int(rng.integers(len(c.y))), 0] = pd.NA
    return refuse("nan|missing")


def f_duplicate_names(rng, c):
    c.y["again"] = c.y.iloc[:, 0]
    c.y.columns = ["same"] * c.y.shape[1]
    c.facts["as_series"] = False
    return refuse("unique|duplicate|compatible format")


def f_unicode_names(rng, c):
    c.y.columns = [f"é ☃ 名 {j}" for j in range(c.y.shape[1])]
    return SUCCEED


def f_wide(rng, c):
    c.y = pd.concat([c.y] + [c.y.add_suffix(f"_{k}") for k in range(8)], axis=1)
    c.facts["as_series"] = False
    return SUCCEED


FORECAST_CORRUPTIONS = {
    "nan": f_nan,
    "inf": f_inf,
    "1e300_and_float32_overflow": f_huge,
    "1e11": f_large_allowed,
    "1e-300": f_tiny,
    "constant": f_constant,
    "too_short_or_empty": f_short,
    "text_column": f_text,
    "pd_NA": f_pd_na,
    "duplicate_names": f_duplicate_names,
    "unicode_names": f_unicode_names,
    "many_channels": f_wide,
}


def _forecast_battery(name: str, corrupt, n_examples: int, counter) -> None:
    from skfm import TimePEFTForecaster

    def body(drawn):
        counter["TimePEFTForecaster"] += 1
        rng, case = series_case(drawn)
        expect = corrupt(rng, case)
        y = case.y
        if case.facts["as_series"] and y.shape[1] == 1:
            y = y.iloc[:, 0]

        def run():
            forecast = TimePEFTForecaster(**FORECAST_TINY).fit(y, fh=case.X_pred)
            predicted = _finite(np.asarray(forecast.predict(case.X_pred), dtype=float),
                                "forecast")
            assert predicted.shape[0] == len(case.X_pred)

        _check_outcome(run, expect, f"TimePEFT / {name}")

    _run_property(SERIES_DRAW, body, n_examples)


@pytest.mark.parametrize(("name", "corrupt"), FORECAST_CORRUPTIONS.items(),
                         ids=list(FORECAST_CORRUPTIONS))
def test_timepeft_hostile_input(name, corrupt, hostile_case_counter):
    _forecast_battery(name, corrupt, DEFAULT_EXAMPLES, hostile_case_counter)


@pytest.mark.slow
@pytest.mark.parametrize(("name", "corrupt"), FORECAST_CORRUPTIONS.items(),
                         ids=list(FORECAST_CORRUPTIONS))
def test_timepeft_hostile_input_many(name, corrupt, hostile_case_counter):
    _forecast_battery(name, corrupt, SLOW_EXAMPLES, hostile_case_counter)


# -------------------------------------------------------------------------- files


def test_skops_file_with_a_dangerous_function_is_refused_unless_trusted(tmp_path):
    """A skops file referencing ``os.system`` loads only when the user trusts that type."""
    import os

    import skops.io as sio

    path = tmp_path / "estimand.skops"
    sio.dump(TabMGPRegressor(estimand=os.system), path)
    untrusted = sio.get_untrusted_types(file=path)
    assert any(name.endswith(".system") for name in untrusted)
    with pytest.raises(sio.exceptions.UntrustedTypesFoundException, match="system"):
        sio.load(path)
    assert sio.load(path, trusted=untrusted).estimand is os.system


def test_loading_checkpoints_never_unpickles(monkeypatch):
    """The shipped checkpoints load, and the estimators fit and predict, with pickle disabled."""
    import pickle

    import torch

    from skfm._weights import clear_cache, registry

    def forbidden(*args, **kwargs):
        raise AssertionError("a checkpoint was unpickled")

    # numba reads its compiled-function cache (MiniRocket's kernels) with pickle: load it first,
    # so that only the checkpoints' loading is tested (the test order decided it before)
    from sktime.transformations.panel.rocket import MiniRocketMultivariate

    MiniRocketMultivariate(num_kernels=84).fit(np.zeros((2, 1, 16)))

    for module, name in [(pickle, "load"), (pickle, "loads"), (torch, "load")]:
        monkeypatch.setattr(module, name, forbidden)
    monkeypatch.setattr(pickle, "Unpickler", forbidden)
    registry._load_verified.cache_clear()
    clear_cache()
    X = np.random.default_rng(0).normal(size=(20, 16))
    y = np.arange(20) % 2
    TabSwiftClassifier(n_estimators=1, n_jobs=1).fit(X, y).predict(X)
    MantisTimeSeriesClassifier(n_jobs=1).fit(X, y).predict(X)
