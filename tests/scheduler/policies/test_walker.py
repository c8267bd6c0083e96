"""Walker 2001: grid model, RAND/MP/MPL placements by hand, and the Npacinet workload."""

from __future__ import annotations

import pytest

from predictor.catalog import load_catalog
from predictor.settings import BUNDLED_DATA
from scheduler.gridinfo import (
    GRID_ATTRIBUTES,
    Application,
    GridNode,
    levels,
    split_path,
    topology,
)
from scheduler.policies import applicable_policies
from scheduler.specs import make_policy
from scheduler.state import Job
from simulator.scenarios import parse_estimates, parse_workload
from simulator.simulate import SimResult, simulate
from simulator.workload import Cluster, JobSpec, MachineSpec, PlatformSpec, Workload
from simulator.workloads import walker_grid

Node = tuple[str, str, str, float, int, float, str]  # id, arch, os, MHz, processors, load, path


def grid_workload(nodes: list[Node], apps: list[Application], seconds: float = 100.0) -> Workload:
    """Every machine its own platform; every task of every app takes ``seconds`` on every machine."""
    machines = [
        MachineSpec(name, name, procs, GridNode(arch, os, mhz, procs, load, split_path(path)).attributes())
        for name, arch, os, mhz, procs, load, path in nodes
    ]
    specs = [
        JobSpec(
            f"{app.job}.t{t}", 0.0, "suite", {m.id: seconds for m in machines}, params={"grid": app.params(), "task": t}
        )
        for app in apps
        for t in range(app.tasks)
    ]
    cluster = Cluster({m.id: PlatformSpec(m.id) for m in machines}, machines)
    return Workload("grid", specs, cluster, provides=frozenset({GRID_ATTRIBUTES}))


def run(w: Workload, policy: str) -> SimResult:
    return simulate(w, make_policy(policy), parse_estimates("oracle").oracle(w))


def placed(result: SimResult) -> dict[str, tuple[str, float, float]]:
    """Task -> (machine, start, end) of its finished run."""
    return {s.job: (s.machine, s.start, s.end) for s in result.segments if s.outcome == "done"}


def app(name: str, tasks: int, ratio: float = 0.0, binaries: tuple[str, ...] = ("x86/linux",), **extra) -> Application:
    return Application(name, tasks, frozenset(binaries), ratio, **extra)


def test_levels_and_topology_count_network_levels_up_to_the_shared_cluster():
    a = split_path("uva/centurion/sw0/c001")
    assert levels(a, a) == 0
    assert levels(a, split_path("uva/centurion/sw0/c002")) == 1
    assert levels(a, split_path("uva/centurion/sw3/c050")) == 2
    assert levels(a, split_path("uva/alphas/sw0/alpha001")) == 3
    assert levels(a, split_path("umn/giganet/sw0/umn000")) == 4
    assert topology(a, split_path("uva/alphas/sw0/alpha001")) == 1000.0
    with pytest.raises(ValueError, match="topology path"):
        split_path("uva//c001")


def test_application_model_round_trips_and_rejects_bad_input():
    model = app("g", 3, 0.25, ("x86/linux", "alpha/linux"), asf={"alpha": 0.25}, origin=("uva", "c", "n"))
    assert Application.of(Job("t", "suite", 0.0, params={"grid": model.params()})) == model
    with pytest.raises(ValueError, match="arch/os"):
        app("g", 1, binaries=("x86-linux",))
    with pytest.raises(ValueError, match="ratio"):
        app("g", 1, ratio=1.5)
    with pytest.raises(ValueError, match="no grid application model"):
        Application.of(Job("t", "suite", 0.0))


