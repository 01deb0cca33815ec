"""The Python tests run in every rank of one job (chorusrun, mpirun or
torchrun start N copies of pytest); every rank collects the same tests in
the same order, so their collectives meet (test/common/pytest_session.py).
Chorus is initialized once per session; tests that need a fresh runtime
shut it down and init again."""
import os
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "common"))
from pytest_session import runtime_fixture  # noqa: E402

import chorus  # noqa: E402

runtime = runtime_fixture(chorus)


@pytest.fixture
def even_odd_sets():
    """The even and odd ranks as two registered process sets (every rank registers both)."""
    n = chorus.size()
    if n < 2:
        pytest.skip("needs 2 ranks or more")
    even = chorus.add_process_set(list(range(0, n, 2)))
    odd = chorus.add_process_set(list(range(1, n, 2)))
    yield even, odd
    chorus.remove_process_set(even)
    chorus.remove_process_set(odd)


def multi_rank():
    return pytest.mark.skipif(chorus.is_initialized() and chorus.size() < 2, reason="needs 2 ranks or more")
