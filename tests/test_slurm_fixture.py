"""The session's private Slurm: a batch job runs to COMPLETED on its one node and lands in the job-completion log."""

from __future__ import annotations

from tests.livesrv import eventually
from tests.slurmserver import SlurmCluster


def test_a_batch_job_runs_and_is_logged(slurm_cluster: SlurmCluster) -> None:
    job = slurm_cluster.run("sbatch", "--parsable", "--job-name=fixture-smoke", "--wrap", "echo hello").stdout.strip()
    assert job.isdigit()
    assert eventually(
        lambda: slurm_cluster.jobcomp.exists() and f"JobId={job} " in slurm_cluster.jobcomp.read_text(), 30
    )
    line = next(x for x in slurm_cluster.jobcomp.read_text().splitlines() if x.startswith(f"JobId={job} "))
    assert "JobState=COMPLETED" in line and "Name=fixture-smoke" in line
    assert f"NodeList={slurm_cluster.node}" in line
