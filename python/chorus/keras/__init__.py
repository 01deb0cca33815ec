"""horovod.keras's API for Keras 3 (also as chorus.tensorflow.keras, under
Horovod's path horovod.tensorflow.keras): DistributedOptimizer so that
model.fit trains data-parallel unchanged, broadcast_variables, and the
callbacks. Backends: tensorflow, jax, torch (KERAS_BACKEND); docs/tensorflow.md."""
import keras as _keras

if int(_keras.__version__.split(".")[0]) < 3:
    raise ImportError(f"chorus.keras needs Keras 3 (TensorFlow 2.16 or later brings it); this is Keras "
                      f"{_keras.__version__}")

from ..basics import (cross_rank, cross_size, init, is_initialized, local_rank, local_size, rank, shutdown,
                      size)
from ..objects import allgather_object, broadcast_object
from ..ops import Adasum, Average, Max, Min, Product, Sum
from ..process_sets import ProcessSet, add_process_set, global_process_set, remove_process_set
from . import callbacks, elastic
from .callbacks import broadcast_variables
from .optimizer import DistributedOptimizer
from .values import allgather, allreduce, broadcast, reducescatter



def _backend_compression():
    """Horovod's hvd.Compression, as the Keras backend's front end has it."""
    backend = _keras.backend.backend()
    if backend == "jax":
        from ..jax.compression import Compression as backend_compression
    elif backend == "torch":
        from ..torch.compression import Compression as backend_compression
    elif backend == "tensorflow":
        from ..tensorflow.compression import Compression as backend_compression
    else:  # DistributedOptimizer refuses this backend by name (optimizer.py); values need no framework
        from ..compression import NoneCompressor
        backend_compression = type("Compression", (), {"none": NoneCompressor})
    return backend_compression


Compression = _backend_compression()

__all__ = ["DistributedOptimizer", "Compression", "broadcast_variables", "allreduce", "allgather", "broadcast",
           "reducescatter", "callbacks", "elastic", "init", "shutdown", "is_initialized", "size", "rank",
           "local_size", "local_rank", "cross_size", "cross_rank", "broadcast_object", "allgather_object",
           "Average", "Sum", "Adasum", "Min", "Max", "Product", "ProcessSet", "add_process_set",
           "remove_process_set", "global_process_set"]
