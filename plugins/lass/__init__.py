"""Fast solvers for LASS: ADMM with a cached factorization or block CG."""
