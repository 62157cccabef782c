"""The machinery of the passes over the trials: the pass runner, its kernels and merges.

A pass is a list of small aggregation specs (:mod:`~bosaris_dask.passes.aggregation`), whose
graph :mod:`~bosaris_dask.passes.pass_graph` builds and :mod:`~bosaris_dask.passes.runner` runs;
each chunk's work is a pure numpy kernel (:mod:`~bosaris_dask.passes.kernels`,
:mod:`~bosaris_dask.passes.grouped_kernels`, :mod:`~bosaris_dask.passes.refine_kernels`), or
its compiled (numba) twin (the ``fast_*`` modules), and the chunks' results merge exactly
(:mod:`~bosaris_dask.passes.compact`, :mod:`~bosaris_dask.passes.exact_sum`). Users meet this
through :func:`bosaris_dask.evaluate` and :func:`bosaris_dask.summarize`
(:mod:`bosaris_dask.engine`); nothing here is needed to run an evaluation.
"""
