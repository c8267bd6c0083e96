"""Planning a batch of independent tasks on related and CPU/GPU-style unrelated machines: every planner against the LP bound.

    python benchmarks/batch_planning.py                         # 3 seeds x 7 sizes x 2 kinds, ~15 min on 2 busy cores
    python benchmarks/batch_planning.py --seeds 1 --sizes 20x4,100x20 --milp 5
    python benchmarks/batch_planning.py --sweep 1,3,10 --kinds unrelated --sizes 1000x50   # batch-search per budget

Instances come from ``benchmarks.instances.batches.generate`` (related: one speed per
machine; unrelated: a quarter of the machines accelerators, per-program speed-ups 0.5x
to 20x). For each, the lower bound is ``scheduler.batch.relaxations.batch_lower_bound`` (the LP
relaxation with the Lenstra-Shmoys-Tardos restriction, the fastest run of each task and,
on related machines, the preemptive bound) and every planner's schedule is checked by
``benchmarks.instances.check.checked_makespan`` (each task once, on a machine that can run
it; makespan recomputed) before its ratio is recorded. Planners:

- the list heuristics of ``scheduler/policies/mapping.py`` on the time matrix (HEFT
  order by mean and by median, KPB 10 %, MCT, Min-Min, Max-Min, Sufferage), and the best
  of them per instance;
- the registered policies ``edf:objective=makespan`` (the project's best before) and
  ``edf:objective=makespan,rank=mean``: their first pass over the batch as a workload;
- ``batch-search``: ``scheduler.policies.batch.plan`` with ``--budget`` seconds;
- Phan, Ranganathan & Sion 2005's GA as the paper has it (100 generations of 50 children), and the strong
  GA (seeded, polished; stopped after ``--budget`` seconds);
- the MILP (HiGHS, ``--milp`` seconds) on sizes up to ``--milp-cells`` tasks x machines,
  started from batch-search's makespan: its optimum, where proven, shows how much of
  a ratio is the LP bound's own gap.

Times are wall seconds on this machine as it is (shared; the load average is printed).
``--sweep`` runs only batch-search, once per budget, and prints its ratio with the wall
and the CPU seconds it took (on a busy machine the search gets a fraction of a core).
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd
from scheduler_scale import load_note

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks.instances, when run as a script

from benchmarks.instances.batches import KINDS, Instance, as_workload, generate
from benchmarks.instances.check import checked_makespan
from scheduler.batch import exact
from scheduler.batch.relaxations import batch_lower_bound
from scheduler.genetic.ga import GaSettings, evolve
from scheduler.genetic.model import Problem
from scheduler.orders import OrderKind
from scheduler.policies.batch import HEURISTICS, heuristic_plans, plan
from scheduler.policies.genetic import evolve_strong
from scheduler.policy import Context, Event
from scheduler.specs import make_policy
from simulator import compare
from simulator.scenarios import parse_estimates
from simulator.simulate import backlog

RESULTS = Path(__file__).resolve().parent / "results"
SIZES = "20x4,50x5,100x10,100x20,200x20,500x25,1000x50"
POLICIES = ("edf:objective=makespan", "edf:objective=makespan,rank=mean")


def first_pass(spec: str, instance: Instance) -> np.ndarray:
    """The machine a registered policy's first pass gives each task of the batch (as a workload, true times as estimates)."""
    w = as_workload(instance)
    truth = parse_estimates("oracle").oracle(w)
    s = backlog(w, make_policy(spec), truth)
    orders = s.policy.schedule(Context(0.0, s.state, truth, Event.NEW_JOBS))
    assign = np.full(len(w.jobs), -1, dtype=np.intp)
    for order in orders:
        if order.kind in (OrderKind.START, OrderKind.DEFER):
            assign[int(order.job[1:])] = int(order.machine[1:])
    return assign


def problem_of(instance: Instance) -> Problem:
    """The batch in Phan, Ranganathan & Sion 2005's model: compute times only, no data objects."""
    tasks, machines = instance.times.shape
    return Problem(
        compute=instance.times,
        requires=np.zeros((tasks, 0), dtype=bool),
        size=np.zeros(0),
        source=np.zeros(0, dtype=np.intp),
        remote_to_store=np.ones((0, 0)),
        store_to_node=np.ones((0, machines)),
        remote_to_node=np.ones((0, machines)),
    )


def earlier_bound(instance: Instance) -> float:
    """The bound the project had before the LP: the longest fastest run, or all fastest work over all machines."""
    fastest = instance.times.min(axis=1)
    return float(max(fastest.max(), fastest.sum() / instance.times.shape[1]))


def timed(action: Callable[[], np.ndarray]) -> tuple[np.ndarray, float]:
    began = time.perf_counter()
    out = action()
    return out, time.perf_counter() - began


