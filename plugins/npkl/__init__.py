"""Fast solvers for NPKL: block coordinate descent on the factored boundary kernel."""
