r"""IRLS for sums of norms and ERE [004 Alg. 1–2]: δ-continuation, Anderson, extrapolation.

Problem ``φ(x) = f(x) + Σ_i w_i ‖g_i(x)‖₂`` (:class:`~ssl_opt.problems.SumOfNorms`, robust
:class:`~ssl_opt.problems.ERE`). Smoothed ``φ_δ = f + Σ_i w_i √(‖g_i‖² + δ)`` [004 eq. 11]. One
IRLS step [004 Alg. 1] from ``x``::

    s_i = 1 / (2√(‖g_i(x)‖² + δ))                                           [004 eq. 13]
    x⁺  = argmin_z f(z) + Σ_i w_i s_i ‖g_i(z)‖²                              [004 eq. 15]

and ``φ_δ(x⁺) ≤ φ_δ(x)`` (majorize–minimize, [004 Th. 1]). The same map ``T(x) = x⁺`` is used as
a fixed-point iteration with:

* **δ-continuation** — ``δ₀ = delta0·σ²`` (σ the largest group norm at the start, the
  squared-norm solution), divided by ``delta_factor`` when the stage's smoothed stationarity
  is below ``max(√δ/σ, kkt_tol)``, when the stage makes no progress for ``FLAT_STEPS`` steps
  (its numerical floor) or after ``stage_max_iter`` steps, warm started. Plain IRLS at a
  small fixed δ (``continuation=False, anderson=0``) crawls on kinked problems: the weights
  of the groups at the kink are ~1/√δ and a step moves them by O(√δ).
* **Anderson acceleration** (type II, memory ``anderson``) of ``T``, safeguarded on the smoothed
  objective: the extrapolated point is taken only when ``φ_δ(x_AA) < φ_δ(T(x))``, else ``T(x)``
  (the memory is kept: clearing it on a rejection cost 2–10× more steps on the small kinked
  instances). Both candidates are evaluated anyway, so the safeguard costs one objective
  evaluation, and ``φ_δ`` decreases monotonically within a stage
  (``history["monotone"]``; ``info["monotone_violations"]`` counts relative increases above
  1e-12, which only inexact CG solves can cause).
* **Richardson extrapolation in √δ** (``extrapolate``) — the smoothed minimizer moves like
  ``x(δ) = x* + a√δ + O(δ)`` (a kinked group sits at ‖g‖ ≈ √δ‖u‖/√(1 − ‖u‖²)), so the ends of
  two consecutive stages give ``z = (q x(δ/q²) − x(δ))/(q − 1)``, ``q = √delta_factor``. Its
  true objective converges ~10× per stage where the stage ends converge ~√10× (n = 1,000:
  6.5e-8 against 1.4e-4 after the δ = 1e-8 stage). Once two consecutive extrapolations agree
  to ``max(tol, 0.1·gap_tol)``, z is certified and returned (``info["extrapolated"]``; it
  carries no δ: it is not the minimizer of any φ_δ).
* **Stopping, never early** — only when the problem's own certificate holds
  (``problem.kkt``: ``subgradient ≤ kkt_tol`` with the (near-)zero groups' multipliers
  optimized, and ``kink_slack ≤ gap_tol``): at an extrapolated point as above, or in the final
  stage (δ = ``delta_min·σ²``) when the true objective's relative change is below ``tol`` and
  the smoothed stationarity below ``kkt_tol`` (or the stage is at its numerical floor), after a
  free estimate of the kink slack with the smoothed multipliers. Otherwise δ is lowered
  further (down to ``delta_floor·σ²``) and checks back off geometrically. ``max_iter`` →
  ``MAX_ITERATIONS``, no progress for ``stall_iter`` steps at the lowest δ → ``STALLED``; both
  return the best iterate (lowest true objective, extrapolations included).

ERE step, structure exploited [004 eqs. 19–26]. With ``Â = A ∘ Ŝ`` (edge weights ``A_e s_e``),
``L̂ = D̂ − Â``, ``S = diag(s_points)``, ``Z = [X 1]``, ``Θ = [W; bᵀ]``, the step minimizes
``tr(FᵀL̂F) + α tr((ZΘ − F)ᵀS(ZΘ − F)) + β‖W‖²`` with ``F_l = Y``; its normal equations are::

    N F_u − U Θ = −L̂_ul Y,      K Θ = α Z_lᵀ S_l Y + Uᵀ F_u,
    N = L̂_uu + α S_u (sparse SPD),  U = α S_u Z_u (u×(d+1)),  K = α ZᵀSZ + β diag(1,…,1,0)

so ``M_uu F_u = −L̂_ul Y + U K⁻¹ α Z_lᵀ S_l Y`` with ``M_uu = N − U K⁻¹ Uᵀ`` [004 eq. 24–26]:
sparse + diagonal − rank (d+1), one matrix for all c columns. Never formed: either

* ``factor`` — SuperLU of N (symmetric mode, :class:`~ssl_opt.numerics.factor.SPDFactor`) and the
  Woodbury identity ``M⁻¹ = N⁻¹ + N⁻¹U (K − UᵀN⁻¹U)⁻¹ UᵀN⁻¹`` (d+1+c solves), plus one step of
  iterative refinement with products by M (the capacitance matrix can lose digits when the
  weights span many orders of magnitude);
* ``cg`` — block Jacobi-PCG on M (sparse product, diagonal, two thin products with U and one
  (d+1)×(d+1) Cholesky solve), warm-started from the previous F_u, relative tolerance forced
  by the current residual.

then ``Θ = K⁻¹(α Z_lᵀ S_l Y + Uᵀ F_u)``. ``linear_solver="auto"`` compares the flops of one
step: the factor's solves, ``fill(N)·(d + 1 + 2c)`` (fill measured for u ≤ 4,000, else
predicted from breadth-first balls, :func:`predicted_fill`), against ``CG_STEPS_GUESS`` PCG
iterations, ``10·(nnz(N)·c + 2u(d+1)c)`` (``benchmarks/bench_ere.py`` (b) forces each
solver at n = 1,000 and 2,000: the factor it picks is the faster one there).
Generic :class:`SumOfNorms` step: ``(Q + 2Gᵀ D G) x = −c + 2Gᵀ D h`` with ``D`` the weights
``w_i s_i`` repeated over each group's rows, one SPDFactor per step.

Squared ERE [004 eq. 8] is the ERE step with ``s ≡ 1`` (one structured solve) and LRL
[004 eq. 5] its (d+1)×(d+1) normal equations (Cholesky): both are returned as ``OPTIMAL``
after one solve.
"""

