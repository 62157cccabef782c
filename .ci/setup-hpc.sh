#!/usr/bin/env bash
# Install and start the real HPC components the `hpc` tests use, on this one machine:
# OpenMPI (mpirun), mpi4py, dask-mpi, dask-jobqueue, and a single-node SLURM (munge, slurmctld,
# slurmd) listening on loopback only.
#
# Idempotent: a second run installs nothing new, keeps running daemons, rewrites slurm.conf only
# when its content changes (and then restarts the SLURM daemons), and resumes a DOWN/DRAINED node.
# Exits non-zero with a message naming the step that failed.
#
# Usage: bash .ci/setup-hpc.sh          (as root; Debian/Ubuntu with apt-get)
# Env:   PYTHON (default python3), SLURM_PARTITION (default "debug"),
#        HPC_SETUP_TIMEOUT (seconds to wait for the node to be idle, default 60)
set -Eeuo pipefail

PYTHON=${PYTHON:-python3}
PARTITION=${SLURM_PARTITION:-debug}
WAIT_S=${HPC_SETUP_TIMEOUT:-60}
SLURM_ETC=/etc/slurm
STEP="start"
T0=$(date +%s)

log() { echo "[setup-hpc +$(($(date +%s) - T0))s] $*"; }
fail() {
    echo "setup-hpc: FAILED at step '$STEP': $*" >&2
    [[ $STEP == munge || $STEP == *slurm* || $STEP == "wait for idle node" ]] || exit 1
    for f in /var/log/slurm/slurmctld.log /var/log/slurm/slurmd.log /var/log/munge/munged.log; do
        if [[ -s $f ]]; then
            echo "--- last lines of $f" >&2
            tail -n 15 "$f" >&2
        fi
    done
    exit 1
}
trap 'fail "command failed (line $LINENO): $BASH_COMMAND"' ERR

[[ $(id -u) -eq 0 ]] || fail "must run as root (installs Debian packages, starts daemons)"
command -v apt-get >/dev/null || fail "apt-get not found: this script supports Debian/Ubuntu only"

# --- 1. Debian packages --------------------------------------------------------------------
STEP="apt-get install"
PKGS=(openmpi-bin libopenmpi-dev munge slurmctld slurmd slurm-client)
missing=()
for p in "${PKGS[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
    log "installing ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq || fail "apt-get update failed"
    apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null \
        || fail "apt-get install ${missing[*]} failed"
else
    log "Debian packages already installed"
fi
command -v mpirun >/dev/null || fail "mpirun not on PATH after installing openmpi-bin"

# --- 2. Python packages --------------------------------------------------------------------
STEP="pip install"
if "$PYTHON" -c "import mpi4py, dask_mpi, dask_jobqueue" 2>/dev/null; then
    log "mpi4py, dask-mpi, dask-jobqueue already importable"
else
    log "pip installing mpi4py dask-mpi dask-jobqueue"
    "$PYTHON" -m pip install -q "mpi4py>=3.1" "dask-mpi>=2025.10" "dask-jobqueue>=0.9" \
        || fail "pip install mpi4py dask-mpi dask-jobqueue failed"
    "$PYTHON" -c "import mpi4py, dask_mpi, dask_jobqueue" \
        || fail "mpi4py/dask_mpi/dask_jobqueue still not importable with $PYTHON"
fi

# --- 3. munge ------------------------------------------------------------------------------
STEP="munge"
if [[ ! -s /etc/munge/munge.key ]]; then
    log "creating /etc/munge/munge.key"
    if command -v mungekey >/dev/null; then
        mungekey --create --force
    else
        dd if=/dev/urandom bs=1 count=1024 of=/etc/munge/munge.key status=none
    fi
fi
chown munge:munge /etc/munge/munge.key
chmod 0400 /etc/munge/munge.key
mkdir -p /run/munge /var/log/munge /var/lib/munge
chown munge:munge /run/munge /var/log/munge /var/lib/munge
if munge -n 2>/dev/null | unmunge >/dev/null 2>&1; then
    log "munged already running"
else
    log "starting munged"
    runuser -u munge -- /usr/sbin/munged --force || fail "munged did not start"
    for _ in $(seq 20); do
        munge -n 2>/dev/null | unmunge >/dev/null 2>&1 && break
        sleep 0.5
    done
    munge -n | unmunge >/dev/null || fail "munge credential round trip fails"
fi

