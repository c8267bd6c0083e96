"""Workloads for the simulator: seed 001's figures, an NCBI-like trace, the bundled dataset, real cluster logs."""