def test_eligibility_filters_by_architecture_and_os_and_an_unrunnable_task_waits():
    # the wrong-arch and wrong-OS machines are far faster, so MP would take them if it did not filter
    nodes = [
        ("X", "x86", "linux", 400.0, 1, 0.0, "s/c/n1"),
        ("ALPHA", "alpha", "linux", 4000.0, 1, 0.0, "s/c/n2"),
        ("SOL", "x86", "solaris", 4000.0, 1, 0.0, "s/c/n3"),
    ]
    w = grid_workload(nodes, [app("g", 2), app("nowhere", 1, binaries=("sparc/solaris",))])
    result = run(w, "mp")
    # static schedule: both tasks go to X, the second waits there for the first (0-100, 100-200)
    assert placed(result) == {"g.t0": ("X", 0.0, 100.0), "g.t1": ("X", 100.0, 200.0)}
    status = {j.id: j.status for j in result.jobs}
    assert status["nowhere.t0"] == "pending"  # like fcfs/edf with no fitting machine: it waits
    assert walker_grid.job_completions(w, result) == {"g": 200.0, "nowhere": None}


def test_mp_takes_the_machine_of_highest_fitness_and_counts_each_task_in_its_load():
    nodes = [
        ("P", "x86", "linux", 500.0, 2, 1.0, "s/c/p"),  # 500 x 2 / (1 + 1) x 1.0 = 500
        ("Q", "alpha", "linux", 800.0, 1, 0.5, "s/c/q"),  # 800 x 1 / 1.5 x 0.5 = 266.7
        ("R", "x86", "linux", 300.0, 4, 1.0, "s/c/r"),  # 300 x 4 / (1 + 1) x 1.0 = 600
    ]
    job = app("g", 4, binaries=("x86/linux", "alpha/linux"), asf={"alpha": 0.5})
    # t0 -> R (600); R at load 2: 400 < P 500, t1 -> P; P at load 2: 333 < R 400, t2 -> R;
    # R at load 3: 300 < P 333, t3 -> P. Q never wins. All four fit at once (R has 4, P 2 processors).
    got = {task: machine for task, (machine, _, _) in placed(run(grid_workload(nodes, [job]), "mp")).items()}
    assert got == {"g.t0": "R", "g.t1": "P", "g.t2": "R", "g.t3": "P"}


MPL_NODES: list[Node] = [
    ("NEAR1", "x86", "linux", 400.0, 1, 0.0, "a/c1/n1"),
    ("NEAR2", "x86", "linux", 400.0, 1, 0.0, "a/c1/n2"),
    ("FAR", "x86", "linux", 1000.0, 1, 0.0, "b/c9/n9"),
]


def test_mpl_prefers_the_nearer_machine_when_latency_outweighs_performance():
    origin = ("a", "c1", "n0")
    # ratio 0.1: NEAR is 1 level from the origin: 400 / (1 + 0.1 x 10) = 200;
    # FAR is 3 levels away: 1000 / (1 + 0.1 x 1000) = 9.9. MP sees only 1000 vs 400.
    chatty = grid_workload(MPL_NODES, [app("g", 1, 0.1, origin=origin)])
    assert placed(run(chatty, "mpl"))["g.t0"][0] == "NEAR1"
    assert placed(run(chatty, "mp"))["g.t0"][0] == "FAR"
    # ratio 0: no latency, MPL is MP
    quiet = grid_workload(MPL_NODES, [app("g", 1, 0.0, origin=origin)])
    assert placed(run(quiet, "mpl"))["g.t0"][0] == "FAR"