from __future__ import annotations

import time

import numpy as np
import scipy.linalg as la
import scipy.sparse as sp
from threadpoolctl import threadpool_limits

from ssl_opt._validation import check_bool, check_choice, check_int, check_positive
from ssl_opt.exceptions import InvalidInputError
from ssl_opt.hookspecs import hookimpl
from ssl_opt.numerics.anderson import AndersonMemory
from ssl_opt.numerics.block_cg import block_jacobi_cg
from ssl_opt.numerics.factor import SPDFactor, predicted_fill
from ssl_opt.problems.ere.problem import ERE, LRL
from ssl_opt.problems.ere.sum_of_norms import SumOfNorms
from ssl_opt.solution import MAX_ITERATIONS, OPTIMAL, STALLED, History, Solution
from ssl_opt.solvers import Option, Solver

#: ``linear_solver="auto"``: fill of N measured (u ≤ 4,000) or predicted from breadth-first
#: balls of these sizes, against this many PCG iterations per step (measured: 5–15).
PROBE_SIZES = (1000, 2000)
CG_STEPS_GUESS = 10
#: Block PCG iterations per IRLS step at most.
CG_MAX_ITER = 2000
#: A stage is solved to its numerical floor after this many steps without progress.
FLAT_STEPS = 10
#: FISTA iterations of the solver's certificate checks (``problem.kkt(..., iterations=)``).
CHECK_ITERS = 100
#: Each block-PCG solve reduces the residual of its warm start at least by this factor.
CG_REDUCTION = 0.05


# ---------------------------------------------------------------------------- linear algebra


def block_pcg(matvec, B: np.ndarray, X0: np.ndarray, inv_diag: np.ndarray, rtol: float,
              max_iter: int = CG_MAX_ITER) -> tuple[np.ndarray, int]:
    """Jacobi-PCG on all columns of ``B`` at once (per-column step sizes), warm-started at
    ``X0``. Column j stops at ``‖b − Mx‖ ≤ max(1e-13‖b‖, min(rtol‖b‖, CG_REDUCTION·‖r₀‖))``:
    the forcing term of an inexact Newton method, and at least a fixed reduction of the
    warm start's residual so that every IRLS step moves. Returns the solution and the number
    of iterations."""
    X = X0.copy()
    R = B - matvec(X)
    bn = np.maximum(np.linalg.norm(B, axis=0), 1e-300)
    target = np.maximum(1e-13 * bn, np.minimum(rtol * bn, CG_REDUCTION * np.linalg.norm(R, axis=0)))
    if np.all(np.linalg.norm(R, axis=0) <= 1e-13 * bn):
        return X, 0
    it = block_jacobi_cg(matvec, X, R, inv_diag,
                         lambda res: bool(np.all(np.linalg.norm(res, axis=0) <= target)),
                         max_iter)
    return X, it


