"""Any picklable Python object across the ranks (Horovod's broadcast_object
and allgather_object): pickled (cloudpickle when installed, as Horovod, so
lambdas travel too), the sizes first, then the bytes as uint8 arrays."""
import io
import pickle

import numpy as np

from .arrays import _front
from .process_sets import global_process_set

try:
    import cloudpickle as _pickler
except ImportError:  # the standard pickle: everything but lambdas and local classes
    _pickler = pickle


def _dumps(obj):
    buf = io.BytesIO()
    _pickler.dump(obj, buf)
    return np.frombuffer(bytearray(buf.getvalue()), dtype=np.uint8)  # writable: the root broadcasts it in place


def broadcast_object(obj, root_rank=0, name=None, process_set=global_process_set):
    """root_rank's `obj` on every rank of `process_set` (root_rank is a global rank)."""
    from .basics import rank
    name = name or type(obj).__name__
    payload = _dumps(obj) if rank() == root_rank else np.zeros(0, dtype=np.uint8)
    size = np.array([payload.size], dtype=np.int64)
    _front.broadcast_async(size, root_rank, name + ".sz", process_set, inplace=True).wait()
    if rank() != root_rank:
        payload = np.empty(int(size[0]), dtype=np.uint8)
    _front.broadcast_async(payload, root_rank, name + ".t", process_set, inplace=True).wait()
    return obj if rank() == root_rank else pickle.loads(payload.tobytes())


def allgather_object(obj, name=None, process_set=global_process_set):
    """Every rank's `obj`, as a list in rank order."""
    name = name or type(obj).__name__
    payload = _dumps(obj)
    sizes = _front.allgather_async(np.array([payload.size], dtype=np.int64), name + ".sz", process_set).wait()
    gathered = _front.allgather_async(payload, name + ".t", process_set).wait()
    out, at = [], 0
    for n in sizes.tolist():
        out.append(pickle.loads(gathered[at:at + n].tobytes()))
        at += n
    return out
