"""Every classifier with its default parameters against scikit-learn's LabelSpreading with
its defaults: transductive accuracy (on the unlabeled training points) on the package's own
generators and on data sets scikit-learn ships, mean over seeds, and how many fits were
degenerate (``degenerate_`` set: a constant model, or every unlabeled point in one class).

    python benchmarks/bench_defaults.py                 # 3 seeds, every estimator
    python benchmarks/bench_defaults.py --seeds 5 --only LapSVC EREClassifier
    python benchmarks/bench_defaults.py --set LapSVC gamma_A=1e-2 gamma_I=1e-2
    python benchmarks/bench_defaults.py --only LapSVC --moons 4000 10000   # larger two moons

``--set`` runs that estimator with its defaults and with the given parameters side by side
(``NAME*``), interleaved in one run. The last row is the total fit time in seconds. No parameter
is tuned on these sets: the point is what a user gets without a grid search.
"""

from __future__ import annotations

import argparse
import time
import warnings

import _source_tree  # noqa: F401  (the checkout's ssl_opt, not an installed copy)
import numpy as np
from sklearn.datasets import load_breast_cancer, load_digits, load_wine, make_circles
from sklearn.preprocessing import StandardScaler
from sklearn.semi_supervised import LabelSpreading

from ssl_opt.datasets import g50c_like, gaussian_blobs, two_moons
from ssl_opt.estimators import (
    EREClassifier,
    LaplacianAssignment,
    LapRLSC,
    LapSVC,
    LinearL2SVC,
    LRLClassifier,
    TransductiveSVC,
)

ESTIMATORS = {cls.__name__: cls for cls in (LapSVC, LapRLSC, LinearL2SVC, TransductiveSVC,
                                             LaplacianAssignment, EREClassifier, LRLClassifier)}


def _per_class(name, X, truth, per_class, seed):
    """``per_class`` labeled points of every class, drawn with ``seed``; -1 elsewhere."""
    rng = np.random.default_rng(seed)
    y = np.full(truth.size, -1)
    for c in np.unique(truth):
        chosen = rng.choice(np.flatnonzero(truth == c), per_class, replace=False)
        y[chosen] = truth[chosen]
    return name, X, y, truth


def cases(seed: int, moons=()):
    """(name, X, y with -1 unlabeled, true labels) of every data set for one seed; ``moons``
    adds two moons of those sizes with 10 labels."""
    for n in moons:
        data = two_moons(n=n, n_labeled=10, seed=seed)
        yield f"two_moons n={n} l=10", data.X, data.semi_supervised_targets(), data.class_labels()
    for name, data in (("two_moons n=2000 l=10", two_moons(n=2000, n_labeled=10, seed=seed)),
                       ("two_moons n=400 l=4", two_moons(n=400, n_labeled=4, seed=seed)),
                       ("gaussian_blobs n=500 l=10", gaussian_blobs(n=500, n_labeled=10,
                                                                    seed=seed)),
                       ("g50c_like n=550 l=50", g50c_like(seed=seed))):
        yield name, data.X, data.semi_supervised_targets(), data.class_labels()
    X, truth = make_circles(600, noise=0.05, factor=0.5, random_state=seed)
    yield _per_class("circles n=600, 3/class", X, truth, 3, seed)
    X, truth = load_digits(return_X_y=True)
    yield _per_class("digits n=1797, 5/class", X, truth, 5, seed)
    X, truth = load_wine(return_X_y=True)
    yield _per_class("wine (scaled), 3/class", StandardScaler().fit_transform(X), truth, 3, seed)
    X, truth = load_breast_cancer(return_X_y=True)
    yield _per_class("breast_cancer (scaled), 5/class", StandardScaler().fit_transform(X),
                     truth, 5, seed)


def _value(text: str):
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return {"True": True, "False": False, "None": None}.get(text, text)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--only", nargs="*", choices=sorted(ESTIMATORS),
                        help="estimators to run (default: all)")
    parser.add_argument("--set", nargs="+", metavar=("ESTIMATOR", "NAME=VALUE"),
                        help="run one estimator with these parameters instead of its defaults")
    parser.add_argument("--moons", nargs="*", type=int, default=[], metavar="N",
                        help="also two moons of N points with 10 labels (e.g. 4000 10000)")
    args = parser.parse_args()
    models = {"LabelSpreading": LabelSpreading}
    for name in args.only or ESTIMATORS:
        models[name] = ESTIMATORS[name]
    params: dict = {}
    if args.set:
        target = args.set[0]
        if target not in ESTIMATORS or not all("=" in p for p in args.set[1:]):
            parser.error(f"--set takes an estimator of {sorted(ESTIMATORS)} and NAME=VALUE "
                         f"pairs, got {' '.join(args.set)!r}")
        params = {k: _value(v) for k, v in (p.split("=", 1) for p in args.set[1:])}
        models = {"LabelSpreading": LabelSpreading, target: ESTIMATORS[target],
                  f"{target}*": ESTIMATORS[target]}
    accuracy: dict = {}
    degenerate: dict = {}
    seconds = dict.fromkeys(models, 0.0)
    for seed in range(args.seeds):
        for case, X, y, truth in cases(seed, args.moons):
            unlabeled = y == -1
            for name, cls in models.items():
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    start = time.perf_counter()
                    est = cls(**(params if name.endswith("*") else {})).fit(X, y)
                    seconds[name] += time.perf_counter() - start
                hit = np.mean(est.transduction_[unlabeled] == truth[unlabeled])
                accuracy.setdefault(case, {}).setdefault(name, []).append(hit)
                degenerate.setdefault(case, {}).setdefault(name, 0)
                degenerate[case][name] += bool(getattr(est, "degenerate_", None))
    if params:
        print(f"{args.set[0]}* = {args.set[0]}({', '.join(args.set[1:])})")
    width = max(len(n) for n in models) + 2
    print(f"transductive accuracy %, mean of {args.seeds} seeds (degenerate fits in brackets)")
    print(f"{'data':32s}" + "".join(f"{n:>{width}s}" for n in models))
    for case, row in accuracy.items():
        cells = [f"{100 * np.mean(row[n]):.1f}" + (f" [{degenerate[case][n]}]"
                                                    if degenerate[case][n] else "")
                 for n in models]
        print(f"{case:32s}" + "".join(f"{c:>{width}s}" for c in cells))
    means = [f"{100 * np.mean([np.mean(r[n]) for r in accuracy.values()]):.1f}" for n in models]
    print(f"{'mean over data sets':32s}" + "".join(f"{m:>{width}s}" for m in means))
    print(f"{'fit seconds, all fits':32s}" + "".join(f"{seconds[n]:>{width}.1f}" for n in models))


if __name__ == "__main__":
    main()
