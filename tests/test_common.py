"""Every public estimator and transformer of skfm through its library's checks, in one place.

``skfm.__all__`` is enumerated: each public name is either checked here, by scikit-learn's
``parametrize_with_checks`` or by sktime's ``check_estimator``, or listed in
``NOT_ESTIMATORS`` with the reason. A new public class that is in none of them fails
``test_every_public_name_is_checked``.

sktime's full suites take minutes per class on 2 cores (353 checks for the forecaster, most
of them the same prediction checks over many forecasting horizons), so the default run takes
``SKTIME_FAST_CHECKS``: one of every kind of check (interface, fit/predict contract, state,
persistence, errors) on the first test parameter set; ``-m slow`` runs everything.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
from sklearn.utils.estimator_checks import parametrize_with_checks
from threadpoolctl import threadpool_limits

import skfm
from skfm import (
    Database,
    MantisTimeSeriesClassifier,
    MantisTransformer,
    RDBEncoder,
    SPNClassifier,
    TabMGPRegressor,
    TabSwiftClassifier,
    TabSwiftRegressor,
)
from skfm._backend import threads

# sktime warns about its own coming change of default at every forecaster's construction.
pytestmark = pytest.mark.filterwarnings("ignore:.*remember_data.*:FutureWarning")

NOT_ESTIMATORS = {
    "Database": "a description of tables and keys that RDBEncoder takes as a parameter; "
                "it has no fit, so the estimator checks do not apply (tests/relational/test_relational.py)",
    "__version__": "a string",
    "best_response": "a function: the agents' move against a fitted classifier "
                     "(tests/tabular/test_strategic.py)",
}


# ------------------------------------------------------------------------- scikit-learn
def _check_database() -> Database:
    """Entities keyed by floats, as the estimator checks send random float arrays."""
    points = pd.DataFrame({"id": [0.25, 0.5, 0.75], "group": ["a", "b", "a"]})
    events = pd.DataFrame({"event_id": range(6), "point_id": [0.25, 0.25, 0.5, 0.5, 0.5, 0.75],
                           "value": [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]})
    return (Database()
            .add_table("points", points, primary_key="id")
            .add_table("events", events, primary_key="event_id",
                       foreign_keys={"point_id": "points"}))


SKLEARN_CHECKED = {
    "TabSwiftClassifier": TabSwiftClassifier(n_estimators=2),
    "TabSwiftRegressor": TabSwiftRegressor(n_estimators=2),
    # the bases without their guard (its partners' fits would dominate these checks' time):
    # the TabSwift entries above check the guarded defaults, and TabMGPRegressor's own
    # default base has guard=False
    "SPNClassifier": SPNClassifier(TabSwiftClassifier(n_estimators=2, n_jobs=1, guard=False)),
    "TabMGPRegressor": TabMGPRegressor(TabSwiftRegressor(n_estimators=1, n_jobs=1, guard=False),
                                       n_rollouts=2, horizon=2),
    # the default's fusion with MiniRocket, at its smallest (84 kernels) and with 2 folds
    "MantisTimeSeriesClassifier": MantisTimeSeriesClassifier(checkpoint="random:tiny",
                                                             device="cpu", minirocket_kernels=84,
                                                             cv=2),
    "MantisTransformer": MantisTransformer(checkpoint="random:tiny", device="cpu"),
    # The random float keys the checks send match no entity, so the relational columns are
    # 0 counts and NaN: these checks test the transformer's contract, tests/relational/test_relational.py
    # the features.
    "RDBEncoder": RDBEncoder(_check_database(), "points", key_column=0, max_depth=1),
}

FLOAT32_SUBSETS = (
    "float32 matrix products are blocked by batch size, so a row's output can differ in its "
    "last bits (~1e-6 relative, the check demands 1e-7) depending on how many rows are "
    "predicted with it. The model never lets test rows see each other: tests/tabular/model/test_tabswift.py "
    "checks that outputs do not depend on the other test rows, to float32 tolerance."
)
TABSWIFT_BASED = {"TabSwiftClassifier", "TabSwiftRegressor", "SPNClassifier", "TabMGPRegressor"}
FLOAT32_EMBEDDINGS = (
    "transform returns the float32 embeddings themselves (the classifier's: with MiniRocket's "
    "features), and a float32 matrix product rounds a row's last bits (~2e-7) by where the row "
    "falls in the product's blocks, so an embedding can change with the series embedded beside "
    "it (with torch's fused or math attention alike). Series never see each other: "
    "tests/timeseries/test_mantis.py embeds them in chunks of 3 and all at once, to float32 "
    "tolerance."
)


def expected_failed_checks(estimator) -> dict[str, str]:
    if type(estimator).__name__ in TABSWIFT_BASED:
        return {"check_methods_subset_invariance": FLOAT32_SUBSETS,
                "check_methods_sample_order_invariance": FLOAT32_SUBSETS}
    if isinstance(estimator, MantisTransformer | MantisTimeSeriesClassifier):
        # subset invariance passes (a row alone)
        return {"check_methods_sample_order_invariance": FLOAT32_EMBEDDINGS}
    return {}


@pytest.fixture(autouse=True)
def _one_thread():
    """One torch thread and one BLAS thread: the check data are tiny and the CI box is shared
    (on busy cores, OpenBLAS's spinning threads make a 100 x 100 eigendecomposition ~50x slower)."""
    with threads(1), threadpool_limits(1):
        yield


@parametrize_with_checks(list(SKLEARN_CHECKED.values()),
                         expected_failed_checks=expected_failed_checks)
def test_sklearn_compatible(estimator, check):
    with warnings.catch_warnings():
        # RDBEncoder's mean/std over no rows is NaN, the documented "no rows on this path".
        warnings.simplefilter("ignore", RuntimeWarning)
        check(estimator)


# ------------------------------------------------------------------------------ sktime
def _timepeft():
    from skfm import TimePEFTForecaster

    return TimePEFTForecaster


def _mantis_sktime():
    from skfm.timeseries import MantisSktimeClassifier

    return MantisSktimeClassifier


def _mantis_sktime_transformer():
    from skfm.timeseries import MantisSktimeTransformer

    return MantisSktimeTransformer


# For each public name, the sktime class that carries it into sktime's checks.
SKTIME_CHECKED = {
    "TimePEFTForecaster": _timepeft,
    "MantisTimeSeriesClassifier": _mantis_sktime,  # through its sktime adapter
    "MantisTransformer": _mantis_sktime_transformer,  # its sktime adapter; sklearn's above too
}

# One check of every kind, each seconds on the first test parameter set: the interface, the
# fit/predict contract, state, persistence and errors, then the checks of the estimator's kind.
SKTIME_FAST_CHECKS = [
    "test_constructor", "test_inheritance", "test_has_common_interface", "test_get_params",
    "test_set_params", "test_clone", "test_obj_vs_cls_signature", "test_create_test_instance",
    "test_class_tags_match_mro", "test_fit_returns_self", "test_fit_updates_state",
    "test_fit_does_not_overwrite_hyper_params", "test_fit_idempotent",
    "test_raises_not_fitted_error", "test_methods_have_no_side_effects",
    "test_non_state_changing_method_contract", "test_persistence_via_pickle",
    "test_deepcopy_fitted_predict",
]
SKTIME_FAST_CHECKS_OF_KIND = {
    "TimePEFTForecaster": [
        "test_get_fitted_params", "test_fit_predict", "test_fh_attribute", "test_cutoff",
        "test_y_invalid_type_raises_error", "test_fh_not_passed_error_handling",
        "test_predict_quantiles",
    ],
    "MantisTimeSeriesClassifier": [
        "test_classifier_output", "test_multioutput", "test_handles_single_class",
        "test_classifier_on_unit_test_data",
    ],
    "MantisTransformer": [
        "test_fit_transform_output", "test_capability_inverse_tag_is_correct",
        "test_categorical_X_raises_error", "test_multiprocessing_idempotent",
    ],
}


def _sktime_failures(cls, **options) -> tuple[int, dict]:
    from sktime.utils.estimator_checks import check_estimator

    skipped = cls.get_class_tag("tests:skip_by_name", None)  # reasons in the class's tags
    results = check_estimator(cls, raise_exceptions=False, verbose=False,
                              tests_to_exclude=skipped, **options)
    return len(results), {name: str(result) for name, result in results.items()
                          if result != "PASSED"}


@pytest.mark.parametrize("name, sktime_check", [
    (name, check) for name in sorted(SKTIME_CHECKED)
    for check in SKTIME_FAST_CHECKS + SKTIME_FAST_CHECKS_OF_KIND[name]])
def test_sktime_compatible_fast(name, sktime_check):
    """One check of the fast subset on the first test parameter set (all its fixtures)."""
    cls = SKTIME_CHECKED[name]()
    instance = cls(**cls.get_test_params()[0])
    n_checks, failed = _sktime_failures(instance, tests_to_run=[sktime_check])
    assert n_checks > 0, f"sktime ran no {sktime_check}: renamed or dropped?"
    assert not failed, failed


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(SKTIME_CHECKED))
def test_sktime_compatible_full(name):
    """sktime's full suite over every ``get_test_params`` set (minutes on 2 cores)."""
    n_checks, failed = _sktime_failures(SKTIME_CHECKED[name]())
    assert n_checks > 100 and not failed, failed


# ---------------------------------------------------------------------------- coverage
def test_every_public_name_is_checked():
    """Each name in ``skfm.__all__`` is checked above or says why it is not an estimator."""
    public = set(skfm.__all__)
    covered = set(SKLEARN_CHECKED) | set(SKTIME_CHECKED) | set(NOT_ESTIMATORS)
    assert public == covered, {"unchecked": public - covered, "not public": covered - public}
    for name, estimator in SKLEARN_CHECKED.items():
        assert type(estimator) is getattr(skfm, name)
    assert SKTIME_CHECKED["TimePEFTForecaster"]() is skfm.TimePEFTForecaster
    for name in NOT_ESTIMATORS:
        assert not hasattr(getattr(skfm, name), "fit"), name


def test_the_sktime_adapter_wraps_the_public_classifier():
    """The Mantis adapter checked by sktime is the public classifier behind sktime's API."""
    adapter = _mantis_sktime()(checkpoint="random:tiny", device="cpu")
    panel = np.random.default_rng(0).normal(size=(8, 1, 32)).cumsum(-1)
    labels = np.arange(8) % 2
    fitted = adapter.fit(panel, labels)
    assert isinstance(fitted.estimator_, MantisTimeSeriesClassifier)