class _EREModel:
    """Robust or squared ERE as the IRLS model: packed ``x = (vec F_u, vec W, b)``, groups
    ``[edges; points]``, and the structured weighted least-squares step."""

    def __init__(self, problem: ERE, linear_solver: str):
        p = self.problem = problem
        self.l, self.u, self.c, self.d, self.n = p.l, p.u, p.c, p.d, p.n
        self.weights = np.concatenate([p.edge_w, np.full(p.n, p.alpha)])
        self.E = p.n_edges
        l = p.l
        ei, ej = p.edge_i, p.edge_j  # i < j, so a labeled end is always ei
        self.uu = np.flatnonzero(ei >= l)
        self.ul = np.flatnonzero((ei < l) & (ej >= l))
        # A sparse X stays sparse unless it is more than 30 % full.
        if sp.issparse(p.X) and p.X.nnz > 0.3 * p.n * p.d:
            self.X = p.X.toarray()
        else:
            self.X = p.X
        self.Xl, self.Xu = self.X[:l], self.X[l:]
        self.Yl = p.Y
        u = self.u
        # CSR pattern of N = L̂_uu + αS_u: off-diagonals of the uu edges, then the diagonal.
        ru = np.concatenate([ei[self.uu] - l, ej[self.uu] - l, np.arange(u)])
        cu = np.concatenate([ej[self.uu] - l, ei[self.uu] - l, np.arange(u)])
        pattern = sp.csr_matrix((np.arange(ru.size, dtype=np.float64) + 1.0, (ru, cu)),
                                shape=(u, u))
        self._perm = pattern.data.astype(np.int64) - 1
        self._N = pattern
        self.nnz_N = int(pattern.nnz)
        self.predicted_fill = None
        self.kind = self._choose(linear_solver)
        self.cg_iterations = 0
        self.factor_fill = None
        self._Fu_prev = None

    def _choose(self, linear_solver: str) -> str:
        """``auto``: compare the flops of one step (module docstring, "Linear algebra")."""
        if linear_solver != "auto":
            return linear_solver
        if self.u == 0:
            return "factor"
        N = self._assemble(np.ones(self.E), np.ones(self.n))
        if self.u <= 2 * PROBE_SIZES[1]:
            fill = float(SPDFactor(sp.csc_matrix(N)).fill)
        else:
            fill = predicted_fill(N, PROBE_SIZES)
        self.predicted_fill = fill
        cols = self.d + 1 + 2 * self.c
        cg_flops = CG_STEPS_GUESS * (N.nnz * self.c + 2 * self.u * (self.d + 1) * self.c)
        return "factor" if fill * cols <= cg_flops else "cg"

    # -- groups and objective -------------------------------------------------------------
    def split(self, x: np.ndarray):
        uc, dc = self.u * self.c, self.d * self.c
        Fu = x[:uc].reshape(self.u, self.c)
        return Fu, x[uc:uc + dc].reshape(self.d, self.c), x[uc + dc:]

    def full_F(self, Fu: np.ndarray) -> np.ndarray:
        return np.vstack([self.Yl, Fu])

    def groups(self, x: np.ndarray) -> np.ndarray:
        Fu, W, b = self.split(x)
        F = self.full_F(Fu)
        p = self.problem
        return np.vstack([p.edge_differences(F), p.point_residuals(F, W, b)])

    def f(self, x: np.ndarray) -> float:
        W = self.split(x)[1]
        return self.problem.beta * float(np.sum(W * W))

    def grad_f(self, x: np.ndarray) -> np.ndarray:
        out = np.zeros_like(x)
        uc, dc = self.u * self.c, self.d * self.c
        out[uc:uc + dc] = 2.0 * self.problem.beta * x[uc:uc + dc]
        return out

    def adjoint(self, U: np.ndarray) -> np.ndarray:
        return self.problem.adjoint(U[: self.E], U[self.E:])

    def scale(self, x: np.ndarray) -> np.ndarray:
        return np.maximum(1.0, self.problem._subgradient_scale + np.abs(self.grad_f(x)))

    def solution(self, x: np.ndarray) -> dict:
        Fu, W, b = self.split(x)
        return {"F": self.full_F(Fu), "W": W.copy(), "b": b.copy()}

    def multipliers(self, U: np.ndarray) -> dict:
        return {"U_edges": U[: self.E], "U_points": U[self.E:]}

    # -- the weighted least-squares step ----------------------------------------------------
    def _assemble(self, s_edges: np.ndarray, s_points: np.ndarray) -> sp.csr_matrix:
        p, l = self.problem, self.l
        a = p.edge_w * s_edges
        deg = (np.bincount(p.edge_i, a, self.n) + np.bincount(p.edge_j, a, self.n))[l:]
        coo = np.concatenate([-a[self.uu], -a[self.uu], deg + p.alpha * s_points[l:]])
        N = self._N.copy()
        N.data = coo[self._perm]
        return N

    def step(self, x: np.ndarray | None, s: np.ndarray, rtol: float) -> np.ndarray:
        """argmin of ``tr(FᵀL̂F) + α Σ s_i‖r_i‖² + β‖W‖²`` with ``F_l = Y`` (module doc)."""
        p, l, u, d, c = self.problem, self.l, self.u, self.d, self.c
        alpha = p.alpha
        s_e, s_p = s[: self.E], s[self.E:]
        s_l, s_u = s_p[:l], s_p[l:]
        # K = α ZᵀSZ + β diag(1..1, 0);  P = α Z_lᵀ S_l Y.
        X = self.X
        sX = X.multiply(s_p[:, None]) if sp.issparse(X) else X * s_p[:, None]
        K = np.empty((d + 1, d + 1))
        XtSX = X.T @ sX
        K[:d, :d] = alpha * (XtSX.toarray() if sp.issparse(XtSX) else XtSX)
        K[:d, :d][np.diag_indices(d)] += p.beta
        K[:d, d] = K[d, :d] = alpha * np.asarray(sX.sum(axis=0)).ravel()
        K[d, d] = alpha * s_p.sum()
        sY = s_l[:, None] * self.Yl
        P = alpha * np.vstack([np.asarray(self.Xl.T @ sY), sY.sum(axis=0)[None, :]])
        Kc = la.cho_factor(K, lower=True, check_finite=False)
        if u == 0:
            Theta = la.cho_solve(Kc, P, check_finite=False)
            return np.concatenate([Theta[:d].ravel(), Theta[d]])
        a = p.edge_w * s_e
        ul = self.ul
        Lul_Y = sp.csr_matrix((a[ul], (p.edge_j[ul] - l, p.edge_i[ul])), shape=(u, l)) @ self.Yl
        N = self._assemble(s_e, s_p)
        Xu = self.Xu
        Xu_d = Xu.toarray() if sp.issparse(Xu) else Xu
        U = alpha * s_u[:, None] * np.hstack([Xu_d, np.ones((u, 1))])
        rhs = np.asarray(Lul_Y) + U @ la.cho_solve(Kc, P, check_finite=False)

        def matvec(V):
            return N @ V - U @ la.cho_solve(Kc, U.T @ V, check_finite=False)

        if self.kind == "factor":
            fac = SPDFactor(sp.csc_matrix(N))
            self.factor_fill = fac.fill
            NU = fac.solve(U)
            C = K - U.T @ NU
            Cc = la.cho_factor(0.5 * (C + C.T), lower=True, check_finite=False)

            def minv(V):
                NV = fac.solve(V)
                return NV + NU @ la.cho_solve(Cc, U.T @ NV, check_finite=False)

            Fu = minv(rhs)
            Fu += minv(rhs - matvec(Fu))  # one step of iterative refinement
        else:
            KiU = la.cho_solve(Kc, U.T, check_finite=False)
            diag = N.diagonal() - np.einsum("ij,ji->i", U, KiU)
            X0 = self.split(x)[0] if x is not None else np.zeros((u, c))
            Fu, its = block_pcg(matvec, rhs, X0, 1.0 / diag, rtol)
            self.cg_iterations += its
        Theta = la.cho_solve(Kc, P + U.T @ Fu, check_finite=False)
        return np.concatenate([Fu.ravel(), Theta[:d].ravel(), Theta[d]])


