"""Two revisions of the package side by side: the same solves, interleaved, best of N.

For a change that should not move a number (a refactoring, a new layout), this is the check
that it did not: each round runs every case once in the base revision and once in this
checkout, each in a fresh process, alternating; the table gives the best time of each, their
ratio, and whether status, iterations and objective agree. The machine's load is printed
before and after.

Run from the repository root::

    python benchmarks/bench_revisions.py --base 4031345            # 3 rounds
    python benchmarks/bench_revisions.py --base main~3 --rounds 5
    python benchmarks/bench_revisions.py --base main~1 --only estimator   # some cases only

The base revision is checked out with ``git worktree`` into a temporary folder (removed at the
end); the cases are the modelling layer's variants (``ssl_opt.modeling.variants``) with the
generic solvers that serve them, the families' examples with their paper's solvers, and a few
benchmark generators' instances (``ssl-opt bench``'s) at one size.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile

import _source_tree

#: (builder, size or example name, solver): variants take a size, examples a name.
CASES = [
    ("variant", "lapsvm_tv", 500, "irls-newton"),
    ("variant", "lass_entropy", 2400, "mirror"),
    ("variant", "lass_l1_graph", 2400, "admm-split"),
    ("variant", "ere_group", 600, "irls-mm"),
    ("variant", "ere_huber", 600, "irls-mm"),
    ("variant", "multiclass_simplex", 250, "pdhg"),
    ("variant", "multiclass_laprls", 1000, "laprls-columns"),
    ("variant", "linear_logistic_enet", 4000, "fista"),
    ("variant", "laprls_l1", 250, "irls-newton"),
    ("example", "lapsvm-moons", None, "newton"),
    ("example", "lapsvm-moons", None, "pcg"),
    ("example", "l2svm-text", None, "mfn"),
    ("example", "tsvm-text", None, "tsvm"),
    ("generator", "linear/tsvm", 32000, "tsvm"),
    ("generator", "linear/da", 32000, "da"),
    ("generator", "ere/robust", 300, "irls"),
    ("generator", "ere/robust", 1000, "irls"),
    ("generator", "ere/robust", 3000, "irls"),
    ("generator", "ere/robust", 10000, "irls"),
    ("generator", "npkl/square", 139, "bcd"),
    ("generator", "npkl/square", 563, "bcd"),
    ("generator", "npkl/square", 1113, "bcd"),
    ("generator", "npkl/squared_hinge", 563, "bcd"),
    ("generator", "npkl/squared_hinge", 1113, "bcd"),
    ("generator", "npkl/hinge", 563, "bcd"),
    ("example", "lass-moons", None, "fista"),
    ("example", "ere-robust-outliers", None, "irls"),
    ("example", "npkl-spiral-square", None, "bcd"),
    ("estimator", "LapRLSC", 1797, "auto"),
    ("estimator", "LapSVC", 1797, "auto"),
    ("estimator", "LapSVC", 600, "newton"),
]

CHILD = r"""
import json, sys, time, warnings
warnings.simplefilter("ignore")
import ssl_opt
from ssl_opt import registry
from ssl_opt.modeling import variants
cases = json.loads(sys.argv[1])


def fit_digits(name, n, solver):
    import numpy as np
    from sklearn.datasets import load_digits
    from ssl_opt import estimators
    X, y = load_digits(return_X_y=True)
    X, y = X[:n], y[:n]
    rng = np.random.default_rng(0)
    semi = np.full_like(y, -1)
    for k in np.unique(y):
        semi[rng.choice(np.flatnonzero(y == k), 3, replace=False)] = k
    est = getattr(estimators, name)(gamma_A=1e-6, gamma_I=1e-2, n_neighbors=10, solver=solver)
    start = time.perf_counter()
    est.fit(X, semi)
    seconds = time.perf_counter() - start
    sols = est.solution_
    return [seconds, "/".join(sorted({s.status for s in sols})),
            sum(s.iterations for s in sols), sum(s.objective for s in sols)]


examples = {e.name: e for e in registry.examples()}
out = {}
for kind, name, size, solver in cases:
    key = f"{name}:{size}:{solver}" if size is not None else f"{name}:{solver}"
    try:
        if kind == "estimator":
            out[key] = fit_digits(name, size, solver)
            continue
        if kind == "generator":
            problem = registry.generators()[name].instance(size)
        elif kind == "variant":
            problem = getattr(variants, name)(size)
        else:
            problem = examples[name].build()
        start = time.perf_counter()
        sol = ssl_opt.solve(problem, solver=solver)
        out[key] = [time.perf_counter() - start, sol.status, sol.iterations, sol.objective]
    except Exception as exc:  # a case the revision does not know: reported, not fatal
        out[key] = [float("nan"), type(exc).__name__, 0, float("nan")]
print(json.dumps(out))
"""


def load() -> str:
    one, five, fifteen = os.getloadavg()
    return f"load average {one:.2f} {five:.2f} {fifteen:.2f}"


def run(tree: str, cases: list) -> dict:
    env = {**os.environ, "PYTHONPATH": tree}
    proc = subprocess.run([sys.executable, "-c", CHILD, json.dumps(cases)], cwd=tree, env=env,
                          capture_output=True, text=True, check=True)
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--base", required=True, help="the git revision to compare with")
    parser.add_argument("--rounds", type=int, default=3, help="interleaved rounds (best of)")
    parser.add_argument("--only", nargs="*", default=(),
                        help="run the cases whose kind or name contains one of these words")
    args = parser.parse_args()
    cases = [c for c in CASES if not args.only or any(w in f"{c[0]} {c[1]}" for w in args.only)]
    root = str(_source_tree.ROOT)
    head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=root, text=True,
                          capture_output=True, check=True).stdout.strip()
    with tempfile.TemporaryDirectory() as tmp:
        base = os.path.join(tmp, "base")
        subprocess.run(["git", "worktree", "add", "--detach", "-f", base, args.base], cwd=root,
                       check=True, capture_output=True)
        try:
            print(f"base {args.base} vs this checkout ({head}, with any uncommitted change); "
                  f"{args.rounds} interleaved rounds, best of each; {load()}")
            runs: dict[str, list[dict]] = {"base": [], "head": []}
            for r in range(args.rounds):
                for name, tree in (("base", base), ("head", root)):
                    print(f"round {r + 1}: {name}", file=sys.stderr, flush=True)
                    runs[name].append(run(tree, cases))
        finally:
            subprocess.run(["git", "worktree", "remove", "--force", base], cwd=root,
                           capture_output=True)
    print(f"{'case':44s} {'base s':>8s} {'head s':>8s} {'head/base':>9s}  same status, "
          "iterations, objective (rel 1e-9)")
    for key in runs["head"][0]:
        b = min(r[key][0] for r in runs["base"] if key in r)
        h = min(r[key][0] for r in runs["head"])
        sb, sh = runs["base"][0].get(key), runs["head"][0][key]
        same = sb is not None and sb[1:3] == sh[1:3] and abs(sb[3] - sh[3]) <= 1e-9 * max(
            1.0, abs(sb[3]))
        print(f"{key:44s} {b:8.3f} {h:8.3f} {h / b:9.2f}  "
              f"{'yes' if same else 'NO: ' + str(sb) + ' vs ' + str(sh)}")
    print(load())


if __name__ == "__main__":
    main()
