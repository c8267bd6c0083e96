"""Measuring and generating data, and bringing it in and out: seeded input generators, the profiling wrapper,
parameter sweeps, probing and the acquisition rules that rank what to measure next; the import of measurement files
and of Standard Workload Format logs, the CSV export and the runtime-versus-feature summary.

It sits above the core (it validates with :mod:`predictor.records` and stores through :mod:`predictor.store`) and
below the production scheduler, whose probe executor runs probes and whose Slurm follower ingests finished jobs. The
data files themselves (``catalog.yaml``, ``measurements/``, ``plans/``, ...) live beside this code in the same
folder and are read through :data:`predictor.settings.BUNDLED_DATA`.
"""
