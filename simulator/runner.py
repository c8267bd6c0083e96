"""One simulation: a workload under a policy with an oracle's estimates, and its metrics.

Specs (``edf:objective=makespan``, ``noisy:0.5``, ``ncbi:hours=25``) become the objects this takes in
:mod:`scheduler.specs` (a policy) and :mod:`simulator.scenarios` (the rest).
"""

from __future__ import annotations

from scheduler.policy import Policy
from scheduler.run_times import Oracle
from simulator.metrics import Metrics, compute
from simulator.simulate import SimResult, simulate
from simulator.workload import Workload


def run(
    workload: Workload, policy: Policy, oracle: Oracle, *, label: str = "", threshold: float = 0.25
) -> tuple[SimResult, Metrics]:
    """Simulate ``workload`` under ``policy`` told ``oracle``'s estimates (``label`` names them in the result)."""
    result = simulate(workload, policy, oracle, estimates=label, threshold=threshold)
    return result, compute(result)
