"""Chorus from Python: the framework-agnostic core over the C ABI.

    import numpy as np, chorus
    chorus.init()
    total = chorus.allreduce(np.ones(4, np.float32), op=chorus.Sum)

Collectives take NumPy arrays or any CPU array with __dlpack__ and return
NumPy arrays; chorus.torch has horovod.torch's API on torch tensors.
docs/python.md has the whole API.
"""
from . import elastic, errors  # chorus.elastic: horovod.common.elastic's State, ObjectState, run
from ._library import ABI_VERSION, lib as _lib, path as library_path
from .api import barrier, collective_functions, join, poll, start_timeline, stop_timeline, synchronize
from .arrays import _front
from .basics import (ccl_built, cross_rank, cross_size, cuda_built, ddl_built, gloo_built, gloo_enabled, init,
                     is_homogeneous, is_initialized, is_running, local_rank, local_size, mpi_built, mpi_enabled,
                     mpi_threads_supported, nccl_built, rank, rocm_built, shutdown, size, tcp_enabled)
from .errors import (AbortedError, ChorusError, HorovodInternalError, InternalError, InvalidArgumentError,
                     PreconditionError, TimeoutError, UnknownHandleError)
from .handles import Handle
from .objects import allgather_object, broadcast_object
from .ops import Adasum, Average, Max, Min, Product, Sum
from .process_sets import ProcessSet, add_process_set, global_process_set, remove_process_set

globals().update(collective_functions(_front))

__version__ = "0.3.0"


def abi_version():
    """The C ABI version of the loaded library."""
    return _lib.chorus_abi_version()
