"""Fast solvers for ERE, LRL and sums of norms: IRLS with δ-continuation."""
