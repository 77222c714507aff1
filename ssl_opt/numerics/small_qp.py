"""Small dense QPs solved exactly, for block and coordinate methods (NPKL's column updates):
``M⁻¹ rhs`` for a small SPD M through LAPACK's ``dposv``, the non-negative QP by Lawson and
Hanson's active-set method, and the box-constrained QP by a primal active-set method."""

from __future__ import annotations

import numpy as np
from scipy.linalg.lapack import dposv


def spd_solve(M: np.ndarray, rhs: np.ndarray) -> np.ndarray:
    """``M⁻¹ rhs`` for a small SPD ``M`` (LAPACK ``dposv``: far less call overhead than
    ``numpy.linalg.solve`` on the k×k systems of the column updates)."""
    _, x, info = dposv(M, rhs)
    if info != 0:
        return np.linalg.lstsq(M, rhs, rcond=None)[0]
    return x


def nonneg_qp(P: np.ndarray, q: np.ndarray, guess: np.ndarray | None = None) -> np.ndarray:
    """``argmin ½αᵀPα − qᵀα`` over ``α ≥ 0`` for a small positive definite ``P`` (the squared
    hinge's column dual when some pair is inactive). First the QP on the ``guess`` set (the
    positive entries of the unconstrained solution), kept if it is positive there and the
    negative gradient ``q − Pα`` is ≤ 0 elsewhere (the KKT conditions; the usual case).
    Otherwise Lawson and Hanson's active-set method (*Solving Least Squares Problems*, 1974,
    ch. 23) with ``q − Pα`` in place of ``Aᵀ(b − Aα)``: from ``α = 0``, the free index with the
    largest positive negative gradient joins the passive set, the QP is solved on that set,
    and a solution with non-positive entries is moved back along the segment until the first
    of them reaches 0 and leaves; done at the KKT conditions. The minimizer is unique, so this
    is :func:`box_qp`'s point, with a few Cholesky solves instead of least-squares steps."""
    k = q.size
    tol = 1e-12 * max(1.0, float(np.abs(q).max()), float(P.diagonal().max()))

    def on(passive):
        F = np.flatnonzero(passive)
        s = np.zeros(k)
        s[F] = spd_solve(P[np.ix_(F, F)], q[F])
        return F, s

    if guess is not None and guess.any():
        F, s = on(guess)
        if s[F].min() > 0.0 and (guess.all() or (q - P @ s)[~guess].max() <= tol):
            return s
    x = np.zeros(k)
    passive = np.zeros(k, dtype=bool)
    w = q.copy()
    for _ in range(3 * k):
        free = np.where(passive, -np.inf, w)
        j = int(np.argmax(free))
        if free[j] <= tol:
            break
        passive[j] = True
        for _ in range(k):
            F, s = on(passive)
            if s[F].min() > 0.0:
                x = s
                break
            cut = F[s[F] <= 0.0]  # x > 0 there (but for a just-added index), s ≤ 0
            xc = x[cut]
            ratios = np.divide(xc, xc - s[cut], out=np.zeros_like(xc), where=xc > 0.0)
            blocking = int(np.argmin(ratios))
            x = x + ratios[blocking] * (s - x)
            passive &= x > 0.0
            passive[cut[blocking]] = False
            x[~passive] = 0.0
        w = q - P @ x
    return x


def box_qp(P: np.ndarray, q: np.ndarray, upper: float, alpha0: np.ndarray) -> np.ndarray:
    """``argmin ½αᵀPα − qᵀα`` over ``0 ≤ α ≤ upper`` (``upper`` may be inf) for a PSD ``P``:
    the hinge column dual (``P = AᵀA``) and a box dual with κ > 0 (``P = AᵀA + (2κa/C)I``, the
    Huber hinge).

    k = 1 in closed form. Otherwise a primal active-set method (Nocedal & Wright §16.5) from
    the column's previous multipliers, exact up to round-off and finite: on the free set F,
    the Newton step solves ``P_FF p = −g_F`` (minimum-norm least squares, since P is singular
    when the neighbours' columns are parallel, which hinge solutions produce); if ``g_F`` has a
    component in the null space of ``P_FF`` that component is a zero-curvature descent
    direction, followed to the box. A step is cut at the first bound it meets, which joins the
    working set; at a stationary point of the face, the bound with the most negative
    multiplier leaves it, and when none is negative the KKT conditions hold.
    """
    k = P.shape[0]
    if k == 1:
        p = P[0, 0]
        if p <= 0:
            return np.array([upper if q[0] > 0 else 0.0])
        return np.array([min(max(q[0] / p, 0.0), upper)])
    try:  # most columns: every pair active and inside the box, one solve
        alpha = np.linalg.solve(P, q)
        if (np.all(alpha > 0.0) and np.all(alpha < upper)
                and np.abs(P @ alpha - q).max() <= 1e-12 * max(1.0, float(np.abs(q).max()))):
            return alpha
    except np.linalg.LinAlgError:
        pass
    alpha = np.clip(alpha0, 0.0, upper)
    fixed = (alpha <= 0.0) | (alpha >= upper)
    reach = upper if np.isfinite(upper) else max(1.0, float(alpha.max()))
    scale = max(1.0, float(np.abs(q).max()), float(np.diag(P).max()) * reach)
    tol = 1e-12 * scale
    at_face_minimum = False
    for _ in range(50 * k):
        g = P @ alpha - q
        free = np.flatnonzero(~fixed)
        step = None
        if free.size and not at_face_minimum:
            P_FF, g_F = P[np.ix_(free, free)], g[free]
            p = np.linalg.lstsq(P_FF, -g_F, rcond=None)[0]
            null_part = P_FF @ p + g_F
            newton = float(np.abs(null_part).max()) <= 1e-10 * max(1.0, float(np.abs(g_F).max()))
            if not newton:
                p = -null_part
            if float(np.abs(p).max()) > 1e-12 * max(1.0, reach):
                step = (free, p, newton)
        if step is not None:
            free, p, newton = step
            a_F = alpha[free]
            with np.errstate(divide="ignore", invalid="ignore"):
                limits = np.where(p < 0, -a_F / p, np.where(p > 0, (upper - a_F) / p, np.inf))
            block = int(np.argmin(limits))
            t = min(1.0, limits[block]) if newton else limits[block]
            alpha[free] = np.clip(a_F + t * p, 0.0, upper)
            if not newton or limits[block] <= 1.0:
                s = free[block]
                alpha[s] = 0.0 if p[block] < 0 else upper
                fixed[s] = True
            else:
                at_face_minimum = True  # the full Newton step minimized over this face
            continue
        at_face_minimum = False
        multiplier = np.where(alpha <= 0.0, g, -g)  # ≥ 0 at an optimum for the fixed bounds
        multiplier[~fixed] = np.inf
        worst = int(np.argmin(multiplier))
        if multiplier[worst] >= -tol:
            break
        fixed[worst] = False
    return alpha
