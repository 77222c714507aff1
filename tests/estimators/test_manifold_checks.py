"""scikit-learn's estimator checks on LapSVC and LapRLSC."""

from sklearn.utils.estimator_checks import parametrize_with_checks

from ssl_opt.estimators.manifold import EXPECTED_FAILED_CHECKS, LapRLSC, LapSVC


@parametrize_with_checks(
    [LapSVC(), LapRLSC(), LapSVC(loss="hinge", solver="reference")],
    expected_failed_checks=lambda est: EXPECTED_FAILED_CHECKS.get(type(est).__name__, {}))
def test_sklearn_compatible(estimator, check):
    check(estimator)
