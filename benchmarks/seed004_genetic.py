"""Phan, Ranganathan & Sion 2005: GA co-scheduling vs the four greedy baselines, in the paper's own model.

    python benchmarks/seed004_genetic.py                      # the paper's 3 instances x 10 runs, 20 and 5 nodes, ~10 min
    python benchmarks/seed004_genetic.py --runs 3             # 3 runs each: ~9 min on 2 busy cores (the docs' table)
    python benchmarks/seed004_genetic.py --nodes 20 --runs 3 --generations 300 --mutation 0.2

``quality`` (Figs 7 and 8): each instance is a random batch drawn as in section 5.1 /
Table 2 (``benchmarks.instances.coscheduling``: 100 jobs, 50 Zipf-popular objects of
50-1500 MB at 20 remote stores, wide-area 700-1300 kbps, LAN 7000-13000 kbps, compute
300 s per GB); each algorithm runs ``--runs`` times on it with its own seed and every
schedule is timed by the evaluation function of Fig 6, as in the paper. Algorithms:
the GA with all three strings evolving, the GA without replication ("GA rep-none"),
the four greedy FIFO baselines, and three extras beyond the paper: the GA with reversal
mutation (``--mutation``), jobs-LL with each object replicated to the local store
with the fastest link from its remote store (jobs-ll-rep-fast), and the strong GA
(``scheduler.policies.genetic.evolve_strong``: first population seeded with HEFT's and
KPB's node assignments and jobs-ll-rep-fast, the best parent polished by a descent over
node moves every generation). ``vs best greedy`` is how much shorter a makespan is than the mean
makespan of the best greedy baseline on the same instance (the paper: GA 22% shorter
than jobs-LL rep-rand and 47% shorter than jobs-rand rep-none at 20 nodes; about even
at 5 nodes). ``last_gain_generation``: the last generation that improved the GA's best.

``speed``: one generation of 50 children over 100 jobs: the vectorised evaluation, the
same evaluation by a plain per-chromosome loop (``evaluate_reference``), breeding, and a
whole 100-generation GA run, measured side by side (CPU and wall time; best of
``--repeat``).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks.instances, when run as a script

from benchmarks.instances.coscheduling import Setup, generate
from scheduler.genetic.baselines import NAMES, greedy
from scheduler.genetic.ga import Evolution, GaSettings, breed, evolve, random_population
from scheduler.genetic.model import Problem, evaluate, evaluate_reference
from scheduler.policies.genetic import evolve_strong
from simulator import compare

RESULTS = Path(__file__).resolve().parent / "results"
FAST = "jobs-ll-rep-fast (extra)"  # not the paper's: objects to the store with the fastest wide-area link


def quality(instances: int, runs: int, nodes: list[int], jobs: int, generations: int, mutation: float) -> pd.DataFrame:
    """One row per (nodes, instance, algorithm, run): the makespan of Fig 6's evaluation."""
    variants: dict[str, Callable[[Problem, np.random.Generator], Evolution]] = {
        "GA all varying": partial(_plain, GaSettings(generations=generations)),
        "GA rep-none": partial(_plain, GaSettings(generations=generations, replicate=False)),
        "GA strong (extra)": partial(evolve_strong, settings=GaSettings(generations=generations)),
    }
    if mutation > 0:
        variants[f"GA mutation {mutation:g} (extra)"] = partial(
            _plain, GaSettings(generations=generations, mutation=mutation)
        )
    rows = []
    for n in nodes:
        for instance in range(instances):
            problem = generate(Setup(jobs=jobs, nodes=n, stores=n), instance)
            for name, run_ga in variants.items():
                for run in range(runs):
                    result = run_ga(problem, rng=np.random.default_rng([instance, run, 1]))
                    last = int(np.flatnonzero(np.diff(result.history))[-1]) + 1 if np.diff(result.history).any() else 0
                    rows.append(
                        {
                            "policy": name,
                            "estimates": f"{n} nodes",
                            "seed": instance,
                            "run": run,
                            "makespan": result.makespan,
                            "last_gain_generation": last,
                        }
                    )
            for name in (*NAMES, FAST):
                _, dispatch, _, rep = name.split(" ")[0].split("-")
                plan = greedy(problem, dispatch, rep, np.random.default_rng([instance, 0, 2]), runs=runs)
                rows += [
                    {"policy": name, "estimates": f"{n} nodes", "seed": instance, "run": r, "makespan": m}
                    for r, m in enumerate(plan.makespan)
                ]
    out = pd.DataFrame(rows)
    greedy_means = out[out["policy"].isin(NAMES)].groupby(["estimates", "seed", "policy"])["makespan"].mean()
    best = greedy_means.groupby(["estimates", "seed"]).min()
    worst = greedy_means.groupby(["estimates", "seed"]).max()
    keys = pd.MultiIndex.from_frame(out[["estimates", "seed"]])
    out["vs_best_greedy_pct"] = 100.0 * (1.0 - out["makespan"] / best.reindex(keys).to_numpy())
    out["vs_worst_greedy_pct"] = 100.0 * (1.0 - out["makespan"] / worst.reindex(keys).to_numpy())
    return out