def run_instance(
    kind: str, tasks: int, machines: int, seed: int, budget: float, milp: float, milp_cells: int
) -> list[dict]:
    """One row per planner on one instance: makespan (checked), ratio to the bound, wall seconds."""
    instance = generate(kind, tasks, machines, seed)
    times, ready = instance.times, instance.ready
    bound, bound_seconds = timed(lambda: batch_lower_bound(times, ready))
    earlier = earlier_bound(instance)
    rows = []

    def record(planner: str, assign: np.ndarray, seconds: float, **extra) -> float:
        makespan = checked_makespan(times, ready, assign)
        rows.append(
            {
                "kind": kind,
                "tasks": tasks,
                "machines": machines,
                "seed": seed,
                "planner": planner,
                "makespan": makespan,
                "ratio": makespan / bound,
                "seconds": seconds,
                "bound": bound,
                "bound_seconds": bound_seconds,
                "earlier_bound": earlier,
                **extra,
            }
        )
        return makespan

    for name in HEURISTICS:
        assign, seconds = timed(lambda name=name: heuristic_plans(times, ready, [name])[name])
        record(name, assign, seconds)
    heuristics = [r for r in rows if r["planner"] in HEURISTICS]
    best = min(heuristics, key=lambda r: r["makespan"])
    rows.append(
        {
            **best,
            "planner": "best heuristic",
            "seconds": sum(r["seconds"] for r in heuristics),
            "source": best["planner"],
        }
    )
    for spec in POLICIES:
        assign, seconds = timed(lambda spec=spec: first_pass(spec, instance))
        record(spec, assign, seconds)
    rng = np.random.default_rng([seed, 7])
    found, seconds = timed(lambda: plan(times, ready, budget, rng=rng))
    searched = record("batch-search", found.assign, seconds, source=found.source)
    problem = problem_of(instance)
    paper, seconds = timed(lambda: evolve(problem, GaSettings(), np.random.default_rng([seed, 1])).best.nodes[0])
    record("ga (paper)", paper, seconds)
    settings = GaSettings(budget=0.8 * budget)  # the seeding heuristics and a last polish come on top
    strong, seconds = timed(
        lambda: evolve_strong(problem, settings, np.random.default_rng([seed, 2]), polish=budget / 10).best.nodes[0]
    )
    record("ga-strong", strong, seconds)
    if milp > 0 and tasks * machines <= milp_cells:
        solved = exact.solve(times, ready, milp, searched)
        optimum = solved.makespan if solved.optimal else np.nan
        proven = max(bound, solved.bound) if np.isfinite(solved.bound) else bound
        assign = (
            solved.assign if solved.assign is not None else found.assign
        )  # nothing better found: the cap's schedule
        record(
            "milp",
            assign,
            solved.seconds,
            optimal=solved.optimal,
            optimum_over_bound=optimum / bound,
            proven_over_bound=proven / bound,
        )
    return rows


