"""horovod.tensorflow's API over Chorus: `import chorus.tensorflow as hvd` is
the only change a Horovod TensorFlow 2 script needs. The collectives are
TensorFlow ops from a library compiled against no TensorFlow (it looks up
TensorFlow's stable C API when loaded), so one install serves every
TensorFlow 2.x; they run eagerly and inside tf.function. docs/tensorflow.md
lists every call, with Horovod's name where ours differs."""
from ..basics import (ccl_built, cross_rank, cross_size, cuda_built, ddl_built, gloo_built, gloo_enabled, init,
                      is_homogeneous, is_initialized, is_running, local_rank, local_size, mpi_built, mpi_enabled,
                      mpi_threads_supported, nccl_built, rank, rocm_built, shutdown, size, tcp_enabled)
from ..errors import ChorusError, HorovodInternalError
from ..ops import Adasum, Average, Max, Min, Product, Sum
from ..process_sets import ProcessSet, add_process_set, global_process_set, remove_process_set
from . import elastic, util  # hvd.elastic: TensorFlowKerasState, TensorFlowState, run; hvd.util
from .compression import Compression
from .functions import allgather_object, broadcast_global_variables, broadcast_object, broadcast_variables
from .gradient_tape import DistributedGradientTape, PartialDistributedGradientTape
from .legacy_optimizer import DistributedOptimizer
from .util import _executing_eagerly  # horovod.tensorflow has it here too
from .mpi_ops import (allgather, allreduce, alltoall, barrier, broadcast, broadcast_, grouped_allgather,
                      grouped_allreduce, grouped_reducescatter, join, reducescatter)


def size_op(process_set_id=0, name=None):
    """The size of the set as an int32 tensor (Horovod's size_op)."""
    import tensorflow as tf
    from ..process_sets import _registered
    return tf.constant(size() if process_set_id == 0 else _registered[process_set_id].size(), tf.int32, name=name)


def gpu_available(ext_base_name="tensorflow", verbose=False):
    """Horovod's check that its TensorFlow ops can run on GPU tensors: False
    here, as chorus.tensorflow's kernels are CPU kernels (TensorFlow copies
    a GPU tensor to the host for them; docs/tensorflow.md)."""
    if verbose:
        print("chorus.tensorflow: the collectives are CPU kernels; GPU tensors go through host memory")
    return False


def process_set_included_op(process_set_id=0, name=None):
    """1 (int32) when this rank is a member of the set, else 0 (Horovod's
    process_set_included_op); an id no set has is a ValueError."""
    import tensorflow as tf
    from ..process_sets import _registered
    if process_set_id != 0 and process_set_id not in _registered:
        raise ValueError(f"chorus: no process set has id {process_set_id}")
    included = process_set_id == 0 or _registered[process_set_id].included()
    return tf.constant(1 if included else 0, tf.int32, name=name)


def rank_op(name=None):
    import tensorflow as tf
    return tf.constant(rank(), tf.int32, name=name)


def local_rank_op(name=None):
    import tensorflow as tf
    return tf.constant(local_rank(), tf.int32, name=name)


def local_size_op(name=None):
    import tensorflow as tf
    return tf.constant(local_size(), tf.int32, name=name)


def __getattr__(name):
    # Imported on first use: it needs Keras 3, which `import chorus.tensorflow` alone does not.
    if name == "SyncBatchNormalization":
        from .sync_batch_norm import SyncBatchNormalization
        return SyncBatchNormalization
    raise AttributeError(f"module 'chorus.tensorflow' has no attribute '{name}'")
