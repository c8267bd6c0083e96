"""A throwaway single-node Slurm for the test session: munged, slurmctld and slurmd on 127.0.0.1 in a temp folder.

Every file (munge key and socket, ``slurm.conf``, ``job_submit.lua``, state, spool, logs, the job-completion
log) lives in one short temporary folder; clients find the cluster through ``SLURM_CONF`` alone. The ports are
random free ones, the cluster name unique and the first job id random, so two sessions (two pytest-xdist
workers) can run side by side. Daemons are stopped by the
pids they were started with; processes that jobs left behind (``proctrack/linuxproc`` does not contain them) are
found by this cluster's name in their environment. The facts behind the configuration are in
``/work/shared/reference/slurm-local.md`` (cgroups off, ``task/none``, whole-minute limits, a 30 s limit check).

``SlurmCluster(memory=True)`` enforces ``--mem`` (issue 31). Found on these machines (Slurm 22.05.8, a Firecracker
VM whose cgroup v1 hierarchies, the freezer included, are mounted and writable at /sys/fs/cgroup):

- Without cgroups, ``JobAcctGatherType=jobacct_gather/linux``, ``JobAcctGatherFrequency=1`` and
  ``JobAcctGatherParams=OverMemoryKill`` kill nothing while ``SelectTypeParameters=CR_Core`` (memory is no
  consumable resource, the step has no limit). With ``CR_Core_Memory`` slurmstepd kills the step at the next sample
  ("StepId=1.batch exceeded memory limit (225460224 > 52428800), being killed"), but the job ends **FAILED**
  (ExitCode 0:9, Reason JobLaunchFailure), also when the program runs in an ``srun`` step (FAILED, 137:0): slurmctld
  writes OUT_OF_MEMORY only when the batch step ends with SIG_OOM, which task/cgroup reports on an oom-kill event.
- With ``ProctrackType=proctrack/cgroup``, ``TaskPlugin=task/cgroup`` and a ``cgroup.conf`` (``CgroupPlugin=cgroup/v1``,
  ``ConstrainRAMSpace=yes``) a job past its ``--mem`` ends **OUT_OF_MEMORY** (completion log: ``JobState=OUT_OF_MEMORY
  ExitCode=0:125``) within a second of crossing it. The reference's "freezer not mounted" failure was another machine.
  This is the ``memory=True`` configuration; :func:`memory_enforceable` says whether the machine allows it.
- Jobs' cgroups are the machine's, named by job id (``/sys/fs/cgroup/memory/slurm_<node>/uid_0/job_<id>``): a random
  ``FirstJobId`` keeps two clusters' jobs apart. Without ``--mem`` a job gets ``DefMemPerCPU`` (else the node's whole
  memory, and jobs run one at a time).
- MaxRSS: ``sacct -c`` prints the column empty and the ``jobcomp/filetxt`` log has no such field; ``sstat -a -j <id>
  -o JobID,MaxRSS`` answers while a step runs (``123.batch|96980K``, with jobacct_gather/linux); slurmdbd (not
  installed: it needs MariaDB) would keep it for ``sacct``.
- ``scontrol update JobId=<id> MinMemoryNode=100`` on a job requeued held takes: its next run has ``mem=100M``.
- Preemption (``PreemptType=preempt/partition_prio``, ``PreemptMode=CANCEL``, partition ``urgent`` a tier above
  ``debug``): a debug job holding both CPUs ends PREEMPTED when an urgent job comes; ``scontrol requeuehold`` takes it.
- ``scontrol update NodeName=<node> State=DOWN`` under running jobs ends them NODE_FAIL (a line each in the
  completion log); Slurm requeues a requeueable one itself (PENDING at once), and refuses ``scontrol requeuehold``
  for one submitted ``--no-requeue`` ("Requested operation is presently disabled"). With ``ReturnToService=2`` the
  node is back ``idle`` within seconds. ``sinfo -N`` shows the node once per partition.
- In job_submit.lua ``job_desc.pn_min_memory`` is NO_VAL64 without a memory request, ``min_mem_per_node`` and
  ``min_mem_per_cpu`` are nil unless ``--mem`` or ``--mem-per-cpu`` gave them; setting ``pn_min_memory`` sets ``--mem``.
"""

from __future__ import annotations

import contextlib
import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path

from tests import tiers