class _SumOfNormsModel:
    """:class:`SumOfNorms` as the IRLS model: one sparse factorization per step."""

    kind = "factor"

    def __init__(self, problem: SumOfNorms):
        self.problem = problem
        self.weights = problem.w
        self.G = problem.G.tocsr()
        self.GT = sp.csr_matrix(problem.G.T)
        self.cg_iterations = 0
        self.factor_fill = None

    def groups(self, x):
        return self.problem.group_values(x)

    def f(self, x):
        return self.problem.smooth_value(x)

    def grad_f(self, x):
        return self.problem.smooth_gradient(x)

    def adjoint(self, U):
        return self.problem.adjoint(U)

    def scale(self, x):
        p = self.problem
        return np.maximum(1.0, np.abs(p.Q) @ np.abs(x) + np.abs(p.c) + p.norm_scale)

    def solution(self, x):
        return {"x": x.copy()}

    def multipliers(self, U):
        return {"U": U}

    def step(self, x, s, rtol):
        p = self.problem
        dw = np.repeat(2.0 * p.w * s, p.k)
        H = sp.csc_matrix(p.Q + self.GT @ sp.diags(dw) @ self.G)
        rhs = -p.c + self.GT @ (dw * p.h)
        try:
            fac = SPDFactor(H)
            z = fac.solve(rhs)
        except (RuntimeError, InvalidInputError) as exc:  # singular or indefinite
            z, fac = np.full_like(rhs, np.nan), None
            reason = str(exc)
        else:
            reason = "non-finite solution"
        if fac is None or not np.all(np.isfinite(z)):
            raise InvalidInputError(
                f"the IRLS system Q + 2GᵀDG is singular ({reason}): f(x) + Σ w_i‖g_i(x)‖ has "
                "no unique minimizer along some direction; make Q positive definite on the "
                "null space of G (e.g. add a small ridge) or give every variable a weighted "
                "group.")
        self.factor_fill = fac.fill
        return z


