#!/usr/bin/env bash
# Install sizes: a fresh virtual environment per extra, from this checkout, and what it holds.
#
#   bash benchmarks/install_size.sh                 # core, [reference], [all]
#   bash benchmarks/install_size.sh "" plot         # any list of extras ("" is the core)
#
# For each: the packages installed (pip's own left out), the size of site-packages (du, with
# the bytecode pip compiles), the time `from ssl_opt.estimators import LapSVC` takes (after a
# first, untimed import), whether it imported cvxpy, and a LapSVC
# fit on two moons (n = 200, 10 labels) with its certificate, so the core install is shown to
# work without the extras. Needs network access to PyPI (or a pip cache).
set -euo pipefail
cd "$(dirname "$0")/.."
extras=("$@")
[ "$#" -gt 0 ] || extras=("" "reference" "all")
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

printf '%-12s %8s %9s %8s %9s  %s\n' install packages "size MB" "import s" cvxpy "LapSVC fit on two moons"
for extra in "${extras[@]}"; do
  venv="$work/venv-${extra:-core}"
  python3 -m venv "$venv"
  target="."
  [ -z "$extra" ] || target=".[$extra]"
  "$venv/bin/pip" install -q "$target" >"$work/pip.log" 2>&1 \
    || { cat "$work/pip.log" >&2; exit 1; }
  site="$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
  count="$("$venv/bin/pip" list --format=freeze 2>/dev/null | grep -cv '^\(pip\|setuptools\)==')"
  size="$(du -sm "$site" | cut -f1)"
  (cd "$work" && "$venv/bin/python" -c 'import ssl_opt.estimators')  # a first import, untimed
  read -r seconds cvx <<<"$(cd "$work" && "$venv/bin/python" -c '
import sys, time
t = time.perf_counter()
from ssl_opt.estimators import LapSVC
print(f"{time.perf_counter() - t:.2f}", "cvxpy" in sys.modules)')"
  fit="$(cd "$work" && "$venv/bin/python" -c '
from sklearn.datasets import make_moons
from ssl_opt.estimators import LapSVC
X, y = make_moons(200, noise=0.1, random_state=0)
y[10:] = -1
est = LapSVC().fit(X, y)
cert = est.certificate()
gap = "none" if cert.objective_gap is None else "%.1e" % cert.objective_gap
print(f"solver {est.solution_.solver}, certificate passed={cert.passed}, gap {gap}")')"
  printf '%-12s %8s %9s %8s %9s  %s\n' "${extra:-core}" "$count" "$size" "$seconds" "$cvx" "$fit"
done
