#!/bin/bash
# A billion-trial `bosaris-dask evaluate` in one SLURM allocation with dask-mpi.
#
# Every MPI rank runs bosaris-dask: rank 0 becomes the dask scheduler, rank 1 runs the evaluation
# (the only rank that reads inputs and writes outputs), ranks 2.. are the workers. Here: 18 ranks
# of 4 cores and 8 GB, so 16 workers with 64 cores. No job is submitted from inside the job, so
# this works where compute nodes may not run sbatch.
#
#   sbatch examples/hpc/slurm-mpi.sh
#   DATA=/scratch/me/sre sbatch --ntasks=34 examples/hpc/slurm-mpi.sh
#
#SBATCH --job-name=bosaris-evaluate-mpi
#SBATCH --ntasks=18
#SBATCH --cpus-per-task=4
#SBATCH --mem-per-cpu=2G
#SBATCH --time=02:00:00
#SBATCH --output=bosaris-evaluate-mpi-%j.out
set -euo pipefail

DATA=${DATA:-/scratch/$USER/sre-1e9}
OUT=${OUT:-$DATA/results-${SLURM_JOB_ID:-local}.json}
MEMORY_LIMIT=${MEMORY_LIMIT:-7GB}   # per worker rank: a little under cpus-per-task x mem-per-cpu
BOSARIS_DASK=${BOSARIS_DASK:-bosaris-dask}
MPIRUN_ARGS=${MPIRUN_ARGS:-}        # e.g. "--mca btl_tcp_if_include ib0"
EXTRA_ARGS=${EXTRA_ARGS:-}          # e.g. "--interface ib0"

# module load openmpi   # where the site provides MPI through modules

# shellcheck disable=SC2086  # the *_ARGS and BOSARIS_DASK variables are word lists
mpirun $MPIRUN_ARGS -n "${SLURM_NTASKS:?run it with sbatch, or set SLURM_NTASKS}" $BOSARIS_DASK evaluate \
    --key "$DATA/key.zarr" \
    --scores "$DATA/system-1.zarr" --scores "$DATA/system-2.zarr" \
    --prior 0.5 --prior 0.01 --prior 0.001 \
    --json "$OUT" \
    --cluster mpi --threads-per-worker "${SLURM_CPUS_PER_TASK:-1}" \
    --memory-limit "$MEMORY_LIMIT" $EXTRA_ARGS
