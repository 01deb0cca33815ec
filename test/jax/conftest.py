"""chorus.jax's tests run in every rank of one job, as test/python's do (its
conftest explains the rules): same tests, same order. They need a Python
with jax (run_tests.sh installs one into .venv); without it they skip,
unless CHORUS_TEST_REQUIRE_JAX=1 (CI), where that fails."""
import os
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
if os.environ.get("CHORUS_TEST_INSTALLED") != "1":
    sys.path.insert(0, os.path.join(ROOT, "python"))

try:
    import jax  # noqa: F401
except ImportError:
    if os.environ.get("CHORUS_TEST_REQUIRE_JAX") == "1":
        raise
    pytest.skip("no jax in this Python", allow_module_level=True)

import chorus.jax as hvd  # noqa: E402


@pytest.fixture(scope="session", autouse=True)
def runtime():
    hvd.init()
    yield
    if hvd.is_initialized():
        hvd.barrier()
        hvd.shutdown()
