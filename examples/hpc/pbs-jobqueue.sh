#!/bin/bash
# A billion-trial `bosaris-dask evaluate` on PBS Pro / OpenPBS through dask-jobqueue.
#
# This small job runs the dask scheduler and the evaluation; dask-jobqueue submits the worker
# jobs with qsub, sized by jobqueue.yaml (copy it to ~/.config/dask/, or set DASK_CONFIG).
#
#   qsub examples/hpc/pbs-jobqueue.sh
#   qsub -v DATA=/scratch/me/sre,JOBS=16 examples/hpc/pbs-jobqueue.sh
#
#PBS -N bosaris-evaluate
#PBS -l select=1:ncpus=2:mem=8gb
#PBS -l walltime=03:00:00
#PBS -j oe
set -euo pipefail
cd "${PBS_O_WORKDIR:-.}"

DATA=${DATA:-/scratch/$USER/sre-1e9}
OUT=${OUT:-$DATA/results-${PBS_JOBID:-local}.json}
JOBS=${JOBS:-8}
BOSARIS_DASK=${BOSARIS_DASK:-bosaris-dask}
EXTRA_ARGS=${EXTRA_ARGS:-}      # e.g. "--queue long --walltime 04:00:00 --interface ib0"

# shellcheck disable=SC2086
$BOSARIS_DASK evaluate \
    --key "$DATA/key.zarr" \
    --scores "$DATA/system-1.zarr" --scores "$DATA/system-2.zarr" \
    --prior 0.5 --prior 0.01 --prior 0.001 \
    --json "$OUT" \
    --cluster pbs --jobs "$JOBS" --worker-timeout 3600 $EXTRA_ARGS