DAEMONS = ("munged", "slurmctld", "slurmd")
PROGRAMS = (*DAEMONS, "sbatch", "squeue", "scontrol", "sacct", "sinfo", "scancel")
PASS_THROUGH = """function slurm_job_submit(job_desc, part_list, submit_uid)
    return slurm.SUCCESS
end

function slurm_job_modify(job_desc, job_rec, part_list, modify_uid)
    return slurm.SUCCESS
end
"""
START_S = 30.0
NODE_MEMORY_MB = 1000
NO_MEMORY_CONF = """ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
SelectTypeParameters=CR_Core
"""
MEMORY_CONF = """ProctrackType=proctrack/cgroup
TaskPlugin=task/cgroup
JobAcctGatherType=jobacct_gather/linux
JobAcctGatherFrequency=1
SelectTypeParameters=CR_Core_Memory
DefMemPerCPU=100
PreemptType=preempt/partition_prio
PreemptMode=CANCEL
"""
URGENT = "PartitionName=urgent Nodes={node} DefaultTime=00:05:00 MaxTime=60 PriorityTier=2 State=UP\n"
"""A partition whose jobs preempt (cancel) debug's, for a PREEMPTED job (``memory=True`` clusters only)."""
CGROUP_ROOT = "/sys/fs/cgroup"
CGROUP_CONF = f"""CgroupPlugin=cgroup/v1
CgroupMountpoint={CGROUP_ROOT}
ConstrainRAMSpace=yes
ConstrainSwapSpace=no
IgnoreSystemd=yes
"""


def available() -> bool:
    """Whether the Slurm and munge programs are installed and we may run them (root: the daemons run as root)."""
    return os.geteuid() == 0 and all(_which(p) for p in PROGRAMS)


def memory_enforceable() -> bool:
    """Whether a cluster with ``memory=True`` can run here: a writable cgroup v1 memory hierarchy (task/cgroup)."""
    root = Path(CGROUP_ROOT) / "memory"
    return (root / "memory.limit_in_bytes").exists() and os.access(root, os.W_OK)


def _which(program: str) -> str | None:
    return shutil.which(program) or shutil.which(program, path="/usr/sbin:/usr/bin:/sbin")


def _free_ports(count: int) -> list[int]:
    sockets = [socket.socket() for _ in range(count)]
    try:
        for sock in sockets:
            sock.bind(("127.0.0.1", 0))
        return [sock.getsockname()[1] for sock in sockets]
    finally:
        for sock in sockets:
            sock.close()


