#!/bin/bash
# A billion-trial `bosaris-dask evaluate` on SLURM through dask-jobqueue.
#
# This small job runs the dask scheduler and the evaluation itself; dask-jobqueue submits the
# worker jobs, sized by jobqueue.yaml (copy it to ~/.config/dask/, or set DASK_CONFIG to its
# folder). The worker jobs are cancelled when the evaluation ends, and if it fails.
#
#   sbatch examples/hpc/slurm-jobqueue.sh
#   DATA=/scratch/me/sre JOBS=16 sbatch examples/hpc/slurm-jobqueue.sh
#
# DATA holds key.zarr, system-1.zarr and system-2.zarr; e.g. a synthetic 30,000 x 33,334
# (1.0e9 trials) made with:
#   bosaris-dask simulate --models 30000 --segments 33334 --systems 2 --out-dir "$DATA"
#
#SBATCH --job-name=bosaris-evaluate
#SBATCH --ntasks=1
#SBATCH --cpus-per-task=2
#SBATCH --mem=8G
#SBATCH --time=03:00:00
#SBATCH --output=bosaris-evaluate-%j.out
set -euo pipefail

DATA=${DATA:-/scratch/$USER/sre-1e9}
OUT=${OUT:-$DATA/results-${SLURM_JOB_ID:-local}.json}
JOBS=${JOBS:-8}                 # worker jobs to submit
BOSARIS_DASK=${BOSARIS_DASK:-bosaris-dask}
EXTRA_ARGS=${EXTRA_ARGS:-}      # e.g. "--queue long --walltime 04:00:00 --interface ib0"

# shellcheck disable=SC2086  # BOSARIS_DASK and EXTRA_ARGS are word lists
$BOSARIS_DASK evaluate \
    --key "$DATA/key.zarr" \
    --scores "$DATA/system-1.zarr" --scores "$DATA/system-2.zarr" \
    --prior 0.5 --prior 0.01 --prior 0.001 \
    --json "$OUT" \
    --cluster slurm --jobs "$JOBS" --worker-timeout 3600 $EXTRA_ARGS
