r"""Newton in the feature space of a low-rank kernel ``K = ΦΦᵀ`` (a Nyström approximation).

With ``f = Kα + b`` and ``w = Φᵀα``, ``f = Φw + b`` and ``αᵀKα = ‖w‖²``, so the manifold
objective [000 eq. 6, docs/design.md §4.1] becomes, with ``θ = (w, b)`` and ``Φ̃ = [Φ, 1]``,

    ``J(θ) = ½ [Σ_{i≤l} φ(y_i Φ̃_iθ) + γ_A ‖w‖² + γ_I θᵀMθ]``,   ``M = Φ̃ᵀLΦ̃`` ((r+1)×(r+1)).

M is formed once (``L Φ̃`` in column blocks, O(nnz(L)·r + n·r²)); after that a Newton step
costs O(l·r² + r³), independent of n: gradient ``½Φ̃_Lᵀ(y∘φ') + γ_A(w, 0) + γ_I Mθ``, Hessian
``½Φ̃_Lᵀ diag(φ'')Φ̃_L + γ_A diag(1, 0) + γ_I M`` (the generalized Hessian for the squared
hinge [000 eq. 10]), and the exact line search of the family. It stops as Newton does: the
error set unchanged after a full step (piecewise-quadratic losses) or the family's gradient
norm ``‖(K v, ∇_b)‖ = ‖(Φ g_w, g_b)‖`` below ``tol``.

The expansion returned is the minimum-norm ``α = Φ G⁻¹ w`` with ``G = ΦᵀΦ`` (``Φᵀα = w``), so
the solution, its objective and its certificate are those of the problem on the operator K.
"""

from __future__ import annotations

import time

import numpy as np
import scipy.linalg as sla

from ssl_opt._validation import check_nonnegative, integer
from ssl_opt.hookspecs import hookimpl
from ssl_opt.numerics.line_search import exact_step
from ssl_opt.plugins.manifold.iterates import initial_point, manifold_solution, newton_stop
from ssl_opt.problems.manifold.problem import LapSVM
from ssl_opt.solution import MAX_ITERATIONS, History, Solution
from ssl_opt.solvers import Option, Solver

#: Bytes of the n × k column blocks of ``LΦ̃`` while M is formed.
BLOCK_BYTES = 256 * 2**20


def low_rank_factor(problem):
    """The factor Φ (n×r) of ``problem.K = ΦΦᵀ`` when K declares one (``factor``), else None."""
    factor = getattr(problem.K, "factor", None) if problem.kernel_is_operator else None
    if isinstance(factor, np.ndarray) and factor.ndim == 2 and factor.shape[0] == problem.n:
        return factor
    return None


