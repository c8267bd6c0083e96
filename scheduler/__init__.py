"""The embedded scheduler (seed 001, section 3), as the service runs it; the simulator is ``simulator/``.

- ``state``: jobs, runs, machines, the plan; ``orders``: what policies decide; ``sites``: seed 003's data servers;
  ``gridinfo``: seed 002's grid, application and performance models;
- ``oracles``: the one interface through which run times are seen (``Oracle``), and the table, noisy and blind
  oracles a simulation plugs in;
- ``policy``: the policy interface; ``policies/``: the registry (``POLICIES``) and the policies, EDF with
  heterogeneous deferral, FCFS, the mapping heuristics and the seeds' schedulers (``batch/``, ``genetic/``);
- ``planner``, ``profiles``, ``nodes``, ``backfill``: free-time heaps, slot profiles, node placement and backfilling
  shared by policies;
- ``events``: the event loop (N, G, L, E, T) that applies orders;
- ``specs``: the grammar of specs and the one parser of a policy's (``edf:objective=makespan``) into objects;
- ``store``, ``service``, ``leader``: the scheduler's state, orders and event inbox in the database, behind one lock;
- ``slurm_bridge``, ``probe_executor``, ``probe_plan``, ``probing``: Slurm, local probe runs and the probing plan.
"""
