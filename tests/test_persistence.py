"""What a user must trust to load a fitted skfm estimator with ``skops.io``.

``skops.io.get_untrusted_types`` lists, beside skfm's own classes, only the types that
``docs/getting_started.rst`` names ("Saving a fitted estimator"), per estimator and per the
partner a fit kept: nothing like ``functools.partial`` appears unless that page says where
it comes from. Each case below is fitted small and says which part it exercises.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import skops.io as sio
from sklearn.datasets import make_classification, make_regression
from test_common import _check_database

from skfm import (
    MantisTimeSeriesClassifier,
    RDBEncoder,
    SPNClassifier,
    TabMGPRegressor,
    TabSwiftClassifier,
    TabSwiftRegressor,
    TimePEFTForecaster,
)

GUIDE = Path(__file__).resolve().parents[1] / "docs" / "getting_started.rst"
# the types beside skfm's own, as the guide lists them
LINEAR_PARTNER = {"numpy.dtype"}  # the partner's SimpleImputer keeps its fitted dtype
BOOSTER = {"sklearn.ensemble._hist_gradient_boosting.predictor.TreePredictor"}
BOOSTER_CATEGORICAL = BOOSTER | {"functools.partial", "sklearn.utils.validation.check_array"}
MANTIS_MINIROCKET = {
    "sktime.transformations.rocket._minirocket_multivariate.MiniRocketMultivariate",
}
MANTIS_FUSION = MANTIS_MINIROCKET | {
    "sklearn.calibration._CalibratedClassifier",
    "sklearn.calibration._TemperatureScaling",
    "sklearn.model_selection._split.StratifiedKFold",
}


def _table(n=120, categorical=False):
    X, y = make_regression(n, 5, noise=5, random_state=0)
    X = pd.DataFrame(X, columns=list("abcde"))
    if categorical:
        X["c"] = pd.Categorical(np.array(list("xyz"))[np.arange(n) % 3])
    return X, y


def _cases():
    """(name, estimator, fit arguments, the part that must have been fitted, extra types)."""
    X, y = make_classification(120, 5, random_state=0)
    Xr, yr = _table()
    Xc, yc = _table(categorical=True)
    panel = np.random.default_rng(0).normal(size=(20, 1, 32)).cumsum(-1)
    tiny = {"n_estimators": 1, "n_jobs": 1}
    return [
        ("classifier, in-context model alone", TabSwiftClassifier(**tiny, guard=False),
         (X, y), lambda est: est.blend_weight_ == 1.0, set()),
        ("regressor, ridge partner", TabSwiftRegressor(**tiny), (Xr, yr),
         lambda est: est.linear_ is not None and est.booster_ is None, LINEAR_PARTNER),
        ("regressor, booster partner on a categorical column", TabSwiftRegressor(**tiny),
         (Xc, yc), lambda est: est.booster_ is not None, BOOSTER_CATEGORICAL),
        ("SPN", SPNClassifier(TabSwiftClassifier(**tiny, guard=False), budget=0.5), (X, y),
         lambda est: est.validation_scores_, set()),
        ("TabMGP", TabMGPRegressor(TabSwiftRegressor(**tiny, guard=False), n_rollouts=2,
                                   horizon=2), (Xr, yr), lambda est: True, set()),
        ("Mantis, its default late fusion with MiniRocket",
         MantisTimeSeriesClassifier(checkpoint="random:tiny", device="cpu",
                                    minirocket_kernels=84, cv=2),
         (panel, np.arange(20) % 2), lambda est: est.fusion_ is not None, MANTIS_MINIROCKET),
        ("Mantis with MiniRocket's features and a head picked by CV",
         MantisTimeSeriesClassifier(checkpoint="random:tiny", device="cpu", fusion="minirocket",
                                    minirocket_kernels=84, cv=2),
         (panel, np.arange(20) % 2), lambda est: est.fusion_ is not None, MANTIS_FUSION),
        ("RDBEncoder", RDBEncoder(_check_database(), "points", key_column=0, max_depth=1),
         (np.array([[0.25], [0.5], [0.75]]),), lambda est: True, set()),
        ("TimePEFT", TimePEFTForecaster(random_state=0),
         (pd.Series(np.sin(np.arange(60) / 3.0)),), lambda est: True, set()),
    ]


with warnings.catch_warnings():
    warnings.simplefilter("ignore", FutureWarning)  # sktime's remember_data notice
    CASES = _cases()


@pytest.mark.parametrize(("name", "estimator", "data", "fitted", "extra"), CASES,
                         ids=[case[0] for case in CASES])
def test_skops_lists_skfm_types_and_the_documented_ones_only(name, estimator, data, fitted,
                                                             extra):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # sktime's and convergence warnings: not the point
        if isinstance(estimator, TimePEFTForecaster):
            estimator.fit(*data, fh=[1, 2, 3])
        else:
            estimator.fit(*data)
    assert fitted(estimator), f"{name}: the case does not fit the part it is meant to"
    untrusted = set(sio.get_untrusted_types(data=sio.dumps(estimator)))
    assert {t for t in untrusted if not t.startswith("skfm.")} == extra, name
    loaded = sio.loads(sio.dumps(estimator), trusted=sorted(untrusted))
    assert type(loaded) is type(estimator)


def test_the_guide_names_every_type_a_user_may_be_asked_to_trust():
    guide = GUIDE.read_text(encoding="utf-8")
    for name in LINEAR_PARTNER | BOOSTER_CATEGORICAL | MANTIS_FUSION:
        assert f"``{name}``" in guide, name
    assert "trusted=sio.get_untrusted_types(" not in guide  # the file's list is read first
