"""nbmake runs the notebooks that ``tests/test_notebook_outputs.py`` does not: that test executes
the first, second and fourth notebooks itself and compares their saved outputs, so running them
under nbmake as well only doubled their minute of the test run."""

collect_ignore = [
    "01_quickstart.ipynb",
    "02_calibration_and_fusion.ipynb",
    "04_conditions_and_intervals.ipynb",
]
