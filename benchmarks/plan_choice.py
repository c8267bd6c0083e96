"""Backfilling with what production would serve (issue 39): the service, planned as it chose on the log's past, against
what sites run, on real logs.

    python benchmarks/plan_choice.py ../shared/data/traces/hpc2n.swf --nodes pooled --json benchmarks/results/plan_choice-hpc2n-pooled.json

For one log and one node mode: the planning configuration is chosen (:func:`simulator.plan_choice.choose`) on the
log's past only, the jobs between its 5 % and 30 % marks (three consecutive windows), starting from the site's own
rule (EASY++); then the whole log after its 30 % history is replayed with it beside EASY and EASY-SJBF with requests,
EASY++ (Tsafrir et al. 2007), an SC'15-style learned predictor (Gaussier et al. 2015, as implemented here: a peer, not
production), the service planned like EASY-SJBF, and perfect knowledge. The service's rows are production's code path:
its learning loop (forward validation, the rules among the candidates, the guard, online members, the retrain rule)
answering and learning as the simulated jobs end (the ``service`` source); where the choice keeps a rule, the row is
that rule's. Per row AVEbsld, the share of the EASY -> perfect gap closed, waits, the underestimated share,
predicted-start accuracy, CPU per finished job (the service's learning included) and wall time (``--parts easy``).
``--parts edf`` adds EDF rows (pooled only: EDF places no nodes) with the configuration chosen on the past by mean
completion, starting from the requests; ``--parts robustness`` a choice on the first half of the replay scored on the
second half, beside the choice made on that second half itself (in-sample).
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path
from typing import Any

from scheduler.specs import make_policy
from simulator.learning import LearningOracle
from simulator.metrics import Metrics
from simulator.plan_choice import Family, PlanningConfig, choose, past_windows
from simulator.runner import run
from simulator.scenarios import parse_estimates
from simulator.workload import Workload
from simulator.workloads import swf

EASY_PLUS = "EASY++ (last two, SJBF, Tsafrir correction)"
BASELINES = (  # (label, policy, estimates)
    ("EASY, requested", "easy", "requested"),
    ("EASY-SJBF, requested", "easy:order=sjbf", "requested"),
    (EASY_PLUS, "easy:order=sjbf", "last_two_mean"),
    ("SC'15-style learned, a peer (SJBF, doubling correction)", "easy:order=sjbf,correction=doubling", "sc15"),
    ("EASY-SJBF, perfect", "easy:order=sjbf", "oracle"),
)
WINDOWS = 3  # consecutive stretches of the past a choice is scored on
EDF_BASELINES = (
    ("FCFS, none", "fcfs", "none"),
    ("EDF, requested", "edf", "requested"),
    ("EDF, last two", "edf", "last_two_mean"),
)


def row(label: str, metrics: Metrics, cpu: float, wall: float, jobs: int, **extra: Any) -> dict[str, Any]:
    """One table row: the metrics, the cost per finished job, and what else the caller names."""
    return {
        "run": label,
        **metrics.as_dict(),
        "cpu_ms_per_job": 1e3 * cpu / max(jobs, 1),
        "wall_seconds": wall,
        **extra,
    }


def baseline(w: Workload, label: str, policy: str, estimates: str) -> dict[str, Any]:
    """A row of a fixed (policy, estimates) pair."""
    wall, cpu = time.perf_counter(), time.process_time()
    _, metrics = run(w, make_policy(policy), parse_estimates(estimates).oracle(w), label=estimates)
    return row(
        label,
        metrics,
        time.process_time() - cpu,
        time.perf_counter() - wall,
        len(w.jobs),
        policy=policy,
        estimates=estimates,
    )


SOURCE_SPEC = {"last-two": "last_two_mean", "requested": "requested"}


def service(w: Workload, label: str, family: Family, config: PlanningConfig) -> dict[str, Any]:
    """A row planned with ``config``: the service's own loop as the simulated jobs end (planning with its ``number``),
    or the site's rule it kept."""
    spec = f"service:plan={config.number}" if config.source == "service" else SOURCE_SPEC[config.source]
    wall, cpu = time.perf_counter(), time.process_time()
    oracle = parse_estimates(spec).oracle(w)
    _, metrics = run(w, make_policy(config.policy(family)), oracle, label=config.label(family))
    extra: dict[str, Any] = {}
    if isinstance(oracle, LearningOracle):
        extra = {"retrains": oracle.costs.retrains, "train_cpu_s": oracle.costs.train_cpu_s}
    return row(
        label,
        metrics,
        time.process_time() - cpu,
        time.perf_counter() - wall,
        len(w.jobs),
        policy=config.policy(family),
        config=config.label(family),
        estimates=spec,
        **extra,
    )


