"""The embedded scheduler (seed 001, section 3) and its trace-driven simulator (seed 000).

- ``state``: jobs, runs, machines, the plan; ``orders``: what policies decide;
- ``oracles``: the one interface through which run times are seen (``Oracle``), and simulation oracles;
- ``policy``: the policy interface and registry; ``policies/``: EDF with heterogeneous deferral, FCFS;
- ``planner``: free-time heaps and slot profiles shared by policies;
- ``events``: the event loop (N, G, L, E, T) that applies orders;
- ``simulate``, ``metrics``, ``gantt``: the discrete-event simulator, schedule metrics, charts;
- ``workload``, ``workloads/``, ``estimates``, ``runner``: what a simulation replays and how it is set up;
- ``store``, ``service``: the scheduler's state, orders and event inbox in the database, behind one lock.
"""
