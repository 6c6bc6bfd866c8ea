"""scikit-learn's estimator checks over every skfm estimator."""

from sklearn.utils.estimator_checks import parametrize_with_checks

from skfm import TabSwiftClassifier, TabSwiftRegressor

ESTIMATORS = [
    TabSwiftClassifier(n_estimators=2),
    TabSwiftRegressor(n_estimators=2),
]


@parametrize_with_checks(ESTIMATORS)
def test_sklearn_compatible_estimator(estimator, check):
    check(estimator)