def _plain(settings: GaSettings, problem: Problem, rng: np.random.Generator) -> Evolution:
    """The paper's GA with ``settings``."""
    return evolve(problem, settings, rng)


def _best_of(repeat: int, action: Callable[[], object]) -> tuple[float, float]:
    """(CPU seconds, wall seconds) of ``action()``, the best of ``repeat`` tries each."""
    cpu, wall = np.inf, np.inf
    for _ in range(repeat):
        c0, w0 = time.process_time(), time.perf_counter()
        action()
        cpu, wall = min(cpu, time.process_time() - c0), min(wall, time.perf_counter() - w0)
    return cpu, wall


def speed(jobs: int, children: int, repeat: int) -> list[list[str]]:
    """Rows of the timing table: ms per generation step, and the loop / vectorised ratio."""
    problem = generate(Setup(jobs=jobs), 0)
    rng = np.random.default_rng(0)
    population = random_population(problem, children, rng)
    parents = population.take(np.arange(10))
    settings = GaSettings(children=children)

    def loop() -> list:
        return [evaluate_reference(problem, *(s[i] for s in population)) for i in range(children)]

    timings = {
        "evaluate (Fig 6), vectorised": _best_of(repeat, lambda: evaluate(problem, population)),
        "evaluate (Fig 6), plain loop per chromosome": _best_of(repeat, loop),
        "breed (crossover of 3 strings)": _best_of(repeat, lambda: breed(parents, children, rng)),
        f"whole GA run / {settings.generations} generations": tuple(
            t / settings.generations for t in _best_of(1, lambda: evolve(problem, settings, rng))
        ),
    }
    vector = timings["evaluate (Fig 6), vectorised"]
    size = f"{children} x {jobs} jobs"
    return [
        [name, size, f"{1000 * cpu:.2f}", f"{1000 * wall:.2f}", f"{cpu / vector[0]:.1f}"]
        for name, (cpu, wall) in timings.items()
    ]


def plot(runs: pd.DataFrame, path: Path) -> Path:
    """Bars of mean makespan per algorithm, grouped by cluster size (like Figs 7 and 8)."""
    return compare.plot(
        compare.summarize(runs.drop(columns=["run"])),
        "makespan",
        path,
        "Seed 004: makespan (s) by algorithm, Fig 6 evaluation",
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--instances", type=int, default=3, help="random initialisation sets (the paper: 3)")
    parser.add_argument("--runs", type=int, default=10, help="runs per algorithm and instance (the paper: 10)")
    parser.add_argument(
        "--nodes", default="20,5", help="compute nodes (= local stores) per experiment: Fig 7 20, Fig 8 5"
    )
    parser.add_argument("--jobs", type=int, default=100)
    parser.add_argument("--generations", type=int, default=100)
    parser.add_argument(
        "--mutation", type=float, default=0.5, help="rate of the extra GA-with-mutation variant (0: none)"
    )
    parser.add_argument("--repeat", type=int, default=5, help="best of this many timings")
    args = parser.parse_args()
    one, five, _ = os.getloadavg()
    print(f"# Seed 004: GA co-scheduling vs greedy ({os.cpu_count()} cores, load average {one:.1f} / {five:.1f})\n")
    began = time.perf_counter()
    runs = quality(
        args.instances, args.runs, [int(n) for n in args.nodes.split(",")], args.jobs, args.generations, args.mutation
    )
    summary = compare.summarize(runs.drop(columns=["run"]))
    summary.loc[summary["mean"].abs() < 1e-9, "mean"] = 0.0  # a baseline against itself: 0, not a rounding residue
    header, rows = compare.table(
        summary, ["makespan", "vs_best_greedy_pct", "vs_worst_greedy_pct", "last_gain_generation"], "makespan"
    )
    header[0] = "cluster"
    print(
        f"## Makespan (s), Fig 6 evaluation: mean ± 95% CI over {args.instances} instances x {args.runs} runs, {args.jobs} jobs\n"
    )
    print(compare.markdown(header, rows))
    ga = runs[runs["policy"] == "GA all varying"].groupby(["estimates", "seed"])["vs_best_greedy_pct"].mean()
    for cluster, per_instance in ga.groupby(level=0):
        print(
            f"\nGA all varying vs best greedy, {cluster}: {', '.join(f'{v:.0f}%' for v in per_instance)} shorter per instance"
        )
    RESULTS.mkdir(parents=True, exist_ok=True)
    runs.to_csv(RESULTS / "seed004_genetic-runs.csv", index=False)
    png = plot(runs, RESULTS / "seed004_genetic.png")
    print(f"\n({time.perf_counter() - began:.0f} s; runs in {RESULTS / 'seed004_genetic-runs.csv'}, chart {png})\n")
    print(
        f"## One generation over {args.jobs} jobs: ms (best of {args.repeat}); ratio = CPU time / vectorised evaluation's\n"
    )
    print(
        compare.markdown(
            ["step", "children x jobs", "CPU ms", "wall ms", "CPU / vectorised"], speed(args.jobs, 50, args.repeat)
        )
    )


if __name__ == "__main__":
    main()
