r"""ADMM for LASS with one cached linear solver [002 §3, eq. 17].

Scaled ADMM on ``Z = Y`` with ``Y ≥ 0``, the row sums kept in the Z-update. Each iteration::

    ν = (ρ/K)(Y − U)1 + (G1 − ρ1)/K                    row-sum multiplier, closed form
    Z = (2λL + ρI)⁻¹ (G + ρ(Y − U) − ν1ᵀ)              one solve for all K columns
    Y = max(Z + U, 0)
    U = U + Z − Y

``Z1 = 1`` holds at every iterate because ``L1 = 0`` (so ``(2λL + ρI)1 = ρ1``); with inexact
(CG) solves it is restored exactly by re-centering the rows of the solve. At convergence the
KKT multipliers are ``−ν`` (row sums) and ``Ψ = −ρU ≥ 0`` [002 Th. 3.2]. Stopping (every
iteration, O(NK)): primal residual ``max|Z − Y|`` and dual residual ``ρ max|ΔY| / s`` below
``tol`` (``s = max(1, max|G|)``), or the paper's ``max|ΔZ| < tol`` with ``stop="change"``.

Each connected component of the graph is solved on its own [002 Remark 2.3]; an isolated item
has the linear program's solution (uniform over its most similar categories). ρ defaults to
``2λ√(μ₂ μ_max)`` from the component's Laplacian spectrum (Ghadimi et al., cited in [002
§3.7]); ``adaptive_rho`` balances the residuals (Boyd et al. §3.4.1), which refactorizes.

Acceleration (defaults): the iteration is a fixed-point map on one N×K matrix (see
:func:`_admm_component`), and Anderson acceleration with memory 10 plus residual balancing cut
the iterations of the plain iteration at the default ρ several-fold on 10-NN graphs (measured
in docs/lass.md, ``python benchmarks/ablations.py``).
``anderson=0, adaptive_rho=False`` is the paper's plain iteration.
"""

from __future__ import annotations

import numbers
import time
import warnings

import numpy as np
import scipy.sparse as sp
from scipy.sparse.linalg import eigsh, lobpcg
from threadpoolctl import threadpool_limits

from ssl_opt._validation import (
    as_float_array,
    check_bool,
    check_positive,
    choice,
    integer,
    optional,
)
from ssl_opt.components.simplex import project_rows_to_simplex
from ssl_opt.exceptions import InvalidInputError
from ssl_opt.hookspecs import hookimpl
from ssl_opt.numerics.anderson import SafeguardedAnderson
from ssl_opt.numerics.factor import predicted_fill
from ssl_opt.plugins.lass.laplacian_solve import BlockCG, FactorSolve
from ssl_opt.problems.lass.problem import LASS, lp_assignment
from ssl_opt.solution import MAX_ITERATIONS, OPTIMAL, History, Solution
from ssl_opt.solvers import Option, Solver

#: ``linear_solver="auto"`` factorizes components up to this size, and larger ones when the
#: predicted fill (:func:`choose_linear_solver`) stays below ``FACTOR_MAX_FILL`` entries.
FACTOR_MAX_N = 5000
FACTOR_MAX_FILL = 1e7  # a 10-NN graph of 100,000 2-D points stays below (docs/lass.md)
PROBE_SIZES = (2000, 4000)
#: ... and below this multiple of nnz(2λL + ρI): above it block CG was faster (10-D data,
#: measured in docs/lass.md).
FILL_PER_NNZ = 10.0
#: CG stops at CG_FORCING × the current ADMM residual (times the scale of G).
CG_FORCING = 0.3
#: Adaptive ρ changes at most this many times (each one refactorizes in factor mode).
MAX_RHO_CHANGES = 30


def choose_linear_solver(L: sp.csr_matrix, lam: float, rho: float) -> str:
    """``"factor"`` when a sparse factorization of ``2λL + ρI`` is predicted to stay small.

    Fill depends on the graph's intrinsic dimension, which sizes alone do not show. Factor two
    breadth-first balls of the graph (2,000 and 4,000 items), read the fill growth exponent
    ``e`` off their ratio, and predict ``fill(N) = fill(4000)·(N/4000)^e`` (close to the
    actual fill on the 10-NN graphs of docs/lass.md, 2-D and 10-D). Factor when the prediction
    is below ``FACTOR_MAX_FILL`` and ``FILL_PER_NNZ·nnz(A)``.
    """
    n = L.shape[0]
    if n <= FACTOR_MAX_N:
        return "factor"
    predicted = predicted_fill(2.0 * lam * L + rho * sp.identity(n, format="csr"), PROBE_SIZES)
    # A solve with the factor costs ~2·fill per column; warm-started CG ~10 products with A.
    nnz_A = L.nnz + n
    return "factor" if predicted <= min(FACTOR_MAX_FILL, FILL_PER_NNZ * nnz_A) else "cg"


