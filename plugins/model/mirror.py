r"""Bregman (entropic mirror) proximal gradient for models on the probability simplex
(docs/design.md §6).

Structure. One variable Z (n×c, or a vector: one row) with ``SimplexRows(Z)``, optionally
``Entropy(Z, μ)`` (μ = the sum of their weights), optionally ``FixedRows(Z, rows, values)``
(those rows stay at their values and are excluded from the updates), and every other term
smooth: ``min F(Z) + μ Σ z log z`` over the free rows on the simplex.

Step. With the KL divergence ``KL(P, Z) = Σ p log(p/z)`` on the rows (the Bregman divergence of
``Σ z log z`` on the simplex), the step from Z with step t is::

    Z⁺ = argmin_{rows on the simplex} ⟨∇F(Z), P⟩ + μ Σ p log p + KL(P, Z)/t

Per row, stationarity of the Lagrangian gives ``g_j + μ(log p_j + 1) + (log p_j − log z_j)/t
+ ν = 0``, i.e. ``log p_j = (log z_j − t g_j)/(1 + tμ) + const``: the row-wise softmax of
``(log Z − t∇F)/(1 + tμ)`` (computed in log space, so no entry underflows to an exact zero;
``Entropy.mirror_step`` is the same map before the normalization, and the test file checks
the step against a direct minimization). F is smooth relative to the entropy (for a quadratic
F, ``½dᵀ∇²Fd ≤ max|∇²F| ½‖d‖₁² ≤ max|∇²F| KL`` by Pinsker), so the step size comes from
backtracking on the relative-smoothness inequality::

    F(Z⁺) ≤ F(Z) + ⟨∇F(Z), Z⁺ − Z⟩ + KL(Z⁺, Z)/t

(t halved until it holds; tried 1.5× larger at every step without Anderson acceleration, every
``check_every`` steps with it).

Acceleration. The step is a fixed-point map of the log-iterates (log Z, free rows), extrapolated
by safeguarded type-II Anderson acceleration (Walker & Ni 2011; memory ``anderson``): the
extrapolated point, renormalized onto the simplex, is taken only when its objective is below
the plain step's. The step size then changes only every ``check_every`` iterations (or on a
backtrack), and the memory restarts when it does. Measured on LASS models (LinearScore +
GraphQuadratic + Entropy, N = 80–400, K = 4, μ = 0.005–0.5, FixedRows or not): 40–1,120
iterations with Anderson against 1,700 to more than 5,000 for the plain step. The accelerated
Bregman proximal gradient of Hanzely, Richtárik & Xiao 2021 (γ = 2, backtracking, restarts) was
measured too and dropped: its line search inflates L because the KL divergence has
triangle-scaling exponent 1, not 2, and it needed more iterations than the plain step on every
model tried.

Without Entropy the iterates stay strictly positive: the entries whose optimal value is 0 decay
geometrically when their reduced cost is positive, but reach the certificate's kink tolerance
only after many steps, and a degenerate optimum (zero reduced cost at a zero) converges only
sublinearly. Measured on the LASS model without Entropy (N = 40 and 3,000): not certified
within 20,000 iterations (objective right to 1e-10, stationarity ~1e-3), where ``pdhg`` (FISTA
on the projection) needed 128 and 384. The solver accepts such models, and
:meth:`Mirror.inexact` says so (``select`` then prefers an exact solver).

Multipliers (the certificate's starting point, ``info["multipliers"]``): for Entropy its
gradient ``μ(log Z + 1)`` (``μ(log(tol) + 1)`` at exact zeros of fixed rows); for SimplexRows
the normal-cone element ``−∇F − μ(log Z + 1)`` on the free rows (0 on the fixed rows); for
FixedRows the same element on the fixed rows. The solver stops when the model's certificate
(stationarity and feasibility, kink tolerance ``min(1e-6, tol)``) is ≤ ``tol``, and returns
the best iterate.
"""

from __future__ import annotations

import numpy as np
from scipy.special import xlogy
from threadpoolctl import threadpool_limits

