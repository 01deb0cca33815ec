"""Shutdown and init again, last (the session's runtime ends here): calls
after shutdown raise, a second init gives the same place in the job."""
import numpy as np
import pytest

import chorus


def test_shutdown_then_calls_raise_then_init_again():
    r, n = chorus.rank(), chorus.size()
    chorus.barrier()
    chorus.shutdown()
    assert not chorus.is_initialized()
    with pytest.raises(chorus.PreconditionError):
        chorus.rank()
    with pytest.raises(chorus.PreconditionError):
        chorus.allreduce(np.ones(2, dtype=np.float32))
    chorus.init()
    assert (chorus.rank(), chorus.size()) == (r, n)
    assert np.all(chorus.allreduce(np.ones(2, dtype=np.float32), op=chorus.Sum) == n)