def laplacian_extremes(L: sp.csr_matrix, seed: int = 0) -> tuple[float, float]:
    """``(μ₂, μ_max)``: smallest non-zero and largest eigenvalue of a connected graph's L
    (to ~1e-2 relative: only used to choose ρ)."""
    n = L.shape[0]
    if n <= 400:
        mu = np.linalg.eigvalsh(L.toarray())
        return float(mu[1]), float(mu[-1])
    mu_max = float(eigsh(L, k=1, which="LA", tol=1e-3, return_eigenvectors=False)[0])
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, 1))
    Y = np.ones((n, 1))
    M = sp.diags(1.0 / np.maximum(L.diagonal(), 1e-12))
    with warnings.catch_warnings():  # a rough μ₂ is enough to choose ρ
        warnings.simplefilter("ignore", UserWarning)
        vals = lobpcg(L, X, Y=Y, M=M, largest=False, tol=1e-2, maxiter=200)[0]
    return float(vals[0]), mu_max


def _relaxation(value, name: str):
    """The over-relaxation option: a real number in (0, 2)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not 0 < value < 2:
        raise InvalidInputError(f"{name} must be in (0, 2) (1: no relaxation), got {value!r}.")
    return value


class ADMM(Solver):
    name = "admm"
    complexity = {"lass": (1.0, "O(nnz(R)·K) per iteration with the cached sparse factor R")}
    tolerance_family = "iterative"
    problem_types = (LASS,)
    description = ("ADMM for LASS [002 eq. 17]: closed-form row-sum multiplier, one cached "
                   "factorization of 2λL + ρI (or warm-started block CG) for all K columns.")
    options = {
        "rho": Option(None, "penalty ρ (default 2λ√(μ₂ μ_max) per component)",
                      optional(check_positive)),
        "adaptive_rho": Option(True, "balance primal and dual residuals by rescaling ρ ×2 "
                               "(every 10 iterations at most, 30 times; False: fixed ρ)",
                               check_bool),
        "relax": Option(1.0, "over-relaxation α in (0, 2): Y and U use αZ + (1 − α)Y "
                        "(1: the paper's iteration; with Anderson acceleration on, 1.6 was "
                        "slower in bench_lass.py)", _relaxation),
        "anderson": Option(10, "Anderson acceleration memory (0: off, the plain iteration)",
                           integer(0)),
        "tol": Option(1e-9, "stop when max|Z − Y| and ρ max|ΔY|/max(1, max|G|) are below "
                      "this (stop='residuals'), or when max|ΔZ| is (stop='change')",
                      check_positive),
        "stop": Option("residuals", "'residuals' or 'change' (the paper's rule)",
                       choice("residuals", "change")),
        "max_iter": Option(20_000, "ADMM iterations per component", integer(1)),
        "linear_solver": Option("auto", "'factor' (sparse LU, symmetric mode), 'cg' (block "
                                "Jacobi-PCG) or 'auto' (factor when the predicted fill is small)",
                                choice("auto", "factor", "cg")),
        "warm_start": Option(None, "a previous Solution or dict with 'Z' (and 'Psi' for U)"),
        "project": Option(False, "project the returned rows of Z onto the simplex", check_bool),
        "verbose": Option(False, "print progress every 100 iterations", check_bool),
    }

    def predicted_time(self, problem) -> float:
        s = problem.structure.sizes
        return 1e-2 + 500 * 4e-9 * (s["nnz_W"] + s["N"]) * s["K"]

    def _solve(self, problem: LASS, rho, adaptive_rho, relax, anderson, tol, stop, max_iter,
               linear_solver, warm_start, project, verbose) -> Solution:
        start = time.perf_counter()
        N, K = problem.N, problem.K
        Z0, Psi0 = (None, None) if warm_start is None else _warm_start(problem, warm_start)
        Z, nu, Psi = np.empty((N, K)), np.empty(N), np.empty((N, K))
        history = History()
        status, iterations, rhos, kinds = OPTIMAL, 0, [], set()
        count, labels = problem.components
        sizes = np.bincount(labels, minlength=count)
        single = sizes[labels] == 1
        if np.any(single):
            Z[single], nu[single], Psi[single] = _isolated_items(problem.G[single])
        for c in np.flatnonzero(sizes > 1):
            idx = np.flatnonzero(labels == c)
            L = problem.L[idx][:, idx]
            G = problem.G[idx]
            rho_c = float(rho) if rho is not None else _default_rho(problem.lam, L)
            kind = linear_solver
            if kind == "auto":
                kind = choose_linear_solver(L, problem.lam, rho_c)
            # One BLAS thread: the loop alternates sparse solves and small dense products,
            # and idle pool threads spinning between them made it slower (docs/lass.md).
            with threadpool_limits(1):
                result = _admm_component(
                    L, G, problem.lam, rho_c, tol, stop, max_iter, kind, adaptive_rho, relax,
                    anderson, None if Z0 is None else Z0[idx], None if Psi0 is None else Psi0[idx],
                    history, start, verbose, component=int(c))
            Z[idx], nu[idx], Psi[idx] = result["Z"], result["nu"], result["Psi"]
            iterations = max(iterations, result["iterations"])
            rhos.append(result["rho"])
            kinds.add(kind)
            if not result["converged"]:
                status = MAX_ITERATIONS
        if project:
            Z = project_rows_to_simplex(Z)
        x = {"Z": Z, "nu": nu, "Psi": Psi}
        return Solution(x, problem.objective(x), status, iterations, 0.0, self.backend,
                        self.name, history,
                        info={"components": int(count), "isolated_items": int(single.sum()),
                              "rho": rhos[0] if len(rhos) == 1 else rhos,
                              "linear_solver": sorted(kinds)})


def _warm_start(problem: LASS, warm_start) -> tuple[np.ndarray, np.ndarray | None]:
    """``(Z, Ψ or None)`` of a previous Solution or dict: real, finite, of the problem's
    shapes; a malformed one is an error naming ``warm_start``."""
    try:
        Z0 = problem.unpack(warm_start)["Z"]
        values = getattr(warm_start, "x", warm_start)
        Psi0 = None
        if values.get("Psi") is not None:
            Psi0 = as_float_array(values["Psi"], "x['Psi']")
            if Psi0.shape != (problem.N, problem.K):
                raise InvalidInputError(
                    f"x['Psi'] must have shape {(problem.N, problem.K)}, got {Psi0.shape}.")
    except InvalidInputError as exc:
        raise InvalidInputError(f"warm_start: {exc}") from exc
    if not (np.all(np.isfinite(Z0)) and (Psi0 is None or np.all(np.isfinite(Psi0)))):
        raise InvalidInputError("warm_start contains NaN or inf; pass a finite Z (and Psi).")
    return Z0, Psi0


def _isolated_items(G: np.ndarray):
    """LASS for an item without neighbours is the LP ``max gᵀz`` over the simplex."""
    Z = lp_assignment(G)
    nu = -G.max(axis=1)
    Psi = G.max(axis=1, keepdims=True) - G  # −g − ν − ψ = 0
    return Z, nu, Psi


def _default_rho(lam: float, L: sp.csr_matrix) -> float:
    mu2, mu_max = laplacian_extremes(L)
    return 2.0 * lam * float(np.sqrt(max(mu2, 1e-12 * mu_max) * mu_max))


def _admm_component(L, G, lam, rho, tol, stop, max_iter, kind, adaptive_rho, relax, anderson,
                    Z0, Psi0, history, start, verbose, component):
    """ADMM on one connected component, as a fixed-point iteration on ``q = Z̃ + U``.

    After the Y- and U-updates, ``Y = max(q, 0)`` and ``U = min(q, 0)`` for ``q = Z̃ + U_prev``
    (``Z̃`` the relaxed Z), so ``q`` is the whole state: ``q ← T(q)`` is the paper's iteration
    and Anderson acceleration (type II, safeguarded by the fixed-point residual) extrapolates
    it.
    """
    n, K = G.shape
    eye = sp.identity(n, format="csr")

    def make_solver(rho):
        A = 2.0 * lam * L + rho * eye
        return FactorSolve(A) if kind == "factor" else BlockCG(A)

    linsolve = make_solver(rho)
    rho_changes = 0
    scale = max(1.0, float(np.abs(G).max()))
    g_sum = G.sum(axis=1)
    # CG stops at an absolute residual: its error enters the stationarity residual directly.
    state = {"X": None, "cg_atol": 1e-2 * scale}
    if Z0 is None:
        q = np.zeros((n, K))
    else:
        U0 = np.zeros((n, K)) if Psi0 is None else -Psi0 / rho
        q = np.maximum(Z0, 0.0) + np.minimum(U0, 0.0)
        state["X"] = Z0 - 1.0 / K

    def T(q, rho):
        """One ADMM iteration from ``Y = q₊, U = q₋``; returns the new q and the residuals."""
        Y, U = np.maximum(q, 0.0), np.minimum(q, 0.0)
        YU = Y - U
        nu = (rho / K) * YU.sum(axis=1) + (g_sum - rho) / K
        B = G + rho * YU - nu[:, None]
        B -= B.mean(axis=1, keepdims=True)  # = B − ρ/K: the part with zero row sums
        X = linsolve.solve(B, state["X"], 0.0, state["cg_atol"])
        X -= X.mean(axis=1, keepdims=True)  # exact row sums even after inexact solves
        state["X"] = X
        Z = X + 1.0 / K
        q_new = (relax * Z + (1.0 - relax) * Y if relax != 1.0 else Z) + U
        U_new = np.minimum(q_new, 0.0)
        r_p = float(np.abs(Z - np.maximum(q_new, 0.0)).max())
        # Exact KKT stationarity of (Z, ν, Ψ = −ρU_new): ρ(Z − Y + U − U_new).
        r_d = rho * float(np.abs(Z - Y + U - U_new).max()) / scale
        return q_new, Z, -nu, -rho * U_new, r_p, r_d

    # Safeguarded by the fixed-point residual; a rejection restarts the memory.
    aa = SafeguardedAnderson(n * K, anderson, clear_on_reject=True)
    it = 0

    def apply_T(q):
        """``(q, T(q), Z, −ν, Ψ, r_p, r_d)`` at the current ρ; every application of T is one
        iteration (a rejected extrapolation costs one)."""
        nonlocal it
        it += 1
        return (q, *T(q, rho))

    q, g, Z, nu, Psi, r_p, r_d = apply_T(q)
    aa.observe(q, g)
    converged, Z_prev = False, Z
    while it < max_iter:
        step = aa.propose(apply_T, _residual_not_larger(float(np.linalg.norm(aa.residual))))
        if step is None:
            step = apply_T(g)  # the plain step
        q, g, Z, nu, Psi, r_p, r_d = step
        aa.observe(q, g)
        change = float(np.abs(Z - Z_prev).max())
        Z_prev = Z
        state["cg_atol"] = scale * max(0.1 * tol, CG_FORCING * max(r_p, r_d))
        if it % 10 == 0:
            history.append(component=component, iteration=it, primal_residual=r_p,
                           dual_residual=r_d, change=change, rho=rho,
                           time=time.perf_counter() - start)
        if verbose and it % 100 == 0:
            print(f"[admm] component {component} it {it:6d}  primal {r_p:.2e}  dual {r_d:.2e}"
                  f"  ρ={rho:.3g}  t={time.perf_counter() - start:.2f}s", flush=True)
        done = (r_p <= tol and r_d <= tol) if stop == "residuals" else change < tol
        if done:
            converged = True
            break
        if (adaptive_rho and it % 10 == 0 and rho_changes < MAX_RHO_CHANGES
                and (r_p > 10 * r_d or r_d > 10 * r_p)):
            rho_changes += 1
            factor = 2.0 if r_p > r_d else 0.5
            rho *= factor
            # Keep Y and rescale the scaled multiplier U = q₋ (Ψ = −ρU is unchanged).
            q = np.maximum(q, 0.0) + np.minimum(q, 0.0) / factor
            linsolve = make_solver(rho)
            aa.restart()
            q, g, Z, nu, Psi, r_p, r_d = apply_T(q)
            aa.observe(q, g)
    return {"Z": Z, "nu": nu, "Psi": Psi, "iterations": it, "rho": rho,
            "converged": converged, "anderson_accepted": aa.accepted,
            "anderson_rejected": aa.rejected}


def _residual_not_larger(f_norm: float):
    """ADMM's Anderson safeguard: an extrapolated ``(q, T(q), ...)`` is taken when its
    fixed-point residual ``‖T(q) − q‖`` is at most ``f_norm``, the current point's."""
    return lambda step: float(np.linalg.norm(step[1] - step[0])) <= f_norm


@hookimpl
def register_solvers():
    return [ADMM()]
