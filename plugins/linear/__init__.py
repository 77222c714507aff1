"""Fast solvers for Linear S3VMs: L2-SVM-MFN, TSVM with multiple switching, DA."""
