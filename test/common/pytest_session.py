"""What the conftest of every pytest folder that runs in the ranks of a job
(test/python, test/tensorflow, test/jax) shares: every rank collects the
same tests in the same order, so their collectives meet; the checkout's
package is tested unless CHORUS_TEST_INSTALLED=1 (then pip's); a framework
missing skips the folder, unless its CHORUS_TEST_REQUIRE_* is 1 (CI), where
that fails; the runtime is initialized once per session."""
import importlib
import os
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
if os.environ.get("CHORUS_TEST_INSTALLED") != "1":  # 1: test the chorus that pip installed, not the checkout's
    sys.path.insert(0, os.path.join(ROOT, "python"))


def framework_or_skip(module, require_variable, what):
    """Imports `module`; without it the calling conftest's folder is skipped
    (or, with `require_variable`=1, the ImportError is raised)."""
    try:
        importlib.import_module(module)
    except ImportError:
        if os.environ.get(require_variable) == "1":
            raise
        pytest.skip(f"no {what} in this Python", allow_module_level=True)


def runtime_fixture(hvd):
    """The session's runtime over `hvd` (chorus, chorus.tensorflow, ...):
    init once; at the end a barrier, so no rank shuts down while another
    still runs a test, then shutdown."""

    @pytest.fixture(scope="session", autouse=True)
    def runtime():
        hvd.init()
        yield
        if hvd.is_initialized():
            hvd.barrier()
            hvd.shutdown()

    return runtime
