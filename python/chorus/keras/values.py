"""horovod.keras's collectives on tensor-compatible values (a Keras or
backend tensor, a NumPy array, a list): each returns a tensor of the Keras
backend. They go through Chorus's NumPy path, so they serve every backend;
they run eagerly (outside a traced train step)."""
import keras
import numpy as np

from .. import ops as O
from ..process_sets import global_process_set


def _array(value):
    return np.ascontiguousarray(keras.ops.convert_to_numpy(value))


def _compressed(array, compression):
    """fp16 / bf16 compression of a float array on the wire, as Horovod's."""
    name = getattr(compression, "__name__", "").lower()
    if array.dtype.kind != "f" or name.startswith("none") or not name:
        return array, None
    if name.startswith("fp16"):
        return array.astype(np.float16), array.dtype
    raise ValueError(f"chorus.keras.allreduce: compression {compression.__name__} is not supported here "
                     "(Compression.none or Compression.fp16)")


def allreduce(value, name=None, average=None, prescale_factor=1.0, postscale_factor=1.0, op=None,
              compression=None, process_set=global_process_set):
    """`value` reduced over the ranks of `process_set` (Average by default)."""
    import chorus
    array, dtype = _compressed(_array(value), compression)
    out = chorus.allreduce(array, average=average, name=name, op=op, prescale_factor=prescale_factor,
                           postscale_factor=postscale_factor, process_set=process_set)
    return keras.ops.convert_to_tensor(out if dtype is None else out.astype(dtype))


def allgather(value, name=None, process_set=global_process_set):
    """Every rank's `value` concatenated along the first dimension, in rank order."""
    import chorus
    return keras.ops.convert_to_tensor(chorus.allgather(_array(value), name=name, process_set=process_set))


def broadcast(value, root_rank, name=None, process_set=global_process_set):
    """root_rank's `value` on every rank."""
    import chorus
    return keras.ops.convert_to_tensor(chorus.broadcast(_array(value), root_rank, name=name,
                                                        process_set=process_set))


def reducescatter(value, name=None, op=O.Average, process_set=global_process_set):
    """This rank's block of rows of the reduction (Average by default)."""
    import chorus
    return keras.ops.convert_to_tensor(chorus.reducescatter(_array(value), name=name, op=op,
                                                            process_set=process_set))