# ---------------------------------------------------------------------------- the solver


class IRLS(Solver):
    name = "irls"
    complexity = {"ere": (1.0, "O(nnz(A)·c) per reweighted solve")}
    tolerance_family = "iterative"
    problem_types = (ERE, LRL, SumOfNorms)
    description = ("IRLS [004 Alg. 1-2] for sums of norms and robust ERE: δ-continuation, "
                   "Anderson acceleration safeguarded on φ_δ, Richardson extrapolation in √δ, "
                   "structured u×u solves (sparse factor + Woodbury, or PCG); squared ERE and "
                   "LRL in closed form.")
    options = {
        "tol": Option(1e-9, "relative change of the true objective below which the final "
                      "stage checks the certificate"),
        "kkt_tol": Option(1e-7, "stop when the subgradient residual (problem.kkt) is below this"),
        "gap_tol": Option(5e-7, "... and its kink_slack (the objective excess of the groups "
                          "treated as zero, relative) below this"),
        "max_iter": Option(10_000, "IRLS steps at most (status MAX_ITERATIONS beyond)"),
        "delta0": Option(1e-2, "initial δ relative to σ² (σ: scale of the group values)"),
        "delta_min": Option(1e-12, "δ of the final stage relative to σ²"),
        "delta_floor": Option(1e-18, "lowest δ/σ² tried when the certificate is not met at "
                              "delta_min"),
        "delta_factor": Option(10.0, "δ is divided by this between stages"),
        "extrapolate": Option(True, "Richardson extrapolation in √δ of consecutive stage ends "
                              "(x* ≈ (q x(δ/q²) − x(δ))/(q − 1), q = √delta_factor), certified "
                              "and returned when it passes"),
        "continuation": Option(True, "δ-continuation (False: δ = delta_min from the start)"),
        "stage_max_iter": Option(100, "steps per intermediate stage at most"),
        "anderson": Option(10, "Anderson memory (0: off, the paper's plain iteration)"),
        "stall_iter": Option(500, "steps without a better true objective at the lowest δ before "
                             "STALLED"),
        "linear_solver": Option("auto", "ERE u×u solves: 'factor' (SuperLU of N + Woodbury), "
                                "'cg' (block PCG on M_uu) or 'auto' (by size and predicted "
                                "fill)"),
        "warm_start": Option(None, "a previous Solution or dict of the problem's variables; the "
                             "continuation resumes at the δ it ended with (info['delta'] or "
                             "x['delta']) when it says"),
        "verbose": Option(False, "print progress every 20 steps"),
    }

    def predicted_time(self, problem) -> float:
        s = problem.structure.sizes
        if isinstance(problem, SumOfNorms):
            return 1e-2 + 100 * 2e-7 * (s["nnz_G"] + s["n"])
        if isinstance(problem, LRL) or not problem.robust:
            return 1e-2 + 1e-8 * (s["nnz_A"] * s["d"] + s["n"] * s["d"] ** 2)
        per_step = 5e-8 * (s["nnz_A"] + s["n"] * (s["d"] + 1)) * s["c"] * 3
        return 0.05 + 150 * per_step

    def _solve(self, problem, tol, kkt_tol, gap_tol, max_iter, delta0, delta_min, delta_floor,
               delta_factor, extrapolate, continuation, stage_max_iter, anderson, stall_iter,
               linear_solver, warm_start, verbose) -> Solution:
        for name, value in (("tol", tol), ("kkt_tol", kkt_tol), ("gap_tol", gap_tol),
                            ("delta0", delta0), ("delta_min", delta_min),
                            ("delta_floor", delta_floor)):
            check_positive(value, name)
        check_int(max_iter, "max_iter", 1)
        check_int(stage_max_iter, "stage_max_iter", 1)
        check_int(anderson, "anderson", 0)
        check_int(stall_iter, "stall_iter", 1)
        if not check_positive(delta_factor, "delta_factor") > 1:
            raise InvalidInputError(f"delta_factor must be a number > 1, got {delta_factor!r}.")
        check_bool(continuation, "continuation")
        check_bool(extrapolate, "extrapolate")
        check_choice(linear_solver, "linear_solver", ("auto", "factor", "cg"))
        if delta_floor > delta_min:
            raise InvalidInputError(
                f"delta_floor ({delta_floor}) must be <= delta_min ({delta_min}).")
        if isinstance(problem, LRL):
            return self._lrl(problem)
        if isinstance(problem, ERE):
            model = _EREModel(problem, linear_solver)
        else:
            model = _SumOfNormsModel(problem)
        x0 = warm_delta = None
        if warm_start is not None:
            if isinstance(problem, ERE):
                x0 = problem.pack(_with_labels(problem, warm_start))
            else:
                x0 = problem.unpack(warm_start)["x"].copy()
            # A previous IRLS solution says at which δ it ended: continue from there.
            info = getattr(warm_start, "info", {})
            values = getattr(warm_start, "x", warm_start)
            if info.get("delta") is not None:
                warm_delta = float(info["delta"])
            elif hasattr(values, "get") and values.get("delta") is not None:
                warm_delta = float(np.asarray(values["delta"]))
            if not np.all(np.isfinite(x0)):
                raise InvalidInputError("warm_start contains NaN or inf; pass a finite point.")
            if warm_delta is not None and not (np.isfinite(warm_delta) and warm_delta > 0):
                raise InvalidInputError(
                    f"warm_start's delta must be a finite number > 0, got {warm_delta!r}.")
        if x0 is not None and (isinstance(problem, SumOfNorms) or problem.robust):
            done = _certified_warm_start(self, problem, warm_start, kkt_tol, gap_tol,
                                         warm_delta)
            if done is not None:
                return done
        with threadpool_limits(1):
            if isinstance(problem, ERE) and not problem.robust:
                x = model.step(x0, np.ones(model.weights.size), 1e-13)
                sol = model.solution(x)
                # One linear solve; with block CG it can stop at its iteration cap, so the
                # status comes from the problem's own stationarity, not from having solved.
                residuals = problem.kkt(sol)
                status = OPTIMAL if max(residuals.values()) <= kkt_tol else MAX_ITERATIONS
                return Solution(sol, problem.objective(sol), status, 1, 0.0, self.backend,
                                self.name, History(), info={"linear_solver": model.kind,
                                                            "kkt": residuals})
            return _irls(self, problem, model, x0, tol, kkt_tol, gap_tol, max_iter, delta0,
                         delta_min, delta_floor, delta_factor, extrapolate, continuation,
                         stage_max_iter, anderson, stall_iter, verbose, warm_delta)

    def _lrl(self, problem: LRL) -> Solution:
        H, R = problem.normal_equations()
        Theta = la.cho_solve(la.cho_factor(H, lower=True), R)
        x = {"W": Theta[: problem.d], "b": Theta[problem.d].copy()}
        return Solution(x, problem.objective(x), OPTIMAL, 1, 0.0, self.backend, self.name,
                        History(), info={"linear_solver": "cholesky (d+1)x(d+1)"})


