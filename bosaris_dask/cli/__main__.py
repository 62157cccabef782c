"""``python -m bosaris_dask.cli``: the ``bosaris-dask`` command."""

import sys

from bosaris_dask.cli import main

sys.exit(main())
