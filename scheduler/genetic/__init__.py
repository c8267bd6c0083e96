"""Phan, Ranganathan & Sion 2005: GA co-scheduling of job order, job -> node and object -> store.

``model`` holds Table 1's lookup tables and Fig 6's evaluation (vectorised over a
population), ``ga`` the operators and the loop of Fig 2, ``baselines`` the greedy FIFO
schedulers of section 5.2 and ``window`` the bridge to the service's scheduler (``scheduler/policies/genetic.py``).
"""