class FeatureSpace:
    """``Φ̃``, ``G = ΦᵀΦ`` and ``M = Φ̃ᵀLΦ̃`` of a problem on a low-rank K, formed once."""

    def __init__(self, problem, Phi: np.ndarray):
        self.problem = problem
        self.Phi = Phi
        n, r = Phi.shape
        self.r = r
        self.dim = r + int(problem.bias)
        self.G = _gram(Phi)
        M = np.empty((self.dim, self.dim))
        width = max(1, int(BLOCK_BYTES // (8 * n)))
        for start in range(0, self.dim, width):
            cols = np.arange(start, min(start + width, self.dim))
            block = self.columns(cols)
            LB = np.asarray(problem.L @ block, dtype=np.float64)
            M[:, cols] = self.rmatmat(LB)
        self.M = 0.5 * (M + M.T)
        labeled = Phi[: problem.l].astype(np.float64)
        self.labeled = (np.hstack([labeled, np.ones((problem.l, 1))]) if problem.bias
                        else labeled)

    def columns(self, cols: np.ndarray) -> np.ndarray:
        """Columns ``cols`` of ``Φ̃`` (the bias column is ones)."""
        out = np.empty((self.Phi.shape[0], cols.size))
        inner = cols < self.r
        out[:, inner] = self.Phi[:, cols[inner]]
        out[:, ~inner] = 1.0
        return out

    def rmatmat(self, B: np.ndarray) -> np.ndarray:
        """``Φ̃ᵀB``."""
        top = np.asarray(self.Phi.T @ B, dtype=np.float64)
        return np.vstack([top, B.sum(axis=0, keepdims=True)]) if self.problem.bias else top

    def gradient_norm(self, g: np.ndarray) -> float:
        """``‖(Φ g_w, g_b)‖``: the family's ``‖(∇_α J, ∇_b J)‖`` with ``∇_α J = Φ g_w``."""
        g_w = g[: self.r]
        g_b = g[self.r] if self.problem.bias else 0.0
        return float(np.sqrt(max(0.0, g_w @ self.G @ g_w) + g_b * g_b))

    def expansion(self, w: np.ndarray) -> np.ndarray:
        """The minimum-norm α with ``Φᵀα = w``: ``Φ G⁻¹ w``."""
        try:
            c = sla.cho_solve(sla.cho_factor(self.G, check_finite=False), w, check_finite=False)
        except np.linalg.LinAlgError:
            c = np.linalg.lstsq(self.G, w, rcond=None)[0]
        return np.asarray(self.Phi @ c, dtype=np.float64)

    def coordinates(self, alpha: np.ndarray, b: float) -> np.ndarray:
        """``θ = (Φᵀα, b)`` of a start point."""
        w = np.asarray(self.Phi.T @ alpha, dtype=np.float64)
        return np.append(w, b) if self.problem.bias else w


def _gram(Phi: np.ndarray) -> np.ndarray:
    """``ΦᵀΦ`` in float64 (row blocks, so a float32 Φ is not copied whole)."""
    r = Phi.shape[1]
    G = np.zeros((r, r))
    rows = max(1, int(BLOCK_BYTES // (8 * max(1, r))))
    for start in range(0, Phi.shape[0], rows):
        B = np.asarray(Phi[start : start + rows], dtype=np.float64)
        G += B.T @ B
    return G


class LowRankNewton(Solver):
    name = "lowrank-newton"
    complexity = {"manifold": (1.0, "O(nnz(L)·r + n·r²) once, then O(l·r² + r³) per step")}
    tolerance_family = "direct"
    problem_types = (LapSVM,)
    requires = {"loss": ("derivative", "second_derivative")}
    #: Reads K's factor Φ, never K: no n×n memory (see ``LapSVM.memory_for``).
    kernel_access = "factor"
    hint = ("lowrank-newton needs K = ΦΦᵀ with a stored factor (ssl_opt.operators."
            "NystromOperator) and a twice-differentiable loss")
    description = (
        "Newton in the r-dimensional feature space of a low-rank K = ΦΦᵀ (Nyström): "
        "M = Φ̃ᵀLΦ̃ formed once, then (r+1)×(r+1) Newton steps with exact line search.")
    options = {
        "tol": Option(1e-10, "stop when ‖∇J‖ ≤ tol·max(1, ‖∇J(0)‖), or when J stops "
                      "decreasing at round-off with ‖∇J‖ ≤ √tol·max(1, ‖∇J(0)‖)",
                      check_nonnegative),
        "max_iter": Option(100, "Newton steps at most", integer(0)),
        "warm_start": Option(None, "a previous Solution or dict to start from"),
    }

    def missing(self, problem) -> list[str]:
        reasons = super().missing(problem)
        if not reasons and low_rank_factor(problem) is None:
            reasons = ["K as a low-rank factor: K must be an operator with a stored factor Φ, "
                       "K = ΦΦᵀ (ssl_opt.operators.NystromOperator)"]
        return reasons

    def predicted_time(self, problem) -> float:
        Phi = low_rank_factor(problem)
        n = problem.n
        r = n if Phi is None else Phi.shape[1]
        nnz = problem.L.nnz if hasattr(problem.L, "nnz") else n * n
        # Forming G and M: two n×r×r GEMMs (~1e-11 s per multiply-add here) and L·Φ̃.
        return 1e-3 + 2e-11 * n * r * r + 3e-9 * nnz * r + 30 * 1e-10 * r**3

    def predicted_memory(self, problem) -> float:
        Phi = low_rank_factor(problem)
        r = problem.n if Phi is None else Phi.shape[1]
        return float(min(BLOCK_BYTES, 8 * problem.n * (r + 1)) * 2 + 8 * (r + 1) ** 2 * 4
                     + 8 * 8 * problem.n)

    def _solve(self, problem, tol, max_iter, warm_start) -> Solution:
        start = time.perf_counter()
        space = FeatureSpace(problem, low_rank_factor(problem))
        setup = time.perf_counter() - start
        l, y, loss, bias, r = problem.l, problem.y, problem.loss, problem.bias, space.r
        piecewise_quadratic = "piecewise_quadratic" in loss.capabilities
        gA, gI, M, A = problem.gamma_A, problem.gamma_I, space.M, space.labeled
        reg = np.full(space.dim, gA)
        if bias:
            reg[r] = 0.0
        alpha0, b0 = initial_point(problem, warm_start)
        theta = space.coordinates(alpha0, b0)
        target = tol * problem.gradient_scale
        history = History()
        status, it, error_set, s, damped = MAX_ITERATIONS, 0, None, 0.0, 0
        while True:
            f_l = A @ theta
            m = y * f_l
            Mt = M @ theta
            g = 0.5 * A.T @ (y * loss.derivative(m)) + reg * theta + gI * Mt
            gnorm = space.gradient_norm(g)
            obj = 0.5 * (float(np.sum(loss.value(m))) + float(theta @ (reg * theta))
                         + gI * float(theta @ Mt))
            new_set = np.flatnonzero(m < 1.0)
            history.append(iteration=it, objective=obj, grad_norm=gnorm / problem.gradient_scale,
                           step=s, error_vectors=new_set.size, time=time.perf_counter() - start)
            stop = newton_stop(history, it, max_iter, s, error_set, new_set, gnorm, target,
                               np.sqrt(tol) * problem.gradient_scale, piecewise_quadratic)
            if stop is not None:
                status = stop
                break
            it += 1
            error_set = new_set
            H = 0.5 * (A.T * loss.second_derivative(m)) @ A + gI * M
            H[np.diag_indices_from(H)] += reg
            try:
                d = sla.solve(H, -g, assume_a="pos", check_finite=False)
            except (np.linalg.LinAlgError, ValueError):
                # No curvature along b (no error vectors, L1 = 0): damp b only.
                H[-1, -1] += 1e-8 * max(1.0, l)
                d = sla.solve(H, -g, assume_a="sym", check_finite=False)
                damped += 1
            Md = M @ d
            a0 = float(d @ (reg * theta)) + gI * float(d @ Mt)
            a1 = float(d @ (reg * d)) + gI * float(d @ Md)
            s = exact_step(loss, m, y * (A @ d), a0, a1)
            if piecewise_quadratic and abs(s - 1.0) < 1e-12:
                s = 1.0
            theta = theta + s * d
        alpha = space.expansion(theta[:r])
        b = float(theta[r]) if bias else 0.0
        return manifold_solution(self, alpha, b, obj, status, it, history,
                                 grad_norm=gnorm / problem.gradient_scale, damped_steps=damped,
                                 rank=r, setup_seconds=setup)


@hookimpl
def register_solvers():
    return [LowRankNewton()]
