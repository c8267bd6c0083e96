#!/usr/bin/env bash
# Install the Debian programs the tests drive for real: PostgreSQL (store tests),
# the bioinformatics tools the sweeps profile, and Slurm. Only as root, only what is missing.
# `install-system-deps.sh tools` (make tools) installs only the programs the walkthroughs run
# (docs/getting-started.md, docs/own-programs.md): BLAST+, MAFFT, Clustal Omega, seqkit, HMMER, BWA, taskset.
set -euo pipefail

need=()
command -v blastn >/dev/null || need+=(ncbi-blast+)
command -v mafft >/dev/null || need+=(mafft)
command -v clustalo >/dev/null || need+=(clustalo)
command -v seqkit >/dev/null || need+=(seqkit)
command -v hmmsearch >/dev/null || need+=(hmmer)
command -v bwa >/dev/null || need+=(bwa)
command -v taskset >/dev/null || need+=(util-linux)
if [ "${1:-}" != tools ]; then
[ -e /usr/share/java/weka.jar ] || need+=(weka)  # peers benchmark and the recorded Weka fixture
command -v java >/dev/null || need+=(default-jre-headless)
[ -e /usr/include/fann.h ] || need+=(libfann-dev)
command -v gcc >/dev/null || need+=(gcc)
ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || need+=(postgresql)
# a private single-node Slurm for tests/slurm and the bridge (tests/slurmserver.py)
command -v slurmctld >/dev/null || need+=(slurmctld)
command -v slurmd >/dev/null || need+=(slurmd)
command -v sbatch >/dev/null || need+=(slurm-client)
command -v munged >/dev/null || need+=(munge)
[ -e /usr/share/lua/5.1/socket/http.lua ] || need+=(lua-socket)  # the job_submit.lua plugin's HTTP client
command -v lua5.1 >/dev/null || need+=(lua5.1)  # runs the plugin in tests/serving/test_slurm.py, as slurmctld would
fi

if [ ${#need[@]} -eq 0 ]; then
    exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
    echo "missing system packages: ${need[*]} (run as root, or install them with apt-get)" >&2
    exit 0
fi
echo "installing system packages: ${need[*]}"
export DEBIAN_FRONTEND=noninteractive
# no daemon may start from a package's postinst (slurmctld, munge): deny it for the install if nothing does yet
policy=/usr/sbin/policy-rc.d
if [ ! -e "$policy" ]; then
    printf '#!/bin/sh\nexit 101\n' >"$policy"
    chmod 755 "$policy"
    trap 'rm -f "$policy"' EXIT
fi
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