def sweep(kinds: list[str], sizes: list[tuple[int, int]], seeds: int, budgets: list[float]) -> None:
    """batch-search's mean ratio to the bound per budget, with its wall and CPU seconds."""
    rows = []
    for kind in kinds:
        for tasks, machines in sizes:
            for seed in range(seeds):
                instance = generate(kind, tasks, machines, seed)
                bound = batch_lower_bound(instance.times, instance.ready)
                for budget in budgets:
                    wall, cpu = time.perf_counter(), time.process_time()
                    found = plan(instance.times, instance.ready, budget, rng=np.random.default_rng([seed, 7]))
                    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
                    ratio = checked_makespan(instance.times, instance.ready, found.assign) / bound
                    rows.append(
                        {
                            "kind": kind,
                            "size": f"{tasks}x{machines}",
                            "budget": budget,
                            "ratio": ratio,
                            "wall": wall,
                            "cpu": cpu,
                        }
                    )
    table = pd.DataFrame(rows).groupby(["kind", "size", "budget"]).mean()
    print(
        _markdown(
            table.set_axis([f"{k} {s} {b:g} s" for k, s, b in table.index]).rename_axis("kind, size, budget"), "{:.4f}"
        )
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--sizes", default=SIZES, help="tasks x machines, comma-separated")
    parser.add_argument("--kinds", default=",".join(KINDS))
    parser.add_argument("--budget", type=float, default=1.0, help="seconds for batch-search and for the strong GA")
    parser.add_argument("--milp", type=float, default=10.0, help="MILP time limit in seconds (0: no MILP)")
    parser.add_argument("--milp-cells", type=int, default=2000, help="largest tasks x machines given to the MILP")
    parser.add_argument("--out", default=str(RESULTS / "batch_planning-runs.csv"))
    parser.add_argument("--sweep", help="budgets in seconds, comma-separated: run only batch-search, once per budget")
    args = parser.parse_args()
    sizes = [tuple(int(x) for x in size.split("x")) for size in args.sizes.split(",")]
    print(f"# Batch planning against the LP bound ({load_note()})\n", flush=True)
    if args.sweep:
        sweep(args.kinds.split(","), sizes, args.seeds, [float(b) for b in args.sweep.split(",")])
        print(f"\n({load_note()} at the end)")
        return
    rows = []
    for kind in args.kinds.split(","):
        for tasks, machines in sizes:
            for seed in range(args.seeds):
                began = time.perf_counter()
                rows += run_instance(kind, tasks, machines, seed, args.budget, args.milp, args.milp_cells)
                print(f"  {kind} {tasks}x{machines} seed {seed}: {time.perf_counter() - began:.0f} s", flush=True)
    runs = pd.DataFrame(rows)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    runs.to_csv(args.out, index=False)
    report(runs)
    print(f"\nchart: {plot(runs, Path(args.out).with_suffix('.png'))}")
    print(f"\n({load_note()} at the end; runs in {args.out})")


def report(runs: pd.DataFrame) -> None:
    """Mean ratio to the bound per planner and size, per kind; then wall seconds; then the MILP's view of the bound."""
    order = list(dict.fromkeys(runs["planner"]))
    for kind, part in runs.groupby("kind", sort=False):
        part = part.assign(size=part["tasks"].astype(str) + "x" + part["machines"].astype(str))
        sizes = list(dict.fromkeys(part["size"]))
        ratio = part.pivot_table(index="planner", columns="size", values="ratio", aggfunc="mean").reindex(
            index=order, columns=sizes
        )
        ratio["mean"] = part.groupby("planner")["ratio"].mean()
        print(f"\n## {kind}: makespan / lower bound, mean over {part['seed'].nunique()} seeds\n")
        print(_markdown(ratio, "{:.3f}"))
        seconds = part.pivot_table(index="planner", columns="size", values="seconds", aggfunc="mean").reindex(
            index=order, columns=sizes
        )
        print(f"\n## {kind}: wall seconds per batch (mean)\n")
        print(_markdown(seconds, "{:.3f}"))
        searched = part[part["planner"] == "batch-search"]
        bounds = (
            searched.assign(earlier_over_lp=searched["earlier_bound"] / searched["bound"])
            .groupby("size", sort=False)
            .agg(
                earlier_over_lp=("earlier_over_lp", "mean"),
                lp_seconds=("bound_seconds", "mean"),
            )
        )
        print(f"\n## {kind}: the earlier bound over the LP bound, and the LP bound's wall seconds\n")
        print(_markdown(bounds, "{:.3f}"))
        exact_rows = part[part["planner"] == "milp"]
        if not exact_rows.empty:
            gap = exact_rows.groupby("size", sort=False).agg(
                proven_optimal=("optimal", "sum"),
                instances=("optimal", "size"),
                optimum_over_bound=("optimum_over_bound", "mean"),
                proven_over_bound=("proven_over_bound", "mean"),
            )
            print(
                f"\n## {kind}: the MILP's view of the bound (optimum / bound where proven; best proven lower bound / bound)\n"
            )
            print(_markdown(gap, "{:.4f}"))


PLOTTED = (
    "edf:objective=makespan",
    "heft",
    "best heuristic",
    "ga-strong",
    "batch-search",
    "milp",
)  # the paper's GA is off the scale


def plot(runs: pd.DataFrame, path: Path) -> Path:
    """Mean makespan / bound per size, one panel per kind, one line per planner of ``PLOTTED`` (the paper's GA, 1.05-2.9, left out)."""
    from matplotlib.figure import Figure

    kinds = list(dict.fromkeys(runs["kind"]))
    fig = Figure(figsize=(5.5 * len(kinds), 4.2))
    axes = fig.subplots(1, len(kinds), squeeze=False)[0]
    fig.subplots_adjust(wspace=0.3)
    for ax, kind in zip(axes, kinds, strict=True):
        part = runs[runs["kind"] == kind].assign(
            size=lambda f: f["tasks"].astype(str) + "x" + f["machines"].astype(str)
        )
        sizes = list(dict.fromkeys(part["size"]))
        for planner in PLOTTED:
            mean = part[part["planner"] == planner].groupby("size")["ratio"].mean().reindex(sizes)
            ax.plot(range(len(sizes)), mean.to_numpy(), marker="o", label=planner)
        ax.axhline(1.02, color="grey", linewidth=0.8, linestyle=":", label="1.02")
        ax.set_xticks(range(len(sizes)), sizes, rotation=30)
        ax.set_xlabel("tasks x machines")
        ax.set_ylabel("makespan / LP lower bound (mean of seeds)")
        ax.set_title(f"{kind} machines (paper's GA off the scale)")
    axes[-1].legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110, bbox_inches="tight")
    return path


def _markdown(frame: pd.DataFrame, fmt: str) -> str:
    """The frame as a markdown table, its index as the first column, floats in ``fmt``."""

    def cell(v: object) -> str:
        return "-" if pd.isna(v) else fmt.format(v) if isinstance(v, float) else str(v)

    rows = [[str(index), *map(cell, row)] for index, row in zip(frame.index, frame.itertuples(index=False))]
    return compare.markdown([str(frame.index.name or ""), *map(str, frame.columns)], rows)


if __name__ == "__main__":
    main()
