"""The embedded scheduler (seed 001, section 3) and its trace-driven simulator (seed 000).

- ``state``: jobs, runs, machines, the plan; ``orders``: what policies decide;
- ``oracles``: the one interface through which run times are seen (``Oracle``), and simulation oracles;
- ``policy``: the policy interface; ``policies/``: the registry (``POLICIES``) and the policies, EDF with
  heterogeneous deferral, FCFS, the mapping heuristics and the seeds' schedulers;
- ``planner``: free-time heaps and slot profiles shared by policies;
- ``events``: the event loop (N, G, L, E, T) that applies orders;
- ``simulate``, ``metrics``, ``gantt``: the discrete-event simulator, schedule metrics, charts;
- ``workload``, ``workloads/``, ``estimates``, ``runner``: what a simulation replays and how it is set up;
- ``specs``: the one parser of specs (``edf:objective=makespan``, ``noisy:0.5``, ``ncbi:hours=25``) into objects;
- ``store``, ``service``: the scheduler's state, orders and event inbox in the database, behind one lock.
"""
