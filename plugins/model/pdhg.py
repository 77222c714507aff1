r"""A primal–dual solver for any convex model whose non-smooth parts offer a prox
(docs/design.md §6).

Splitting. A model ``Σ_k h_k(A_k θ + c_k)`` subject to constraints is read as::

    min_θ  F(θ) + Σ_v g_v(θ_v) + Σ_k h_k(A_k θ + c_k)

* ``F`` — the terms with a gradient;
* ``g_v`` — one non-smooth term or constraint per variable whose argument is that whole
  variable (a constraint first: its projection keeps the iterates feasible);
* ``h_k`` — every other non-smooth term or constraint (A_k = identity for a second one on the
  same variable), each used through its prox.

Iteration (Condat 2013 / Vũ 2013; Chambolle & Pock 2011 when F = 0) in a primal metric ``D``
with diagonal steps T, Σ::

    θ⁺ = prox_{Tg}(θ − T D⁻¹(∇F(θ) + Σ_k A_kᵀ y_k))
    y_k⁺ = prox_{Σ_k h_k*}(y_k + Σ_k(A_k(2θ⁺ − θ) + c_k))

the dual prox by Moreau's identity, ``prox_{σh*}(v) = v − σ·prox_{h/σ}(v/σ)`` (the offset c_k
enters through ``A_k x̄ + c_k``: ``h_k(· + c_k)`` has conjugate ``h_k*(y) − ⟨c_k, y⟩``). It
converges when ``(TD)⁻¹ − AᵀΣA ⪰ (L/2)(1 + ε)D`` with ``L`` the Lipschitz constant of ∇F in the
metric D (the cocoercivity of ∇F in the metric of the iteration; Condat 2013 Thm. 3.1 in
those coordinates).

* **Metric.** ``D = I`` except on a kernel-expansion variable α (no g; a quadratic form
  ``w tr(αᵀKα)`` on it, and every other map on α starts with the same matrix, ``K @ alpha``):
  there ``D = K`` (the RKHS metric). ``D⁻¹Aᵀ`` and ``D⁻¹∇F`` are then the adjoints without their
  first factor K (``K⁻¹Kᵀ = I``), so K is never inverted, and the step on α is as well
  conditioned as the problem in f = Kα. Measured on the hinge + RKHS + graph quadratic + graph
  TV model of the tests (RBF kernel, eigenvalues down to 1e-9, n = 60): 400–900 iterations with
  it, stationarity still 2e-6 after 20,000 without.
* **Diagonal preconditioning** (Pock & Chambolle 2011, α = 1). ``precondition="elementwise"``:
  ``Σ₀ = 1/(|A|1)`` per row and ``T₀ = 1/(|A|ᵀ1)`` per column, from products with the entrywise
  absolute maps (explicit matrices; a products-only operator or a kernel variable contributes
  its block norm), elementwise where the term declares ``elementwise_prox`` (and the variable's
  g does), the smallest step otherwise. ``"blocks"``: Pock–Chambolle on the small matrix of
  block norms ``‖A_kv D_v^{-½}‖`` (power iteration): one σ per term, one τ per variable.
  Either way ``‖Σ₀^{½} A (T₀D⁻¹)^{½}‖`` is then measured by power iteration over the stacked maps
  and both are rescaled so that it is 1. Measured (iterations to the default tol):
  least-absolute-deviation regression with column scales 10^±1.5, 5,600 elementwise against
  more than 50,000 by blocks or with no preconditioning; the kernel models, 512–864 by blocks
  against 896–3,456 elementwise (the dense rows of K tie every entry to every other); TV
  denoising, the same within 10 %. ``"auto"`` (the default) takes blocks when a kernel metric
  is in use, elementwise otherwise.
* ``Σ = ωΣ₀``, ``T⁻¹ = ωT₀⁻¹ + (L/2)(1 + ε)`` satisfy the condition for every primal weight
  ω > 0; ``L`` by power iteration on the terms' ``hessp`` when every smooth term has it, from
  gradient differences otherwise; unless every smooth term is quadratic it is doubled whenever
  ``F(θ⁺) ≤ F(θ) + ⟨∇F(θ), θ⁺ − θ⟩ + (L/2)‖θ⁺ − θ‖²_D`` fails (the step is then redone).
* **Restarts with primal-weight updates** (Applegate et al. 2021, restarted PDHG / PDLP):
  every ``check_every`` iterations the fixed-point residual ``‖z − T(z)‖_P`` (P the metric of
  the iteration) of the current iterate and of the average since the last restart are
  compared; the iteration restarts from the better one when it is below 0.2× the residual at
  the last restart, or below 0.8× and no longer decreasing, or after 36 % of the iterations so
  far; at a restart ``ω ← √(ω · ‖Δy‖/‖Δθ‖)`` (distances travelled since the last restart, in
  the preconditioned norms). Plain PDHG (``restart=False``) needed 5× the iterations on 1-D TV
  denoising (2,720 against 512 at n = 2,000) and did not reach 1e-6 in 20,000 on the kernel
  models. Balancing the primal and dual residuals instead (Goldstein et al. 2015,
  ``weight_update="residual"``) saved up to 20 % on TV denoising but cost up to 3× on the
  kernel models.

* **Anderson extrapolation** (``anderson`` memory, off by default): safeguarded type-II Anderson
  acceleration (Walker & Ni 2011) of the pairs (z, T(z)), an extrapolated point kept when its
  fixed-point residual is not larger. Measured: 2–10× fewer iterations on TV denoising and LASS
  + entropy (1,312 → 128), but most proposals rejected — 1.5–3× the time — on the kernel
  models, least absolute deviations and the LapSVM + TV example.

The smooth part is not accelerated: its condition number in the metric D sets the iteration
count when it dominates (the LapSVM + TV example of ``ssl_opt.modeling.examples``, n = 60: about
14,000 iterations; the simplex-constrained multiclass example, n = 45: about 43,000).

A model whose dual solution does not exist cannot converge: Entropy with FixedRows fixing
zeros on the same variable (the entropy's subgradient is unbounded at 0) ends at
``MAX_ITERATIONS`` here; the ``mirror`` solver handles it.

With no ``h`` the iteration is proximal gradient; it is then run as FISTA with gradient-based
adaptive restart (O'Donoghue & Candès 2015), step 1/L, in the same metric.

Multipliers and stopping. The dual iterates are the multipliers of the ``h_k``; for a ``g_v``
the prox step gives ``u_v = (θ̃_v − θ⁺_v)/τ_v ∈ ∂g_v(θ⁺_v)`` (θ̃ the point before the prox), so
``∇F(θ⁺) + u + Aᵀy⁺`` is exactly the step's primal residual. The solution carries them in
``info["multipliers"]`` (one array per non-smooth term, then per constraint, in model order,
each of its argument's shape). The solver stops only when the model's own certificate
(:func:`~plugins.model.common.certificate_check`, started from those multipliers, with the
kink tolerance lowered to ``tol`` when that is below the model's 1e-6) has stationarity and
feasibility ≤ ``tol``. The certificate runs when the step's residuals are below ``tol``, each
time they have fallen 10× since the last one, and at least every 50 checks (it can pass first:
at entries of an entropy near 0 the dual step's subgradient is far from the one at the
iterate). A fixed point that fails the certificate (a prox inconsistent with its term's
subdifferential) is ``STALLED``; the best iterate (smallest residual) is returned, its status
from the full certificate.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from threadpoolctl import threadpool_limits

from ssl_opt._validation import check_bool, check_positive, choice, integer
from ssl_opt.hookspecs import hookimpl
from ssl_opt.modeling.model import Model
from ssl_opt.modeling.terms.constraints import FixedRows
from ssl_opt.modeling.terms.entropy import Entropy
from ssl_opt.plugins.model.common import (
    ModelSolver,
    certificate_check,
    kernel_expansion,
    kink_tolerance,
    lacking,
    pass_seconds,
    prox_seconds,
    warm_start_point,
)
from ssl_opt.plugins.model.iterative import VERBOSE_OPTION
from ssl_opt.plugins.model.pdhg_run import CHECK_ITERS, CHECK_TOL, PDHGRun
from ssl_opt.plugins.model.pdhg_split import (
    Split,
    innermost_matmul,
)
from ssl_opt.solution import OPTIMAL, History, Solution
from ssl_opt.solvers import TIME_LIMIT_OPTION, Option


# ------------------------------------------------------------------ the solver
class PDHG(ModelSolver):
    name = "pdhg"
    description = ("Primal–dual hybrid gradient (Condat–Vũ) for models whose non-smooth terms "
                   "and constraints offer a prox: diagonal preconditioning (Pock & Chambolle "
                   "2011), the RKHS metric on kernel expansions, restarts with primal-weight "
                   "updates (Applegate et al. 2021), FISTA with adaptive restart when every "
                   "non-smooth part sits on a whole variable; stops on the model's certificate.")
    complexity = {"model": (1.0, "O(products with the maps) per iteration")}
    options = {
        "tol": Option(1e-8, "stop when the model's certificate (stationarity and feasibility, "
                      "started from the solver's multipliers) is below this", check_positive),
        "max_iter": Option(50_000, "iterations at most (status MAX_ITERATIONS beyond)",
                           integer(1)),
        "check_every": Option(32, "iterations between restart decisions and certificate "
                              "checks", integer(1)),
        "restart": Option(True, "restarts with primal-weight updates (False: plain PDHG at a "
                          "fixed primal weight; FISTA without restarts)", check_bool),
        "precondition": Option("auto", "diagonal steps (Pock & Chambolle 2011): 'elementwise' "
                               "(row and column sums of |A| where the proxes allow), 'blocks' "
                               "(one σ per term and one τ per variable from the block norms), "
                               "'none' (one σ, one τ) or 'auto' (blocks with a kernel metric, "
                               "elementwise otherwise)",
                               choice("auto", "blocks", "elementwise", "none")),
        "kernel_metric": Option(True, "the RKHS metric K on kernel-expansion variables "
                                "(False: Euclidean)", check_bool),
        "weight_update": Option("distance", "primal-weight update at restarts: 'distance' "
                                "(PDLP), 'residual' (balance the primal and dual residuals, "
                                "Goldstein et al. 2015) or 'none'",
                                choice("distance", "residual", "none")),
        "anderson": Option(0, "memory of a safeguarded Anderson extrapolation of the "
                           "iteration (0: off)", integer(0)),
        "primal_weight": Option(1.0, "initial ratio ω of the dual to the primal steps (in the "
                                "preconditioned norms)", check_positive),
        "warm_start": Option(None, "a previous Solution (its info['multipliers'] start the dual "
                             "iterates) or a dict of the model's variables"),
        "time_limit": TIME_LIMIT_OPTION,
        "verbose": VERBOSE_OPTION,
    }

    # -- structure
    def structure_reasons(self, model: Model) -> list[str]:
        free = model.nonsmooth_terms + model.constraints
        return lacking(free, ("prox",), "PDHG's proximal and dual steps") + lacking(
            free, ("subdifferential",), "the model's certificate, PDHG's stopping test")

    def inexact(self, problem) -> str:
        """Two structures measured not to converge: a kernel expansion without the RKHS
        metric, and Entropy with FixedRows fixing zeros on the same variable."""
        if not isinstance(problem, Model) or self.structure_reasons(problem):
            return ""
        split = Split(problem)
        for t in problem.all_terms:
            for var, m in t.argument.parts:
                inner = innermost_matmul(m)
                if (inner is not None and var.name not in split.metric and var.shape
                        and not sp.issparse(inner.M)
                        and inner.M.shape == (var.shape[0], var.shape[0]) and var.shape[0] > 1):
                    return (f"{t.describe()} applies a dense square matrix to {var.name!r} "
                            "without an RKHS term on the same matrix (no kernel metric): "
                            "PDHG in the Euclidean metric crawls on kernel expansions")
        fixed_zero = {c.argument.parts[0][0].name for c in problem.constraints
                      if isinstance(c, FixedRows) and c.argument.is_variable()
                      and np.any(c.values == 0)}
        for t in problem.nonsmooth_terms:
            if isinstance(t, Entropy) and t.argument.is_variable() and (
                    t.argument.parts[0][0].name in fixed_zero):
                return (f"{t.describe()} with FixedRows fixing zeros of the same variable has "
                        "no dual solution (the entropy's subgradient is unbounded at 0); the "
                        "mirror solver handles it")
        return ""

    def predicted_time(self, problem) -> float:
        """Iterations × the products of one iteration (about three passes over every map,
        with the smooth terms' own matrices): a few hundred iterations with restarts on the
        test models, more with constraints on affine maps."""
        if not isinstance(problem, Model):
            return float("nan")
        split = Split(problem)
        iterations = 1000.0 if split.h else 300.0
        if kernel_expansion(problem, problem.all_terms):
            # Measured on the kernel variants (docs/modeling.md, n = 45..120): 800 to 40,000
            # iterations, the smooth part's conditioning is that of K·K.
            iterations *= 10.0
        per_iteration = (3.0 * pass_seconds(problem) + prox_seconds(problem)
                         + 2e-5 * len(problem.all_terms))
        return 0.02 + iterations * per_iteration

    # -- solve
    def _solve(self, model: Model, tol, max_iter, check_every, restart, precondition,
               kernel_metric, weight_update, anderson, primal_weight, warm_start,
               time_limit, verbose) -> Solution:
        split = Split(model, kernel_metric)
        x0, mult0 = warm_start_point(model, warm_start)
        if x0 is not None:  # a warm start that already passes is returned as is
            cert = certificate_check(model, x0, mult0, CHECK_ITERS, CHECK_TOL,
                                     kink_tolerance(tol))
            if max(cert.values(), default=0.0) <= tol:
                x = {k: np.array(v) for k, v in x0.items()}
                return Solution(x, model.objective(x), OPTIMAL, 0, 0.0, self.backend,
                                self.name, History(), info={"warm_start_certified": True,
                                                            "certificate": cert,
                                                            "multipliers": mult0})
        theta = np.zeros(split.size) if x0 is None else np.concatenate(
            [np.ravel(x0[name]) for name in split.shapes])
        y0 = [np.zeros(t.shape) for t in split.h]
        if mult0 is not None:
            for (role, key), u in zip(split.roles, mult0, strict=True):
                if role == "h":
                    y0[key] = np.array(u)
        run = PDHGRun(self, split, tol, max_iter, check_every, restart, weight_update, anderson,
                   time_limit, verbose)
        # One BLAS thread: the loop alternates many small products, and idle pool threads
        # spinning between them cost milliseconds per call on a loaded machine.
        with threadpool_limits(1):
            if not split.h:
                return run.fista(theta)
            return run.pdhg(theta, y0, precondition, primal_weight)


@hookimpl
def register_solvers():
    return [PDHG()]
