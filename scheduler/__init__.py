"""The embedded scheduler (Brandstätter-Müller et al. 2011, section 3), as the service runs it; the simulator is
``simulator/``.

- ``state``: jobs, runs, machines, the plan; ``orders``: what policies decide; ``sites``: Santos-Neto et al. 2004's
  data servers; ``gridinfo``: Walker 2001's grid, application and performance models;
- ``run_times``: the one interface through which run times are seen (``Oracle``) and the abilities an oracle may
  add, and the table, noisy and blind oracles a simulation plugs in;
- ``policy``: the policy interface and its abilities; ``policies/``: the registry (``POLICIES``) and the policies,
  EDF with heterogeneous deferral, FCFS, backfilling, the mapping heuristics and the papers' schedulers (``batch/``,
  ``genetic/``);
- ``planner``, ``profiles``, ``nodes``, ``planning_times``: free-time heaps, slot profiles, node placement, and the
  planning times and their correction that backfilling plans with, shared by policies;
- ``events``: the event loop (``EventLoop``: new jobs, machines gained and lost, jobs ended and failed) that applies
  orders;
- ``specs``: the grammar of specs and the one parser of a policy's (``edf:objective=makespan``) into objects;
- ``store``, ``service``, ``leader``: the scheduler's state, orders and event inbox in the database, behind one lock;
- ``probe_executor``, ``probe_plan``, ``probing``: local probe runs and the probing plan.

Slurm, a site adapter, is the top-level ``slurm`` package (its bridge carries these orders out on Slurm).
"""
