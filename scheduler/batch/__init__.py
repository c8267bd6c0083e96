"""A batch of independent one-machine jobs on unrelated machines (R||Cmax), planned close to optimal.

A batch is a time matrix ``times`` (jobs x machines, INF where a job cannot run) and
each machine's ``ready`` time; a schedule is an assignment (a machine per job) and its
makespan is the latest ``ready + load`` over the machines. ``search`` improves an
assignment by iterated local search, ``exact`` solves small batches as a MILP (HiGHS) and
``relaxations`` bounds a batch's makespan from below. The benchmark's batches and its
independent check of a schedule live in ``benchmarks/instances/``. The heuristics that seed
the search are the batch planners of ``scheduler/policies/mapping.py``.
"""
