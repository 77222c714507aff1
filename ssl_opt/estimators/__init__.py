"""scikit-learn estimators for every family (docs/estimators.md, docs/design.md §7).

``y = -1`` marks an unlabeled sample (scikit-learn's semi-supervised convention); labels take
any values in any order. Every estimator keeps the underlying ``problem_`` and ``solution_``
(one per class where one-vs-rest) and certifies them with ``certificate()``.

=====================  ==================================  ==================================
estimator              problem                             fast solvers
=====================  ==================================  ==================================
LapSVC                 LapSVM (squared hinge, any loss)    newton, pcg (early stopping)
LapRLSC                LapRLS                              laprls-direct (all classes), pcg
LinearL2SVC            LinearSVM on the labeled rows       mfn
TransductiveSVC        TSVM / DAS3VM                       tsvm, da
LaplacianAssignment    LASS                                fista, admm-split (generic)
EREClassifier          ERE (robust or squared)             irls
LRLClassifier          LRL                                 irls
NPKLKernel             NPKL                                bcd
=====================  ==================================  ==================================
"""

from ssl_opt.estimators import ere, lass, linear, manifold, npkl
from ssl_opt.estimators._diagnostics import DegenerateProblemWarning
from ssl_opt.estimators._labels import LabelConventionWarning
from ssl_opt.estimators.ere import EREClassifier, LRLClassifier
from ssl_opt.estimators.lass import LaplacianAssignment
from ssl_opt.estimators.linear import LinearL2SVC, TransductiveSVC
from ssl_opt.estimators.manifold import LapRLSC, LapSVC
from ssl_opt.estimators.npkl import NPKLKernel

#: scikit-learn checks each estimator is expected to fail, with the reason: estimator name →
#: {check name: reason}. Pass ``lambda est: EXPECTED_FAILED_CHECKS.get(type(est).__name__, {})``
#: as ``expected_failed_checks`` to ``parametrize_with_checks``.
EXPECTED_FAILED_CHECKS: dict[str, dict[str, str]] = {
    name: dict(checks)
    for module in (manifold, linear, lass, ere, npkl)
    for name, checks in module.EXPECTED_FAILED_CHECKS.items()
}

#: Every estimator class, for tests and documentation.
ESTIMATORS = (LapSVC, LapRLSC, LinearL2SVC, TransductiveSVC, LaplacianAssignment,
              EREClassifier, LRLClassifier, NPKLKernel)

__all__ = [
    "ESTIMATORS", "EXPECTED_FAILED_CHECKS", "DegenerateProblemWarning", "EREClassifier",
    "LRLClassifier", "LabelConventionWarning", "LapRLSC", "LapSVC", "LaplacianAssignment",
    "LinearL2SVC", "NPKLKernel", "TransductiveSVC",
]
