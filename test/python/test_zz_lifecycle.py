"""Shutdown and init again, last (the session's runtime ends here): calls
after shutdown raise, a second init gives the same place in the job; one
rank's shutdown leaves the others initialized (Horovod's meaning), with
calls failing naming it."""
import time

import numpy as np
import pytest

import chorus


def test_shutdown_then_calls_raise_then_init_again():
    r, n = chorus.rank(), chorus.size()
    chorus.barrier()
    chorus.shutdown()
    assert not chorus.is_initialized()
    assert not chorus.is_running()
    with pytest.raises(chorus.PreconditionError):
        chorus.rank()
    with pytest.raises(chorus.PreconditionError):
        chorus.allreduce(np.ones(2, dtype=np.float32))
    chorus.init()
    assert chorus.is_initialized() and chorus.is_running()
    assert (chorus.rank(), chorus.size()) == (r, n)
    assert np.all(chorus.allreduce(np.ones(2, dtype=np.float32), op=chorus.Sum) == n)


def test_init_with_duplicate_process_sets_is_refused_then_init_again():
    """Horovod's test_process_sets_static: init(process_sets=...) with a
    duplicate raises ValueError and leaves Chorus not initialized; a good
    list then registers its sets."""
    n = chorus.size()
    if n < 2:
        pytest.skip("needs 2 ranks or more")
    chorus.shutdown()
    with pytest.raises(ValueError, match="entry number 2 is a duplicate"):
        chorus.init(process_sets=[chorus.ProcessSet([0]), chorus.ProcessSet(range(1, n)), chorus.ProcessSet([0])])
    assert not chorus.is_initialized()
    sets = [chorus.ProcessSet([0]), chorus.ProcessSet(reversed(range(1, n)))]
    chorus.init(process_sets=sets)
    assert [s.process_set_id for s in sets] == [1, 2] and sets[1].ranks == list(range(1, n))
    for s in sets:
        chorus.remove_process_set(s)


def test_another_ranks_shutdown_leaves_this_one_initialized():
    """Horovod's test_horovod_is_initialized at several ranks: the last rank
    shuts down while the others still assert is_initialized()."""
    r, n = chorus.rank(), chorus.size()
    if n < 2:
        pytest.skip("needs 2 ranks or more")
    leaver = n - 1
    chorus.barrier()
    if r == leaver:
        chorus.shutdown()
        assert not chorus.is_initialized()
    else:
        deadline = time.monotonic() + 60
        while chorus.is_running() and time.monotonic() < deadline:
            time.sleep(0.01)
        assert not chorus.is_running()
        assert chorus.is_initialized()  # until this rank's own shutdown()
        with pytest.raises(chorus.AbortedError, match=f"rank {leaver} called shutdown"):
            chorus.allreduce(np.ones(2, dtype=np.float32), name="after.remote.shutdown")
        chorus.shutdown()
        assert not chorus.is_initialized()
    chorus.init()
    assert np.all(chorus.allreduce(np.ones(2, dtype=np.float32), op=chorus.Sum) == n)
