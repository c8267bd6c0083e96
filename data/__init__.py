"""Measuring and generating data: seeded input generators, the profiling wrapper, parameter sweeps, probing and
the acquisition rules that rank what to measure next.

It sits above the core (it stores what it measures through :mod:`predictor.store`) and below the production
scheduler, whose probe executor runs probes. The data files themselves (``catalog.yaml``, ``measurements/``,
``plans/``, ...) live beside this code in the same folder and are read through :data:`predictor.settings.BUNDLED_DATA`.
"""
