#!/bin/bash
# A billion-trial `bosaris-dask evaluate` in one PBS job with dask-mpi: 5 chunks of 16 cores,
# 4 MPI ranks each, so 20 ranks: scheduler (rank 0), evaluation (rank 1), 18 workers of 4 threads.
#
#   qsub examples/hpc/pbs-mpi.sh
#
#PBS -N bosaris-evaluate-mpi
#PBS -l select=5:ncpus=16:mpiprocs=4:mem=64gb
#PBS -l walltime=02:00:00
#PBS -j oe
set -euo pipefail
cd "${PBS_O_WORKDIR:-.}"

DATA=${DATA:-/scratch/$USER/sre-1e9}
OUT=${OUT:-$DATA/results-${PBS_JOBID:-local}.json}
BOSARIS_DASK=${BOSARIS_DASK:-bosaris-dask}
NRANKS=$(wc -l <"$PBS_NODEFILE")   # one line per MPI rank (mpiprocs)

# shellcheck disable=SC2086
mpirun -n "$NRANKS" $BOSARIS_DASK evaluate \
    --key "$DATA/key.zarr" \
    --scores "$DATA/system-1.zarr" --scores "$DATA/system-2.zarr" \
    --prior 0.5 --prior 0.01 --prior 0.001 \
    --json "$OUT" \
    --cluster mpi --threads-per-worker 4 --memory-limit 15GB