def gap_closed(rows: list[dict[str, Any]], label: str) -> float | None:
    """The share of the AVEbsld gap between EASY with requests and EASY-SJBF with perfect knowledge closed by ``label``."""
    by = {r["run"]: r["avebsld"] for r in rows}
    easy, perfect = by.get("EASY, requested"), by.get("EASY-SJBF, perfect")
    if easy is None or perfect is None or easy == perfect:
        return None
    return (easy - by[label]) / (easy - perfect)


def bench(args: argparse.Namespace) -> dict[str, Any]:
    """The parts asked for one log and node mode; written to ``--json`` after each part, beside the parts a file there
    already holds (so a part can be measured on its own later)."""
    out: dict[str, Any] = json.loads(args.json.read_text()) if args.json and args.json.exists() else {}
    out.update({"log": args.log.name, "nodes": args.nodes, "cores": os.cpu_count()})

    def save(key: str, value: Any) -> None:
        out[key] = value
        out["load"] = os.getloadavg()
        if args.json:
            args.json.write_text(json.dumps(out, indent=2, default=str))
        print(f"{args.log.stem} {args.nodes} {key} done", flush=True)

    if {"easy", "edf"} & set(args.parts):  # the robustness part reads neither
        past = past_windows(args.log, 0.05, 0.3, WINDOWS, args.nodes)
        w = swf.replay(args.log, nodes=args.nodes)
    if "easy" in args.parts:
        choice = choose(past, "easy", margin=args.margin)
        save(
            "choice",
            {
                **choice.record(),
                "windows": [window.notes for window in past],
                "scores": {c.label("easy"): s for c, s in sorted(choice.scores.items(), key=lambda kv: kv[1])},
            },
        )
        rows = [baseline(w, *b) for b in BASELINES]
        rows.append(service(w, "service, planned like EASY-SJBF (point, Tsafrir)", "easy", PlanningConfig("service")))
        rows.append(service(w, "service, its own choice on the past", "easy", choice.chosen))
        for r in rows:
            r["gap_closed"] = gap_closed(rows, r["run"])
        save("easy", {"notes": w.notes, "rows": rows})
    if "edf" in args.parts and args.nodes == "pooled":
        edf_choice = choose(past, "edf", objective="mean_completion", margin=args.margin)
        edf_rows = [baseline(w, *b) for b in EDF_BASELINES]
        edf_rows.append(service(w, "EDF, service point", "edf", PlanningConfig("service")))
        edf_rows.append(service(w, "EDF, service (its own choice on the past)", "edf", edf_choice.chosen))
        save("edf", {"choice": edf_choice.record(), "rows": edf_rows})
    if "robustness" in args.parts:
        second = swf.replay(args.log, train_fraction=0.65, nodes=args.nodes)
        on_first = choose(past_windows(args.log, 0.3, 0.65, WINDOWS, args.nodes), "easy", margin=args.margin)
        on_second = choose(past_windows(args.log, 0.65, 1.0, WINDOWS, args.nodes), "easy", margin=args.margin)
        plans = {
            "chosen on the first half": on_first.chosen,
            "chosen on the second half (in-sample)": on_second.chosen,
        }
        save(
            "robustness",
            {
                "second_half": second.notes,
                "chosen_on_first": on_first.record(),
                "chosen_on_second": on_second.record(),
                "scored_on_second": {k: service(second, k, "easy", c)["avebsld"] for k, c in plans.items()},
                "baselines_on_second": [baseline(second, *b) for b in BASELINES],
            },
        )
    return out


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.0f} %"


