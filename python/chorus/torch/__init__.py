"""horovod.torch's API over Chorus: `import chorus.torch as hvd` is the only
change a Horovod script needs. Pure Python over the C ABI: nothing here is
compiled against torch, so one install serves every torch version.
docs/python.md lists every call, with Horovod's name where ours differs."""
from ..api import barrier, join, poll, start_timeline, stop_timeline, synchronize
from ..basics import (ccl_built, cross_rank, cross_size, cuda_built, ddl_built, gloo_built, gloo_enabled, init,
                      is_homogeneous, is_initialized, is_running, local_rank, local_size, mpi_built, mpi_enabled,
                      mpi_threads_supported, nccl_built, rank, rocm_built, shutdown, size, tcp_enabled)
from ..errors import ChorusError, HorovodInternalError, InvalidArgumentError, TimeoutError
from ..ops import Adasum, Average, Max, Min, Product, Sum
from ..process_sets import ProcessSet, add_process_set, global_process_set, remove_process_set
from . import elastic  # hvd.elastic: TorchState, ElasticSampler, run
from .compression import Compression
from .functions import allgather_object, broadcast_object, broadcast_optimizer_state, broadcast_parameters
from .mpi_ops import (allgather, allgather_async, allreduce, allreduce_, allreduce_async, allreduce_async_, alltoall,
                      alltoall_async, broadcast, broadcast_, broadcast_async, broadcast_async_, grouped_allgather,
                      grouped_allgather_async, grouped_allreduce, grouped_allreduce_, grouped_allreduce_async,
                      grouped_allreduce_async_, grouped_reducescatter, grouped_reducescatter_async, reducescatter,
                      reducescatter_async, sparse_allreduce_async)
from .optimizer import DistributedOptimizer
from .sync_batch_norm import SyncBatchNorm
