"""Workloads for the simulator: Brandstätter-Müller et al. 2011's figures, an NCBI-like trace, the bundled dataset, real cluster logs."""