def _certified_warm_start(solver, problem, warm_start, kkt_tol, gap_tol, warm_delta):
    """The warm start itself, as an optimal Solution, when it already passes the solver's
    stopping certificate (its own multipliers, if it carries them, start the check)."""
    values = dict(getattr(warm_start, "x", warm_start))
    values.pop("delta", None)  # certified as a point of the non-smooth problem
    if isinstance(problem, ERE):
        values = {**values, **_with_labels(problem, values)}
    cert = problem.kkt(values, target=0.5 * kkt_tol, iterations=CHECK_ITERS)
    if not (cert["subgradient"] <= kkt_tol and cert.get("kink_slack", 0.0) <= gap_tol):
        return None
    x = {k: np.array(v, dtype=np.float64) for k, v in values.items()}
    return Solution(x, problem.objective(x), OPTIMAL, 0, 0.0, solver.backend, solver.name,
                    History(), info={"warm_start_certified": True, "delta": warm_delta,
                                     "last_certificate": dict(cert)})


def _with_labels(problem: ERE, warm_start) -> dict:
    v = dict(problem.unpack(warm_start))
    F = v["F"].copy()
    F[: problem.l] = problem.Y
    v["F"] = F
    return v


def _irls(solver, problem, model, x0, tol, kkt_tol, gap_tol, max_iter, delta0, delta_min,
          delta_floor, delta_factor, extrapolate, continuation, stage_max_iter, anderson,
          stall_iter, verbose, warm_delta=None) -> Solution:
    """The IRLS loop of the module docstring (δ stages, Anderson, extrapolation, stopping)."""
    start = time.perf_counter()
    w = model.weights
    history = History()
    if x0 is None:  # uniform weights: the squared-norm problem at the scale of h
        sigma0 = 1.0 if isinstance(problem, ERE) else problem.value_scale
        x0 = model.step(None, np.full(w.size, 0.5 / sigma0), 1e-10)
    st = _State(model, x0)
    sigma = float(np.sqrt(st.sq.max(initial=0.0)))
    if not sigma > 0:
        sigma = 1.0 if isinstance(problem, ERE) else problem.value_scale
    final_delta = delta_min * sigma**2
    lowest_delta = delta_floor * sigma**2
    delta = max(delta0 * sigma**2, final_delta) if continuation else final_delta
    if warm_delta is not None and warm_delta > 0:
        delta = max(min(delta, warm_delta), lowest_delta)
    st.set_delta(delta)
    best = (st.phi, st.x, st.delta, st.U)
    aa = AndersonMemory(st.x.size, anderson) if anderson else None
    prev = None  # (residual, image) of the previous step, for Anderson's differences
    status, it, stage_it, flat, since_best = MAX_ITERATIONS, 0, 0, 0, 0
    violations = accepted = rejected = checks = 0
    next_check, check_gap, last_cert = 0, 5, None
    stage_ends, extrap, result = [], [], None

    def certificate(x, U, delta):
        nonlocal checks
        checks += 1
        point = model.solution(x)
        point.update(model.multipliers(U))
        if delta is not None:
            point["delta"] = np.array(delta)
        cert = problem.kkt(point, target=0.5 * kkt_tol, iterations=CHECK_ITERS)
        ok = cert["subgradient"] <= kkt_tol and cert.get("kink_slack", 0.0) <= gap_tol
        return cert, ok

    def end_stage():
        """Record the stage's end point; Richardson-extrapolate the last two in √δ and certify
        the extrapolation once consecutive extrapolations agree. Returns the certified point."""
        nonlocal best, since_best, last_cert
        stage_ends.append((st.delta, st.x.copy()))
        if not extrapolate or len(stage_ends) < 2:
            return None
        (d0, x0), (d1, x1) = stage_ends[-2:]
        if d0 <= d1 * (1.0 + 1e-9):  # two ends at the same δ (a stage resumed): nothing to
            return None              # extrapolate
        q = np.sqrt(d0 / d1)
        z = (q * x1 - x0) / (q - 1.0)
        gz = model.groups(z)
        phi_z = st.true_obj(z, np.einsum("ij,ij->i", gz, gz))
        change_z = abs(phi_z - extrap[-1][2]) / max(1.0, abs(phi_z)) if extrap else np.inf
        extrap.append([it, d1, phi_z, change_z, None])
        history.rows[-1]["extrapolated_objective"] = float(phi_z)
        if phi_z < best[0]:
            best, since_best = (phi_z, z, d1, st.U), 0
        if change_z <= max(tol, 0.1 * gap_tol):
            last_cert, ok = certificate(z, st.U, None)
            extrap[-1][4] = dict(last_cert)
            if ok:
                return z, phi_z
        return None

    def next_stage(delta):
        nonlocal stage_it, flat, prev
        st.set_delta(delta)
        stage_it, flat, prev = 0, 0, None
        if aa is not None:
            aa.clear()

    def stage_done(floor) -> bool:
        """End the stage; True when its extrapolation is certified (``result``), else start
        the next stage at ``δ / delta_factor``, not below ``floor``."""
        nonlocal result
        result = end_stage()
        if result is None:
            next_stage(max(st.delta / delta_factor, floor))
        return result is not None

    while it < max_iter:
        it += 1
        stage_it += 1
        rtol = max(1e-14, min(1e-4, 1e-4 * st.r))
        y = model.step(st.x, 0.5 / np.sqrt(st.sq + st.delta), rtol)
        cand = st.evaluate(y)
        used_aa = False
        if aa is not None:
            fres = y - st.x
            if prev is not None:
                aa.push(fres - prev[0], y - prev[1])
            prev = (fres, y)
            if aa.size:
                other = st.evaluate(aa.extrapolate(y, fres))
                if np.isfinite(other[3]) and other[3] < cand[3]:
                    cand, used_aa = other, True
                    accepted += 1
                else:  # keep the memory: clearing it cost 2-10x more steps (measured)
                    rejected += 1
        old_phi, old_phi_s = st.phi, st.phi_s
        monotone = cand[3] <= old_phi_s + 1e-12 * max(1.0, abs(old_phi_s))
        violations += not monotone
        st.accept(*cand)
        change = abs(old_phi - st.phi) / max(1.0, abs(st.phi))
        flat = flat + 1 if (change <= tol and old_phi_s - st.phi_s
                            <= 1e-15 * max(1.0, abs(st.phi_s))) else 0
        if st.phi < best[0]:
            best, since_best = (st.phi, st.x, st.delta, st.U), 0
        else:
            since_best += 1
        history.append(iteration=it, objective=st.phi, smoothed_objective=st.phi_s,
                       delta=st.delta, residual=st.r, anderson=float(used_aa),
                       monotone=float(monotone), time=time.perf_counter() - start)
        if verbose and it % 20 == 0:
            print(f"[irls] it {it:5d}  φ={st.phi:.12g}  φ_δ={st.phi_s:.12g}  δ={st.delta:.1e}  "
                  f"r={st.r:.2e}  t={time.perf_counter() - start:.2f}s", flush=True)
        stuck = flat >= FLAT_STEPS  # the smoothed problem is solved to its numerical floor
        if st.delta > final_delta:  # an intermediate stage of the continuation
            if (st.r <= max(np.sqrt(st.delta) / sigma, kkt_tol) or stuck
                    or stage_it >= stage_max_iter):
                if stage_done(final_delta):
                    status = OPTIMAL
                    break
            continue
        if change <= tol and (st.r <= kkt_tol or stuck) and it >= next_check:
            # The kink slack with the smoothed multipliers costs nothing: the certificate
            # (a FISTA solve) only runs when it can pass.
            slack = float(w @ (np.sqrt(st.sq) - st.sq / np.sqrt(st.sq + st.delta)))
            slack /= max(1.0, abs(st.phi))
            if slack <= gap_tol:
                last_cert, ok = certificate(st.x, st.U, st.delta)
                if ok:
                    status = OPTIMAL
                    break
            else:
                last_cert = {"kink_slack_estimate": slack, "smoothed_stationarity": st.r}
            next_check, check_gap = it + check_gap, 2 * check_gap
            if st.delta > lowest_delta * (1 + 1e-12):
                if stage_done(lowest_delta):
                    status = OPTIMAL
                    break
                continue
        if st.delta <= lowest_delta * (1 + 1e-12) and since_best >= stall_iter:
            status = STALLED
            break
    extrapolated = False
    if result is not None:
        x, phi, delta, U, extrapolated = result[0], result[1], stage_ends[-1][0], st.U, True
    elif status != OPTIMAL and best[0] < st.phi:
        phi, x, delta, U = best
        extrapolated = any(e[2] == phi for e in extrap)
    else:
        x, phi, delta, U = st.x, st.phi, st.delta, st.U
    out = model.solution(x)
    out.update(model.multipliers(U))
    if not extrapolated and x is st.x and st.r <= kkt_tol:
        # The point minimizes φ_δ (to kkt_tol), so its smoothed stationarity is certifiable.
        # Not so for an extrapolation, a best iterate from earlier, or a stage stuck at its
        # numerical floor (the δ stays in info for warm starts).
        out["delta"] = np.array(delta)
    info = {"extrapolated": extrapolated, "delta": delta, "sigma": sigma,
            "stages": len(stage_ends) + 1, "monotone_violations": int(violations),
            "anderson_accepted": accepted, "anderson_rejected": rejected,
            "certificate_checks": checks, "linear_solver": model.kind,
            "cg_iterations": model.cg_iterations, "factor_fill": model.factor_fill,
            "predicted_fill": getattr(model, "predicted_fill", None),
            "extrapolations": extrap}
    if last_cert is not None:
        info["last_certificate"] = dict(last_cert)
    return Solution(out, phi, status, it, 0.0, solver.backend, solver.name, history, info=info)


