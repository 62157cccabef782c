"""The engine's knobs survive a dask.config.set block around the package's first use."""

import subprocess
import sys


def test_a_config_block_around_the_first_evaluation_leaves_the_knobs_readable():
    """dask.config.set restores the config as it found it on exit: when the knobs' defaults were
    registered inside the block (the first evaluation imports the engine), they went with it,
    and every later evaluation failed with KeyError: 'bosaris_dask'."""
    code = (
        "import dask, numpy as np\n"
        "import bosaris_dask as bd\n"
        "from bosaris_dask.trials import make_key, make_scores\n"
        "key = make_key(['a', 'b'], ['x', 'y'], [[1, -1], [-1, 1]])\n"
        "scores = make_scores(['a', 'b'], ['x', 'y'], np.array([[2.0, 0.5], [0.25, 1.0]]))\n"
        "with dask.config.set({'bosaris_dask.keep-limit': 0}):\n"
        "    inside = bd.evaluate(scores, key, priors=[0.5]).eer.values[0]\n"
        "from bosaris_dask import config\n"
        "after = bd.evaluate(scores, key, priors=[0.5]).eer.values[0]\n"
        "print(float(inside), float(after), config.get('block'), config.get('keep-limit'))\n"
    )  # fmt: skip
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120, check=True).stdout.split()  # fmt: skip
    assert out == ["0.0", "0.0", "65536", "16777216"]
