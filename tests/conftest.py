"""Shared pytest configuration: hypothesis profiles (``HYPOTHESIS_PROFILE=ci`` in CI)."""

import os

from hypothesis import settings

settings.register_profile("ci", max_examples=60, deadline=None, derandomize=True)
settings.register_profile("dev", max_examples=30, deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "dev"))