# --- 4. slurm.conf -------------------------------------------------------------------------
STEP="slurm.conf"
NODE=$(hostname -s)
NCPU=$(nproc)
MEM_MB=$(awk '/MemTotal/ {print int($2 / 1024)}' /proc/meminfo)
# Leave room for the OS; cap at 8 GiB so per-job memory limits are meaningful on big hosts.
REAL_MB=$((MEM_MB * 3 / 4))
((REAL_MB > 8192)) && REAL_MB=8192
# Two single-CPU jobs must fit: default memory per CPU is half of what the node offers.
DEF_MB=$((REAL_MB / 2 / NCPU))
mkdir -p "$SLURM_ETC" /var/lib/slurm/slurmctld /var/lib/slurm/slurmd /var/log/slurm
CONF=$(cat <<EOF
# Written by .ci/setup-hpc.sh: a one-node SLURM on loopback for the bosaris_dask hpc tests.
ClusterName=bosaris
SlurmctldHost=${NODE}(127.0.0.1)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
MpiDefault=none
MailProg=/bin/true
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
JobCompType=jobcomp/none
AccountingStorageType=accounting_storage/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU_Memory
DefMemPerCPU=${DEF_MB}
ReturnToService=2
SlurmctldPort=6817
SlurmdPort=6818
StateSaveLocation=/var/lib/slurm/slurmctld
SlurmdSpoolDir=/var/lib/slurm/slurmd
SlurmctldPidFile=/run/slurmctld.pid
SlurmdPidFile=/run/slurmd.pid
SlurmctldLogFile=/var/log/slurm/slurmctld.log
SlurmdLogFile=/var/log/slurm/slurmd.log
SlurmctldTimeout=30
SlurmdTimeout=30
InactiveLimit=0
KillWait=5
MinJobAge=60
NodeName=${NODE} NodeAddr=127.0.0.1 NodeHostname=${NODE} CPUs=${NCPU} RealMemory=${REAL_MB} State=UNKNOWN
PartitionName=${PARTITION} Nodes=${NODE} Default=YES MaxTime=INFINITE State=UP OverSubscribe=NO
EOF
)
CHANGED=0
if [[ ! -f $SLURM_ETC/slurm.conf ]] || [[ "$(cat "$SLURM_ETC/slurm.conf")" != "$CONF" ]]; then
    log "writing $SLURM_ETC/slurm.conf (node $NODE, $NCPU CPUs, ${REAL_MB} MB)"
    printf '%s\n' "$CONF" >"$SLURM_ETC/slurm.conf"
    CHANGED=1
fi

# --- 5. slurmctld, slurmd ------------------------------------------------------------------
STEP="start slurm"
running() { [[ -f $1 ]] && kill -0 "$(cat "$1")" 2>/dev/null; }
if ((CHANGED)); then
    for pidf in /run/slurmd.pid /run/slurmctld.pid; do
        if running "$pidf"; then
            log "restarting for the new slurm.conf: stopping pid $(cat "$pidf")"
            kill "$(cat "$pidf")" 2>/dev/null || true
            for _ in $(seq 20); do running "$pidf" || break; sleep 0.5; done
        fi
    done
fi
if running /run/slurmctld.pid; then
    log "slurmctld already running"
else
    log "starting slurmctld"
    /usr/sbin/slurmctld || fail "slurmctld did not start"
fi
for _ in $(seq 40); do scontrol ping 2>/dev/null | grep -q UP && break; sleep 0.5; done
scontrol ping | grep -q UP || fail "slurmctld does not answer 'scontrol ping'"
if running /run/slurmd.pid; then
    log "slurmd already running"
else
    log "starting slurmd"
    /usr/sbin/slurmd || fail "slurmd did not start"
fi

# --- 6. wait for the node --------------------------------------------------------------------
STEP="wait for idle node"
deadline=$(($(date +%s) + WAIT_S))
while :; do
    state=$(sinfo -h -n "$NODE" -o %T 2>/dev/null | head -n1 || true)
    case $state in
        idle*) break ;;
        down* | drain* | drained* | fail*)
            log "node $NODE is '$state': resuming"
            scontrol update nodename="$NODE" state=resume 2>/dev/null || true
            ;;
    esac
    (($(date +%s) > deadline)) && fail "node $NODE not idle after ${WAIT_S}s (state '${state}')"
    sleep 1
done
log "SLURM ready: $(sinfo -h -o '%P %D %T %c %m' | head -n1); mpirun: $(mpirun --version | head -n1)"
log "done in $(($(date +%s) - T0))s"
