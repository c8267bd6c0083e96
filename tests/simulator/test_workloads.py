"""Workloads: the NCBI-like generator against Kontothanassis & Goddeau 2004's numbers, the bundled dataset, the real cluster logs."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

from predictor.catalog import load_catalog
from predictor.settings import BUNDLED_DATA
from scheduler.specs import make_policy
from simulator.metrics import compute
from simulator.scenarios import parse_estimates
from simulator.simulate import simulate
from simulator.workloads import dataset, ncbi, swf
from tests.traces import trace


def test_ncbi_mix_arrivals_and_machine_types_follow_seed_000():
    w = ncbi.generate(hours=25, seed=5, per_type=2, history_runs=2)
    n = len(w.jobs)
    assert 25 * 3600 / 1.14 * 0.98 < n < 25 * 3600 / 1.14 * 1.02  # ~79,000 jobs
    mix = Counter(j.algorithm for j in w.jobs)
    for name, program in ncbi.PROGRAMS.items():
        assert mix[name] / n == pytest.approx(program.share, abs=0.01)
    gaps = np.diff([j.submit for j in w.jobs])
    assert gaps.mean() == pytest.approx(1.14, rel=0.02)
    hourly = np.bincount((np.array([j.submit for j in w.jobs]) // 3600).astype(int))
    assert hourly[2] > 1.3 * hourly[14]  # 3 pm is busier than 3 am
    assert len(w.cluster.machines) == 12 and set(w.cluster.platforms) == set(ncbi.MACHINE_TYPES)


def test_ncbi_costs_land_in_seed_000_io_ranges():
    one = np.array([ncbi.REFERENCE_LENGTH])
    unit = np.ones(1)

    def io_share(program: str, platform: str) -> float:
        total = ncbi.true_seconds(program, platform, one, unit)[0]
        cpu = ncbi.true_seconds(program, platform, one * 0 + 1e-9, unit)[0]
        return cpu / total  # with a near-zero query only the I/O remains

    blastn = [io_share("blastn", t) for t in ncbi.MACHINE_TYPES]
    blastp = [io_share("blastp", t) for t in ncbi.MACHINE_TYPES]
    assert 0.15 < min(blastn) < 0.25 and 0.65 < max(blastn) < 0.8
    assert min(blastp) < 0.05 and 0.4 < max(blastp) < 0.5
    assert max(io_share("blastx", t) for t in ncbi.MACHINE_TYPES) < 0.3
    assert ncbi.true_seconds("tblastx", "type2", one, unit)[0] > 10 * ncbi.true_seconds("blastn", "type2", one, unit)[0]


def test_dataset_workload_uses_measured_runs_as_truth_and_earlier_repeats_as_history():
    catalog = load_catalog(BUNDLED_DATA / "catalog.yaml")
    w = dataset.from_measurements(sorted((BUNDLED_DATA / "measurements").glob("*.csv")), catalog, per_platform=1)
    assert len(w.jobs) > 100 and len(w.history) > 100
    history_ids = {m.run_id for m in w.history}
    assert all(set(j.true_times) <= set(catalog.platforms) for j in w.jobs)
    assert len({(m.algorithm, m.platform) for m in w.history}) >= 4 and len(history_ids) == len(w.history)
    m = compute(simulate(w, make_policy("edf"), parse_estimates("model").oracle(w), estimates="model"))
    assert m.done == len(w.jobs) and 0.3 < m.utilisation <= 1.0


def test_hpc2n_replay_keeps_real_arrivals_sizes_and_user_requests():
    w = swf.replay(trace("hpc2n.swf"), limit=300)
    assert w.cluster.describe() == "1 x seth" and w.cluster.machines[0].slots == 240
    assert len(w.jobs) == 300 and w.jobs[0].submit == 0 and len(w.history) > 900
    first = w.jobs[0]
    assert first.params["requested_time"] > 0 and 1 <= first.size <= 240
    requested = compute(simulate(w, make_policy("edf"), parse_estimates("requested").oracle(w)))
    assert requested.done == 300


def test_wagap_replay_restricts_jobs_to_the_clusters_that_fit_them():
    w = swf.replay(trace("wagap-2013.swf"), limit=400)
    assert sorted((m.id, m.slots) for m in w.cluster.machines) == [("zegox", 576), ("zewura", 1600)]
    eligible = Counter(tuple(sorted(j.true_times)) for j in w.jobs)
    assert eligible[("zewura",)] > 0 and eligible[("zegox",)] > 0 and eligible[("zegox", "zewura")] > 0
    assert all(j.size <= 576 or j.true_times.keys() == {"zewura"} for j in w.jobs)
    m = compute(simulate(w, make_policy("fcfs"), parse_estimates("none").oracle(w)))
    assert (m.done, m.failed) == (sum(not j.fails for j in w.jobs), sum(j.fails for j in w.jobs))


def test_machines_file_and_node_requests_parse():
    line = swf.ClusterLine("zegox", 48, 12)
    from features.swf import SwfJob

    def job(procs: int, request: str | None) -> SwfJob:
        return SwfJob(1, 1, 0.0, 0.0, 1.0, procs, 0, 0, procs, 10.0, 0, 1, 1, 1, 1, 1, 1, -1, -1, node_request=request)

    big = swf.ClusterLine("zewura", 20, 80)
    assert swf.eligible(job(64, "1:ppn=64:x86_64:cl_zewura#excl"), [big, line]) == (64, ("zewura",))
    assert swf.eligible(job(64, "8:ppn=8:x86_64:cl_zegox"), [big, line]) == (64, ("zegox",))
    assert swf.eligible(job(12, "1:ppn=12"), [big, line]) == (12, ("zewura", "zegox"))
    assert swf.eligible(job(16, "1:ppn=16"), [big, line]) == (16, ("zewura",))
    assert swf.eligible(job(4, None), [line]) == (4, ("zegox",))


def test_machine_files_give_node_memory_and_replays_read_memory_only_when_asked(tmp_path):
    (tmp_path / "toy.swf").write_text(
        "1 0 0 100 3 -1 2048 3 200 4096 1 7 1 -1 -1 1 -1 -1\n2 5 0 100 2 -1 -1 2 200 -1 1 7 1 -1 -1 1 -1 -1\n"
    )
    (tmp_path / "toy.swf.machines").write_text("0\tnodes\t4\t2\t1\t1048576\n")
    assert swf.read_machines(tmp_path / "toy.swf.machines")[0].node_memory == 2**30
    plain = swf.replay(tmp_path / "toy.swf", train_fraction=0.0, nodes="packed")
    assert plain.cluster.machines[0].node_memory is None and all(j.memory is j.true_memory is None for j in plain.jobs)
    asked = swf.replay(tmp_path / "toy.swf", train_fraction=0.0, nodes="packed", memory="requested")
    assert asked.cluster.machines[0].node_memory == 2**30  # per node when packed
    assert [(j.memory, j.true_memory) for j in asked.jobs] == [(3 * 4096 * 1024, 3 * 2048 * 1024), (None, None)]
    pooled = swf.replay(tmp_path / "toy.swf", train_fraction=0.0, memory="ignored")
    assert (
        pooled.cluster.machines[0].node_memory == 4 * 2**30 and pooled.jobs[0].memory is None
    )  # the pool's whole memory