from ssl_opt._validation import check_positive, integer
from ssl_opt.exceptions import InvalidInputError
from ssl_opt.hookspecs import hookimpl
from ssl_opt.modeling.model import Model
from ssl_opt.modeling.terms.constraints import FixedRows, SimplexRows
from ssl_opt.modeling.terms.entropy import Entropy
from ssl_opt.numerics.anderson import SafeguardedAnderson
from ssl_opt.plugins.model.common import (
    ModelSolver,
    SmoothPart,
    kink_tolerance,
    pass_seconds,
    warm_start_point,
)
from ssl_opt.plugins.model.iterative import VERBOSE_OPTION, Run
from ssl_opt.solution import MAX_ITERATIONS, OPTIMAL, STALLED, TIME_LIMIT, Solution
from ssl_opt.solvers import TIME_LIMIT_OPTION, Option

#: Iterations and relative accuracy of the certificate's minimization at a check.
CHECK_ITERS, CHECK_TOL = 300, 1e-6
#: Step growth after an accepted step (backtracking halves it).
GROWTH = 1.5
#: Checks in a row with a flat objective (and no certificate) before STALLED.
STALL_CHECKS = 5
#: Exact zeros of a warm start are lifted to LIFT/c (the steps are multiplicative).
LIFT = 1e-12
#: Iterations during which the step is tried larger at every step.
WARM_UP = 20


def log_normalize(a: np.ndarray) -> np.ndarray:
    """``a − log Σ_j exp(a_j)`` per row (the log of the row-wise softmax)."""
    top = a.max(axis=1, keepdims=True)
    return a - (top + np.log(np.exp(a - top).sum(axis=1, keepdims=True)))


def entropic_step(logZ: np.ndarray, G: np.ndarray, t: float, mu: float) -> np.ndarray:
    """``log P`` for ``P = argmin_{rows on the simplex} ⟨G, P⟩ + μ Σ p log p + KL(P, Z)/t``:
    the row-wise log-softmax of ``(log Z − tG)/(1 + tμ)`` (module docstring)."""
    return log_normalize((logZ - t * G) / (1.0 + t * mu))


def _simplex_variable(model: Model):
    """``(variable, reasons)``: the one variable constrained by SimplexRows."""
    simplex = [c for c in model.constraints if isinstance(c, SimplexRows)]
    if len(simplex) != 1:
        return None, [f"exactly one SimplexRows constraint on a whole variable (this model has "
                      f"{len(simplex)})"]
    c = simplex[0]
    if not c.argument.is_variable():
        return None, [f"{c.describe()} on a whole variable (its argument is an affine map)"]
    return c.argument.parts[0][0], []