def markdown(result: dict[str, Any]) -> str:
    """The tables of one result file, as docs/results/plan-choice.md shows them."""
    lines = [
        f"**{result['log']}, {result['nodes']}** ({result['easy']['notes']}). Chosen on the past "
        f"({result['choice']['jobs']} jobs): *{result['choice']['chosen']}*; {result['choice']['reason']}.",
        "",
        "| run | AVEbsld | gap closed | mean wait (s) | past request | underestimated | predicted start: median error (s) / within 10 min | CPU per job (ms) | wall (s) |",
        "| --- | ---: | ---: | ---: | ---: | ---: | --- | ---: | ---: |",
    ]
    for r in result["easy"]["rows"]:
        start = f"{r['start_error_median']:.0f} / {_pct(r['start_within_10min'])} ({r['predicted_starts']} head jobs)"
        lines.append(
            f"| {r['run']} | {r['avebsld']:.1f} | {_pct(r['gap_closed'])} | {r['mean_waiting']:.0f} | {r['over_request']} | "
            f"{_pct(r['underestimated'])} | {start} | {r['cpu_ms_per_job']:.2f} | {r['wall_seconds']:.0f} |"
        )
    if "edf" in result:
        rows = result["edf"]["rows"]
        fcfs = next(r["mean_completion"] for r in rows if r["run"].startswith("FCFS"))
        lines += [
            "",
            f"EDF (number chosen on the past by mean completion: *{result['edf']['choice']['chosen']}*; "
            f"{result['edf']['choice']['reason']}):",
            "",
            "| run | mean completion (s) | vs FCFS | mean wait (s) | underestimated | CPU per job (ms) |",
            "| --- | ---: | ---: | ---: | ---: | ---: |",
        ]
        for r in rows:
            lines.append(
                f"| {r['run']} | {r['mean_completion']:.0f} | {100 * (r['mean_completion'] / fcfs - 1):+.1f} % | "
                f"{r['mean_waiting']:.0f} | {_pct(r['underestimated'])} | {r['cpu_ms_per_job']:.2f} |"
            )
    if "robustness" in result:
        rob = result["robustness"]
        lines += [
            "",
            "Robustness (AVEbsld on the second half of the replay):",
            "",
            "| plan | AVEbsld |",
            "| --- | ---: |",
        ]
        lines += [f"| service, {k} | {v:.1f} |" for k, v in rob["scored_on_second"].items()]
        lines += [f"| {b['run']} | {b['avebsld']:.1f} |" for b in rob["baselines_on_second"]]
        lines += [
            "",
            f"Chosen on the first half: *{rob['chosen_on_first']['chosen']}*; on the second: "
            f"*{rob['chosen_on_second']['chosen']}*.",
        ]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("log", type=Path, help="An SWF log, or with --markdown a result file this script wrote.")
    parser.add_argument(
        "--markdown", action="store_true", help="Print the tables of a result file instead of measuring."
    )
    parser.add_argument("--nodes", choices=("pooled", "packed"), default="pooled")
    parser.add_argument(
        "--margin", type=float, default=0.02, help="The guard's margin: a fraction of the serving score."
    )
    parser.add_argument(
        "--parts",
        nargs="+",
        choices=("easy", "edf", "robustness"),
        default=["easy"],
        help="easy: the choice and the EASY rows; edf: the EDF rows (pooled only); robustness: the "
        "first-half / second-half choice.",
    )
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    if args.markdown:
        print(markdown(json.loads(args.log.read_text())))
        return
    bench(args)


if __name__ == "__main__":
    main()