def test_mpl_thesis_rule_uses_the_temporary_assignment_then_the_placed_tasks():
    job = app("g", 2, 0.1)  # no origin: anchors are the job's own tasks
    # t0, nothing placed: the other task goes to the closest processor: for NEAR1 that is NEAR2 (10),
    # latency 0.1 x 10 = 1, 400 / 2 = 200; for FAR it is 3 levels away: 1000 / (1 + 100) = 9.9 -> NEAR1.
    # t1: NEAR1 at load 1 and 1 from itself: 200 / 1.1 = 181.8; NEAR2: 400 / (1 + 0.1 x 10) = 200 -> NEAR2.
    w = grid_workload(MPL_NODES, [job])
    assert placed(run(w, "mpl:anchor=peers")) == {"g.t0": ("NEAR1", 0.0, 100.0), "g.t1": ("NEAR2", 0.0, 100.0)}
    # MP: FAR (1000), then FAR at load 1 (500) beats NEAR (400): the second task waits for FAR
    assert placed(run(w, "mp")) == {"g.t0": ("FAR", 0.0, 100.0), "g.t1": ("FAR", 100.0, 200.0)}
    with pytest.raises(ValueError, match="anchor"):
        make_policy("mpl:anchor=nearest")


def test_rand_is_seeded_deterministic_and_only_picks_eligible_machines():
    nodes = [(f"X{i}", "x86", "linux", 400.0, 1, 0.0, f"s/c/x{i}") for i in range(4)]
    nodes.append(("SGI", "mips", "irix", 4000.0, 1, 0.0, "s/c/sgi"))
    w = grid_workload(nodes, [app("g", 20)], seconds=10.0)

    def machines(policy: str) -> list[str]:
        got = placed(run(w, policy))
        return [got[f"g.t{t}"][0] for t in range(20)]

    first = machines("rand:seed=3")
    assert first == machines("rand:seed=3")
    assert first != machines("rand:seed=4")  # 20 draws from 4 machines alike by chance: 4**-20
    assert set(first) <= {"X0", "X1", "X2", "X3"}


def test_policies_need_grid_attributes_and_say_so_when_a_machine_lacks_them():
    assert {"rand", "mp", "mpl"} <= set(applicable_policies({GRID_ATTRIBUTES}))
    assert not {"rand", "mp", "mpl"} & set(applicable_policies(set()))
    bare = Cluster({"x": PlatformSpec("x")}, [MachineSpec("X", "x")])
    w = Workload("bare", [JobSpec("t", 0.0, "suite", {"x": 1.0}, params={"grid": app("g", 1).params()})], bare)
    with pytest.raises(ValueError, match="machine X has no grid attribute"):
        run(w, "mp")


def test_true_task_time_by_hand():
    a = app("g", 1, 0.25, origin=split_path("uva/centurion/sw0/c000"))
    umn = GridNode("x86", "linux", 533.0, 2, 0.0, split_path("umn/giganet/sw0/umn000"))
    # share min(1, 2 / (2 + 2)) = 0.5; compute 600 / 1.25 x 533 / (533 x 1.0 x 0.5) = 960;
    # 4 levels from the data: 600 x 0.25 / 1.25 x 30 = 3600
    assert walker_grid.task_seconds_on(a, umn, 1.0, 2.0, 600.0) == pytest.approx(4560.0)


def test_npacinet_workload_shape_and_runner_spec():
    one, _ = walker_grid.grid(net=1)
    two, _ = walker_grid.grid(net=2)
    assert (len(one.machines), len(two.machines)) == (94, 164)
    nodes = [GridNode.parse(m.attributes, m.id) for m in two.machines]
    assert {n.platform for n in nodes} == {"x86/linux", "alpha/linux", "mips/irix"}
    assert {len(n.path) for n in nodes} == {4}
    w = parse_workload("walker:net=1,jobs=3", load_catalog(BUNDLED_DATA / "catalog.yaml")).make(2)
    assert w.provides == {GRID_ATTRIBUTES} and len(w.cluster.machines) == 94
    sizes = {s.params["grid"]["job"]: s.params["grid"]["tasks"] for s in w.jobs}
    assert len(sizes) == 3 and all(5 <= k <= 40 for k in sizes.values()) and len(w.jobs) == sum(sizes.values())
    result = run(w, "mpl")
    assert all(c is not None for c in walker_grid.job_completions(w, result).values())
    with pytest.raises(ValueError, match="net must be"):
        walker_grid.grid(net=3)