class Mirror(ModelSolver):
    name = "mirror"
    description = ("Entropic mirror (Bregman proximal gradient) for models on SimplexRows(Z), "
                   "optionally with Entropy and FixedRows on Z and smooth terms: row-wise "
                   "softmax steps, backtracking on relative smoothness, safeguarded Anderson "
                   "acceleration of the log-iterates.")
    complexity = {"model": (1.0, "O(products with the smooth terms' maps) per iteration")}
    options = {
        "tol": Option(1e-8, "stop when the model's certificate (stationarity and feasibility, "
                      "started from the solver's multipliers) is below this", check_positive),
        "max_iter": Option(20_000, "iterations at most (status MAX_ITERATIONS beyond)",
                           integer(1)),
        "check_every": Option(20, "iterations between certificate checks", integer(1)),
        "anderson": Option(10, "memory of the safeguarded Anderson extrapolation of the "
                           "log-iterates (0: the plain step)", integer(0)),
        "warm_start": Option(None, "a previous Solution or dict of the model's variables "
                             "(zeros are lifted off the boundary)"),
        "time_limit": TIME_LIMIT_OPTION,
        "verbose": VERBOSE_OPTION,
    }

    # -- structure
    def structure_reasons(self, model: Model) -> list[str]:
        var, reasons = _simplex_variable(model)
        if var is None:
            return reasons
        if not var.shape:
            return [f"a vector or matrix variable on the simplex ({var.name!r} is a scalar)"]
        others = [n for n in model.variables if n != var.name]
        if others:
            reasons.append(f"every term on the simplex variable {var.name!r} alone (variables "
                           f"{others} are not on the simplex)")
        for t in model.nonsmooth_terms:
            if not (isinstance(t, Entropy) and t.argument.is_variable()
                    and t.argument.parts[0][0] is var):
                reasons.append(f"{t.describe()} to be smooth (offer gradient) or an Entropy on "
                               f"the whole variable {var.name!r}")
        for c in model.constraints:
            if isinstance(c, SimplexRows):
                continue
            if not (isinstance(c, FixedRows) and c.argument.is_variable()
                    and c.argument.parts[0][0] is var and len(var.shape) == 2):
                reasons.append(f"{c.describe()}: only SimplexRows, and FixedRows fixing rows "
                               f"of the n×c variable {var.name!r}, are handled by mirror steps")
        return reasons

    def inexact(self, problem) -> str:
        if not isinstance(problem, Model) or self.structure_reasons(problem):
            return ""
        if any(isinstance(t, Entropy) and t.weight > 0 for t in problem.nonsmooth_terms):
            return ""
        return ("without an Entropy term the mirror iterates stay strictly positive and reach "
                "a boundary optimum only asymptotically (sublinearly when it is degenerate)")

    def predicted_time(self, problem) -> float:
        """Iterations × the products of one iteration (a gradient and about two objective
        evaluations): a few hundred steps with Entropy; without it the default cap (the LASS
        model of the module docstring at N = 3000 did not certify within it)."""
        if not isinstance(problem, Model):
            return float("nan")
        iterations = 20_000.0 if self.inexact(problem) else 100.0  # measured: 60-140 steps
        return 0.02 + iterations * (3.0 * pass_seconds(problem)
                                    + 2e-5 * len(problem.all_terms))

    # -- solve
    def _solve(self, model: Model, tol, max_iter, check_every, anderson, warm_start,
               time_limit, verbose) -> Solution:
        run = _MirrorRun(self, model, tol, max_iter, check_every, time_limit, verbose)
        x0, _ = warm_start_point(model, warm_start)
        with threadpool_limits(1):
            return run.solve(None if x0 is None else x0[run.var_name], anderson)


