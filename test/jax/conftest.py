"""chorus.jax's tests run in every rank of one job, as test/python's do
(test/common/pytest_session.py: same tests, same order). They need a Python
with jax (run_tests.sh installs one into .venv); without it they skip,
unless CHORUS_TEST_REQUIRE_JAX=1 (CI), where that fails."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "common"))
from pytest_session import framework_or_skip, runtime_fixture  # noqa: E402

framework_or_skip("jax", "CHORUS_TEST_REQUIRE_JAX", "jax")

import chorus.jax as hvd  # noqa: E402

runtime = runtime_fixture(hvd)
