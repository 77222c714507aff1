"""Fast solvers for LapSVM / LapRLS: Newton, PCG with early stopping, the direct LapRLS solve."""
