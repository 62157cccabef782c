"""Worker processes started by distributed with its fixed malloc trim threshold get glibc's
thresholds raised at their first pass task (bosaris_dask.passes.malloc), once, unless configured
off."""

import os
import platform
import subprocess
import sys

import pytest

from bosaris_dask.passes.malloc import should_tune

glibc = pytest.mark.skipif(
    platform.system() != "Linux" or platform.libc_ver()[0] != "glibc", reason="glibc only"
)


def _clean_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MALLOC_")}
    return env | extra


@pytest.mark.parametrize(
    ("environ", "expected"),
    [({"MALLOC_TRIM_THRESHOLD_": "65536"}, True), ({}, False),
     ({"MALLOC_TRIM_THRESHOLD_": "131072"}, False), ({"MALLOC_TRIM_THRESHOLD_": ""}, False)],
)  # fmt: skip
def test_only_distributeds_own_value_is_tuned(environ, expected):
    assert should_tune(environ) is expected


@glibc
@pytest.mark.parametrize(
    ("env", "expected"), [({"MALLOC_TRIM_THRESHOLD_": "65536"}, "True False"), ({}, "False False")]
)
def test_tune_once_sets_the_thresholds_once_per_process(env, expected):
    code = "from bosaris_dask.passes.malloc import tune_once; print(tune_once(), tune_once())"
    out = subprocess.run([sys.executable, "-c", code], env=_clean_env(**env), capture_output=True,
                         text=True, timeout=60, check=True).stdout.strip()  # fmt: skip
    assert out == expected


@glibc
def test_a_users_local_cluster_is_tuned_by_the_first_pass_unless_configured_off():
    """A plain LocalCluster (distributed's defaults: MALLOC_TRIM_THRESHOLD_=65536 in each
    worker): after one evaluation each worker has been tuned (a later tune_once does nothing);
    with bosaris_dask.worker-malloc=0 on the client, the workers are left alone."""
    code = (
        "import dask, numpy as np\n"
        "from distributed import Client, LocalCluster\n"
        "from bosaris_dask.passes import malloc\n"
        "from bosaris_dask.metrics import evaluate\n"
        "from bosaris_dask.trials import make_key, make_scores\n"
        "def run(setting):\n"
        "    rng = np.random.default_rng(0)\n"
        "    ids = [f'i{k}' for k in range(40)]\n"
        "    key = make_key(ids, ids, np.where(np.eye(40, dtype=bool), 1, -1), chunks=10)\n"
        "    scores = make_scores(ids, ids, rng.normal(size=(40, 40)), chunks=10)\n"
        "    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True,\n"
        "                      dashboard_address=None) as cl, Client(cl) as c:\n"
        "        env = set(c.run(lambda: __import__('os').environ.get('MALLOC_TRIM_THRESHOLD_'))"
        ".values())\n"
        "        with dask.config.set({'bosaris_dask.worker-malloc': setting}):\n"
        "            evaluate(scores, key, priors=[0.5])\n"
        "        return env, set(c.run(malloc.tune_once).values())\n"
        "if __name__ == '__main__':\n"
        "    print(run(1), run(0))\n"
    )  # fmt: skip
    out = subprocess.run([sys.executable, "-c", code], env=_clean_env(), capture_output=True,
                         text=True, timeout=180, check=True).stdout.strip()  # fmt: skip
    assert out == "({'65536'}, {False}) ({'65536'}, {True})"
