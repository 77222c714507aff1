"""Numerical building blocks shared by several solvers (no problem family lives here).

* :mod:`.factor` — SPD factorizations reused across solves, fill prediction;
* :mod:`.block_cg` — block Jacobi-preconditioned CG for many right-hand sides;
* :mod:`.anderson` — safeguarded Anderson acceleration of fixed-point maps;
* :mod:`.cgls` — CGLS for weighted regularized least squares;
* :mod:`.line_search` — exact line searches on piecewise-quadratic margin losses;
* :mod:`.eigen` — extreme eigenvalues (LAPACK or Lanczos) of symmetric matrices.
"""