class SlurmCluster:
    """One node (``CPUs=cpus``) and one partition ``debug`` (MaxTime 1 h) in a fresh folder; :meth:`start`, :meth:`stop`."""

    def __init__(self, cpus: int = 2, max_time_min: int = 60, memory: bool = False) -> None:
        self.root = Path(tempfile.mkdtemp(prefix="slurm-", dir="/tmp"))
        self.root.chmod(0o755)  # munge wants the socket's folders open to all
        self.name = f"t{secrets.token_hex(4)}"
        self.node = socket.gethostname().split(".")[0]
        self.cpus = cpus
        self.max_time_min = max_time_min
        self.memory = memory
        self.conf = self.root / "slurm.conf"
        self.plugin = self.root / "job_submit.lua"
        self.jobcomp = self.root / "log" / "jobcomp.txt"
        self.env = {**os.environ, "SLURM_CONF": str(self.conf)}
        self._pids: dict[str, int] = {}

    # --- life --------------------------------------------------------------------------------------------------

    def start(self) -> None:
        """Start munged, slurmctld and slurmd, and wait until the node is idle; one retry if it does not come up."""
        tiers.starting("Slurm")
        try:
            self._start_once()
        except RuntimeError:
            self._stop_daemons()
            self._start_once()

    def _start_once(self) -> None:
        for sub in ("munge", "state", "spool", "log", "run"):
            (self.root / sub).mkdir(exist_ok=True)
        (self.root / "munge").chmod(0o755)
        key = self.root / "munge" / "munge.key"
        if not key.exists():
            key.write_bytes(secrets.token_bytes(1024))
            key.chmod(0o400)
        if not self.plugin.exists():
            self.plugin.write_text(PASS_THROUGH)
        self._write_conf()
        if self.memory:
            (self.root / "cgroup.conf").write_text(CGROUP_CONF)
        munge = self.root / "munge"
        self._daemon(
            "munged",
            [
                _which("munged") or "munged",
                f"--key-file={key}",
                f"--socket={munge / 'munge.socket'}",
                f"--pid-file={munge / 'munged.pid'}",
                f"--log-file={munge / 'munged.log'}",
                f"--seed-file={munge / 'munged.seed'}",
                "--force",
            ],
            munge / "munged.pid",
        )
        self._daemon(
            "slurmctld", [_which("slurmctld") or "slurmctld", "-f", str(self.conf)], self.root / "run" / "slurmctld.pid"
        )
        self._daemon(
            "slurmd",
            [_which("slurmd") or "slurmd", "-f", str(self.conf), "-N", self.node],
            self.root / "run" / "slurmd.pid",
        )
        deadline = time.monotonic() + START_S
        while time.monotonic() < deadline:
            state = self.run("sinfo", "-h", "-N", "-o", "%T", check=False).stdout.strip()
            if set(state.split()) == {"idle"}:  # one line per partition the node is in
                return
            time.sleep(0.2)
        raise RuntimeError(
            f"the node did not come up idle in {START_S:.0f} s (last state {state!r}); logs in {self.root / 'log'}"
        )

    def _daemon(self, name: str, command: list[str], pid_file: Path) -> None:
        """Start a daemon that forks itself into the background and remember its pid (from its pid file)."""
        pid_file.unlink(missing_ok=True)
        done = subprocess.run(command, env=self.env, capture_output=True, text=True, timeout=START_S, check=False)
        if done.returncode != 0:
            raise RuntimeError(f"{name} failed to start ({done.returncode}): {done.stderr.strip()}")
        deadline = time.monotonic() + START_S
        while time.monotonic() < deadline:
            text = pid_file.read_text().strip() if pid_file.exists() else ""
            if text.isdigit():
                self._pids[name] = int(text)
                return
            time.sleep(0.05)
        raise RuntimeError(f"{name} wrote no pid file {pid_file} in {START_S:.0f} s")

    def stop(self) -> None:
        """Stop the daemons by pid, kill what jobs left behind, and remove the folder (and slurmd's empty cgroups)."""
        self._stop_daemons()
        shutil.rmtree(self.root, ignore_errors=True)
        if self.memory:
            for folder in Path(CGROUP_ROOT).glob(f"*/slurm_{self.node}"):
                with contextlib.suppress(OSError):
                    folder.rmdir()  # only when empty: another cluster's jobs keep theirs

    def _stop_daemons(self) -> None:
        stepds = self._end_jobs() if "slurmctld" in self._pids else []
        for pid in self._escaped() + stepds:
            _signal(pid, signal.SIGKILL)
        for name in reversed(DAEMONS):
            pid = self._pids.pop(name, None)
            if pid is not None:
                _signal(pid, signal.SIGTERM)
                if not _gone(pid, 10.0):
                    _signal(pid, signal.SIGKILL)
                    _gone(pid, 5.0)

    def _end_jobs(self) -> list[int]:
        """Cancel the jobs still running and wait (bounded) for them to end; the pids of their slurmstepds that did not.

        A slurmstepd outlives a stopped slurmd (and keeps its job's cgroup, frozen, with proctrack/cgroup)."""
        listed = self.run(
            "squeue", "-h", "--states=RUNNING,COMPLETING,SUSPENDED", "--format=%i", check=False
        ).stdout.split()
        if not listed:
            return []
        self.run("scancel", *listed, check=False)
        deadline = time.monotonic() + 15.0
        while (
            time.monotonic() < deadline
            and self.run("squeue", "-h", "--states=RUNNING,COMPLETING", "--format=%i", check=False).stdout.strip()
        ):
            time.sleep(0.2)
        marks = tuple(f"slurmstepd: [{job}.".encode() for job in listed)
        found = []
        for entry in Path("/proc").iterdir():
            try:
                if entry.name.isdigit() and (entry / "cmdline").read_bytes().startswith(marks):
                    found.append(int(entry.name))
            except OSError:
                continue
        return found

    def _escaped(self) -> list[int]:
        """Processes whose environment names this cluster: jobs' children that outlived their job."""
        marker = f"SLURM_CLUSTER_NAME={self.name}".encode()
        found = []
        for entry in Path("/proc").iterdir():
            if entry.name.isdigit() and int(entry.name) != os.getpid():
                try:
                    if marker in (entry / "environ").read_bytes().split(b"\0"):
                        found.append(int(entry.name))
                except OSError:
                    continue
        return found

    # --- use ---------------------------------------------------------------------------------------------------

    def run(
        self, program: str, *args: str, check: bool = True, timeout: float = 60.0
    ) -> subprocess.CompletedProcess[str]:
        """Run a Slurm client against this cluster (in its folder: jobs' output files land there); a failure (when
        ``check``) raises with its output."""
        done = subprocess.run(
            [_which(program) or program, *args],
            env=self.env,
            cwd=self.root,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
        if check and done.returncode != 0:
            raise RuntimeError(f"{program} {' '.join(args)} failed ({done.returncode}): {done.stdout}{done.stderr}")
        return done

    def submit(self, *args: str) -> str:
        """``sbatch --parsable args``: the new job's id."""
        return self.run("sbatch", "--parsable", *args).stdout.strip().split(";")[0]

    def state(self, job_id: str) -> str:
        """The job's state as squeue shows it ('' once slurmctld forgot it)."""
        return self.run("squeue", "-h", "--states=all", f"--jobs={job_id}", "--format=%T", check=False).stdout.strip()

    def wait_state(self, job_id: str, states: tuple[str, ...], timeout: float = 120.0) -> str:
        """Poll until the job is in one of ``states``; its state, or TimeoutError."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            state = self.state(job_id)
            if state in states:
                return state
            time.sleep(0.25)
        raise TimeoutError(f"job {job_id} not in {states} after {timeout:.0f} s (state {self.state(job_id)!r})")

    def show(self, job_id: str) -> dict[str, str]:
        """``TimeMin``, ``TimeLimit``, ``JobState``, ``NodeList``, ``Restarts``, ``MinMemoryNode`` and ``Comment`` of a job as
        ``scontrol show job`` tells."""
        text = self.run("scontrol", "show", "job", "-o", job_id).stdout
        found = {
            key: re.search(rf"\b{key}=(\S*)", text)
            for key in ("TimeMin", "TimeLimit", "JobState", "NodeList", "Restarts", "MinMemoryNode")
        }
        comment = re.search(r"\bComment=(.*?) (?=StdErr=|StdIn=|StdOut=|Power=)", text)
        return {key: m.group(1) for key, m in found.items() if m} | {
            "Comment": comment.group(1).strip() if comment else ""
        }

    def completions(self) -> dict[str, str]:
        """Each job id in the completion log and the state of its last line there."""
        if not self.jobcomp.exists():
            return {}
        found = {}
        for line in self.jobcomp.read_text().splitlines():
            words = dict(w.split("=", 1) for w in line.split() if "=" in w)
            found[words.get("JobId", "")] = words.get("JobState", "")
        return found

    def set_plugin(self, text: str) -> None:
        """Replace job_submit.lua; slurmctld re-reads it when its mtime changes (1 s resolution), so the mtime moves on."""
        before = self.plugin.stat().st_mtime if self.plugin.exists() else 0.0
        self.plugin.write_text(text)
        after = max(time.time(), before + 1.5)
        os.utime(self.plugin, (after, after))

    def _write_conf(self) -> None:
        ctld, node = _free_ports(2)
        root = self.root
        # cgroups are the machine's, named by job id, and stop() finds a job's slurmstepd by its id: a random first id
        # keeps two clusters' jobs apart (two pytest-xdist workers each run one)
        enforcement = MEMORY_CONF if self.memory else NO_MEMORY_CONF
        self.conf.write_text(f"""ClusterName={self.name}
FirstJobId={1000 + secrets.randbelow(10**7)}
SlurmctldHost={self.node}(127.0.0.1)
SlurmctldPort={ctld}
SlurmdPort={node}
CommunicationParameters=NoCtldInAddrAny,NoInAddrAny
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket={root}/munge/munge.socket
StateSaveLocation={root}/state
SlurmdSpoolDir={root}/spool
SlurmctldPidFile={root}/run/slurmctld.pid
SlurmdPidFile={root}/run/slurmd.pid
SlurmctldLogFile={root}/log/slurmctld.log
SlurmdLogFile={root}/log/slurmd.log
{enforcement}AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/filetxt
JobCompLoc={self.jobcomp}
JobSubmitPlugins=lua
SelectType=select/cons_tres
SchedulerType=sched/backfill
MinJobAge=3600
KillWait=2
ReturnToService=2
MailProg=/bin/true
NodeName={self.node} NodeAddr=127.0.0.1 CPUs={self.cpus} RealMemory={NODE_MEMORY_MB} State=UNKNOWN
PartitionName=debug Nodes={self.node} Default=YES DefaultTime=00:05:00 MaxTime={self.max_time_min} State=UP
{URGENT.format(node=self.node) if self.memory else ""}""")


def _signal(pid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, sig)


def _gone(pid: int, timeout: float) -> bool:
    """Whether ``pid`` ends (or is a zombie left for PID 1 to reap) within ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            status = Path(f"/proc/{pid}/stat").read_text()
        except OSError:
            return True
        if status.rsplit(")", 1)[-1].split()[0] == "Z":
            return True
        time.sleep(0.05)
    return False
