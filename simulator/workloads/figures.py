"""The small scenarios of Brandstätter-Müller et al. 2011's Figs 11-14, in time units of one second.

The seed draws these schedules without numbers for Figs 12-14; the run times here
are the smallest that reproduce what its text says each figure shows.
"""

from __future__ import annotations

from simulator.workload import Cluster, JobSpec, MachineSpec, PlatformSpec, Workload

_TWO_PLATFORMS = Cluster(
    {"r1": PlatformSpec("r1", 300.0), "r2": PlatformSpec("r2", 100.0)},
    [MachineSpec("R1", "r1"), MachineSpec("R2", "r2")],
)


def _task(name: str, submit: float, times: dict[str, float], **extra) -> JobSpec:
    return JobSpec(id=name, submit=submit, algorithm="task", true_times=times, params={"task": name}, **extra)


def fig11() -> Workload:
    """Five tasks of 2, 3, 3, 2, 4 units on three identical nodes: FCFS ends at 7, knowing run times at 5."""
    cluster = Cluster({"node": PlatformSpec("node", 100.0)}, [MachineSpec(f"N{i}", "node") for i in (1, 2, 3)])
    jobs = [_task(f"T{i}", 0.0, {"node": t}) for i, t in enumerate((2.0, 3.0, 3.0, 2.0, 4.0), start=1)]
    return Workload("fig11", jobs, cluster, notes="Brandstätter-Müller et al. 2011, Fig 11")


def fig12() -> Workload:
    """T2 is fastest on R1, busy with T1: waiting for R1 (done at 4) beats the free slow R2 (done at 7)."""
    jobs = [_task("T1", 0.0, {"r1": 2.0, "r2": 6.0}), _task("T2", 1.0, {"r1": 2.0, "r2": 6.0})]
    return Workload("fig12", jobs, _TWO_PLATFORMS, notes="Brandstätter-Müller et al. 2011, Fig 12")


def fig13() -> Workload:
    """Tasks arriving over time on two platforms: FCFS 8, FCFS on each task's fastest platform only 9, deferral 7."""
    jobs = [
        _task("T1", 0.0, {"r1": 3.0, "r2": 6.0}),
        _task("T2", 0.0, {"r1": 2.0, "r2": 3.0}),
        _task("T3", 1.0, {"r1": 2.0, "r2": 4.0}),
        _task("T4", 2.0, {"r1": 2.0, "r2": 5.0}),
    ]
    return Workload("fig13", jobs, _TWO_PLATFORMS, notes="Brandstätter-Müller et al. 2011, Fig 13")


def fig14() -> Workload:
    """High-priority T3 runs only on R2, busy with T2: cancelling T2 and restarting it on R1 ends at 6 instead of 7."""
    jobs = [
        _task("T1", 0.0, {"r1": 3.0, "r2": 6.0}),
        _task("T2", 0.0, {"r1": 3.0, "r2": 4.0}),
        _task("T3", 1.0, {"r2": 3.0}, priority=1),
    ]
    return Workload("fig14", jobs, _TWO_PLATFORMS, notes="Brandstätter-Müller et al. 2011, Fig 14")


FIGURES = {"fig11": fig11, "fig12": fig12, "fig13": fig13, "fig14": fig14}
