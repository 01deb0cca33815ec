"""Chorus from JAX (docs/jax.md): Horovod's collectives on jax.Array, inside
and outside jax.jit, through XLA's FFI.

    import chorus.jax as hvd
    hvd.init()
    grads = hvd.grouped_allreduce(grads)          # a whole pytree, one call
    tx = hvd.optax.DistributedGradientTransformation(optax.adam(1e-3))

Inside jax.jit the collectives are custom calls to Chorus's FFI handlers
(libchorus_jax.so, built against jaxlib's header-only XLA FFI C API), run
in program order by an ordered effect; outside a trace they go through
Chorus's NumPy path. `chorus.jax.optax` needs optax."""
import jax as _jax

from .. import basics as _basics
from ..basics import (cross_rank, cross_size, init, is_initialized, is_running, local_rank, local_size, rank,
                      shutdown, size)
from ..objects import allgather_object, broadcast_object
from ..ops import Adasum, Average, Max, Min, Product, Sum
from ..process_sets import ProcessSet, add_process_set, global_process_set, remove_process_set
from . import elastic
from .compression import Compression
from .functions import broadcast_parameters
from .mpi_ops import (allgather, allreduce, alltoall, barrier, broadcast, grouped_allgather, grouped_allreduce,
                      grouped_reducescatter, join, reducescatter)

# JAX dispatches jitted calls asynchronously: their collectives finish before
# the runtime stops (shutdown() or the end of the program).
_basics._before_shutdown.append(_jax.effects_barrier)

__all__ = ["init", "shutdown", "is_initialized", "is_running", "size", "rank", "local_size", "local_rank",
           "cross_size", "cross_rank", "allreduce", "grouped_allreduce", "allgather", "grouped_allgather",
           "broadcast", "alltoall", "reducescatter", "grouped_reducescatter", "barrier", "join",
           "broadcast_parameters", "broadcast_object", "allgather_object", "Compression", "elastic", "Sum",
           "Average", "Min", "Max", "Product", "Adasum", "ProcessSet", "add_process_set", "remove_process_set",
           "global_process_set"]


def __getattr__(name):
    if name == "optax":  # needs optax: imported on first use
        import importlib
        return importlib.import_module(".optax", __name__)
    raise AttributeError(f"module 'chorus.jax' has no attribute '{name}'")