class _State:
    """The current iterate with its group values, φ, φ_δ, smoothed stationarity and the
    smoothed multipliers ``U = g/√(‖g‖² + δ)``."""

    def __init__(self, model, x):
        self.model = model
        self.w = model.weights
        self.delta = 0.0
        self.accept(*self.evaluate(x))

    def true_obj(self, x, sq):
        return self.model.f(x) + float(self.w @ np.sqrt(sq))

    def evaluate(self, x):
        g = self.model.groups(x)
        sq = np.einsum("ij,ij->i", g, g)
        return x, g, sq, self.model.f(x) + float(self.w @ np.sqrt(sq + self.delta))

    def accept(self, x, g, sq, phi_s):
        self.x, self.g, self.sq, self.phi_s = x, g, sq, phi_s
        self.phi = self.true_obj(x, sq)
        self.U = g / np.sqrt(sq + self.delta)[:, None] if self.delta > 0 else None
        if self.U is not None:
            v = self.model.grad_f(x) + self.model.adjoint(self.U)
            self.r = float(np.max(np.abs(v) / self.model.scale(x)))
        else:
            self.r = np.inf

    def set_delta(self, delta):
        self.delta = delta
        self.accept(*self.evaluate(self.x))


@hookimpl
def register_solvers():
    return [IRLS()]