class _MirrorRun(Run):
    """One solve on the n×c view of Z (a vector is one row): the free and fixed rows, the
    steps, the multipliers, the loop."""

    def __init__(self, solver: Mirror, model: Model, tol, max_iter, check_every, time_limit,
                 verbose):
        super().__init__(solver.name, model, tol, max_iter, time_limit, verbose)
        self.solver, self.check_every = solver, check_every
        var, _ = _simplex_variable(model)
        self.var_name, self.shape = var.name, var.shape
        self.smooth = SmoothPart(model, model.smooth_terms)
        self.mu = float(sum(t.weight for t in model.nonsmooth_terms))
        n = self.shape[0] if len(self.shape) == 2 else 1
        self.c = self.shape[-1] if self.shape else 1
        self.n = n
        fixed = np.zeros(n, dtype=bool)
        values = np.full((n, self.c), np.nan)
        for con in model.constraints:
            if isinstance(con, FixedRows):
                rows = con.rows
                vals = np.asarray(con.values, dtype=np.float64).reshape(len(rows), self.c)
                clash = fixed[rows] & ~np.all(np.isclose(values[rows], vals), axis=1)
                if np.any(clash):
                    raise InvalidInputError("two FixedRows constraints fix a row of "
                                            f"{self.var_name!r} to different values.")
                fixed[rows], values[rows] = True, vals
        bad = fixed & ~(np.all(values >= 0, axis=1)
                        & (np.abs(values.sum(axis=1) - 1.0) <= 1e-10))
        if np.any(bad):
            raise InvalidInputError(f"FixedRows values of rows {np.flatnonzero(bad)[:5].tolist()} "
                                    "are not on the simplex, so SimplexRows cannot hold there; "
                                    "fix those rows to probability vectors.")
        self.fixed, self.values = fixed, values
        self.free = ~fixed

    # -- helpers on the n×c view
    def _theta(self, Z: np.ndarray) -> np.ndarray:
        return Z.ravel().copy()

    def _F(self, Z: np.ndarray) -> float:
        return self.smooth.value(self._theta(Z)) if self.smooth.terms else 0.0

    def _F_grad(self, Z: np.ndarray) -> tuple[float, np.ndarray]:
        if not self.smooth.terms:
            return 0.0, np.zeros_like(Z)
        value, grad = self.smooth.value_and_gradient(self._theta(Z))
        return value, grad.reshape(Z.shape)

    def _entropy(self, Z: np.ndarray) -> float:
        return self.mu * float(np.sum(xlogy(Z, Z))) if self.mu else 0.0

    def _step(self, logZ: np.ndarray, g: np.ndarray, t: float) -> np.ndarray:
        """log of the row-wise softmax of ``(log Z − t g)/(1 + tμ)`` on the free rows."""
        out = logZ.copy()
        out[self.free] = entropic_step(logZ[self.free], g[self.free], t, self.mu)
        return out

    def _kl(self, logP: np.ndarray, logZ: np.ndarray) -> float:
        """``KL(P, Z) = Σ p log(p/z)`` over the free rows (rows on the simplex)."""
        free = self.free
        P = np.exp(logP[free])
        return float(np.sum(P * (logP[free] - logZ[free])))

    def _initial(self, Z0) -> np.ndarray:
        """log Z of the start: uniform free rows, or a warm start lifted off the boundary."""
        logZ = np.full((self.n, self.c), -np.log(self.c))
        if Z0 is not None:
            Z = np.asarray(Z0, dtype=np.float64).reshape(self.n, self.c)
            Z = np.maximum(Z, 0.0)
            Z = np.where(Z > 0, Z, LIFT / self.c)  # the steps are multiplicative
            Z /= Z.sum(axis=1, keepdims=True)
            logZ = np.log(Z)
        with np.errstate(divide="ignore"):
            logZ[self.fixed] = np.log(self.values[self.fixed])
        return logZ

    def _view(self, Z: np.ndarray) -> np.ndarray:
        return Z.reshape(self.shape)

    def multipliers(self, logZ: np.ndarray, grad: np.ndarray) -> list[np.ndarray]:
        """Entropy gradient, and the normal-cone elements of SimplexRows (free rows) and of
        FixedRows (their rows), in model order (module docstring); from log Z, finite even
        where Z underflows."""
        # Exact zeros (fixed rows only: free rows stay positive) sit at the kink tolerance.
        floor = np.maximum(logZ, np.log(kink_tolerance(self.tol)))
        u_ent = np.where(self.fixed[:, None], floor, logZ) + 1.0
        rest = -(grad + self.mu * u_ent) if self.mu else -grad
        covered = np.zeros(self.n, dtype=bool)
        out = []
        for t in self.model.nonsmooth_terms:  # Entropy terms, each its own weight
            out.append(self._view(t.weight * u_ent))
        for con in self.model.constraints:
            if isinstance(con, SimplexRows):
                out.append(self._view(np.where(self.free[:, None], rest, 0.0)))
            else:  # each fixed row's element goes to the first FixedRows that fixes it
                mask = np.zeros(self.n, dtype=bool)
                mask[con.rows] = True
                mask &= ~covered
                covered |= mask
                out.append(self._view(np.where(mask[:, None], rest, 0.0)))
        return out

    # -- the loop
    def solve(self, Z0, memory: int) -> Solution:
        logx = self._initial(Z0)
        x = np.exp(logx)
        Fx, gx = self._F_grad(x)
        if Z0 is not None:  # a warm start that already passes is returned as is
            cert = self.certify({self.var_name: self._view(x)}, self.multipliers(logx, gx),
                                CHECK_ITERS, CHECK_TOL)
            if max(cert.values(), default=0.0) <= self.tol:
                return self._finish((0.0, logx, gx), OPTIMAL, 0,
                                    {"warm_start_certified": True, "certificate": cert})
        phi_x = Fx + self._entropy(x)
        state = {"L": 1.0, "backtracks": 0}
        free = self.free
        aa = SafeguardedAnderson(int(free.sum()) * self.c, memory, clear_on_reject=False)
        best = None  # (worst residual, logx, grad)
        stalls, status, it, last_phi = 0, None, 0, np.inf
        while it < self.max_iter:
            it += 1
            # The plain step tries a larger step every iteration; with Anderson the map must
            # stay fixed between extrapolations, so only every check_every steps.
            grow = not memory or it <= WARM_UP or it % self.check_every == 0
            logx_new, x_new, F_new = self._plain(state, logx, x, Fx, gx, grow)
            phi_new = F_new + self._entropy(x_new)
            if memory:
                if state.pop("changed", False):
                    aa.restart()
                aa.observe(logx[free], logx_new[free])
                found = aa.propose(self._evaluate, lambda c, phi=phi_new: c[2] < phi)
                if found is not None:
                    logx_new, x_new, phi_new = found
            if x_new is not x:
                logx, x = logx_new, x_new
                Fx, gx = self._F_grad(x)
                phi_x = phi_new
            if it % self.check_every and it != self.max_iter:
                continue
            mult = self.multipliers(logx, gx)
            cert = self.certify({self.var_name: self._view(x)}, mult, CHECK_ITERS, CHECK_TOL)
            worst = max(cert.values(), default=0.0)
            flat = abs(phi_x - last_phi) <= 1e-15 * max(1.0, abs(phi_x))
            last_phi = phi_x
            if best is None or worst < best[0]:
                best = (worst, logx.copy(), gx.copy())
            stalls = stalls + 1 if flat else 0
            self.record(iteration=it, objective=phi_x, step=1.0 / state["L"], **cert)
            if worst <= self.tol:
                status = OPTIMAL
                break
            if stalls >= STALL_CHECKS:
                status = STALLED
                break
            if self.out_of_time():
                status = TIME_LIMIT
                break
        info = {"step": 1.0 / state["L"], "backtracks": state["backtracks"], "mu": self.mu,
                "anderson_accepted": aa.accepted, "anderson_rejected": aa.rejected}
        return self._finish(best, status or MAX_ITERATIONS, it, info)

    def _evaluate(self, u: np.ndarray):
        """An extrapolated log-iterate (free rows) renormalized onto the simplex:
        ``(log Z, Z, objective)``."""
        logx = self._initial(None)
        logx[self.free] = log_normalize(u.reshape(-1, self.c))
        x = np.exp(logx)
        return logx, x, self._F(x) + self._entropy(x)

    def _plain(self, state, logx, x, Fx, gx, grow: bool):
        """The Bregman step with backtracking on relative smoothness: ``(log Z⁺, Z⁺, F(Z⁺))``;
        the step is first tried ``GROWTH`` times larger when ``grow`` (``state["changed"]``
        says the step, so the fixed-point map, changed)."""
        if grow:
            state["L"] /= GROWTH
            state["changed"] = True
        while True:
            L = state["L"]
            logx_new = self._step(logx, gx, 1.0 / L)
            x_new = np.exp(logx_new)
            F_new = self._F(x_new)
            bound = Fx + float(np.sum(gx * (x_new - x))) + L * self._kl(logx_new, logx)
            if F_new <= bound + 1e-12 * max(1.0, abs(Fx)) or L > 1e300:
                return logx_new, x_new, F_new
            state["L"] = 2.0 * L
            state["backtracks"] += 1
            state["changed"] = True

    def _finish(self, best, status, it, info) -> Solution:
        _, logx, grad = best
        Z = np.exp(logx)
        x = {self.var_name: self._view(Z).copy()}
        mult = self.multipliers(logx, grad)
        status = self.final_status(status, x, mult, info)
        info["multipliers"] = mult
        return Solution(x, self.model.objective(x), status, it, 0.0, self.solver.backend,
                        self.solver.name, self.history, info=info)


@hookimpl
def register_solvers():
    return [Mirror()]
