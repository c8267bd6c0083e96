"""A batch of independent one-machine jobs on unrelated machines (R||Cmax), planned close to optimal.

A batch is a time matrix ``times`` (jobs x machines, INF where a job cannot run) and
each machine's ``ready`` time; a schedule is an assignment (a machine per job) and its
makespan is the latest ``ready + load`` over the machines. ``search`` improves an
assignment by iterated local search, ``exact`` solves small batches as a MILP (HiGHS),
``instances`` draws related and CPU/GPU-style unrelated batches for the benchmark and
``check`` validates a schedule independently of all of them. The heuristics that seed
the search are the batch planners of ``scheduler/policies/mapping.py``.
"""
