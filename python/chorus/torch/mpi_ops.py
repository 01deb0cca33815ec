"""horovod.torch's collective calls on torch tensors (horovod/torch/mpi_ops.py):
the async calls return a handle for poll() / synchronize(); the synchronous
ones are differentiable (autograd.py) and take a compression where Horovod's do."""
import torch

from .. import collectives as C
from .. import ops as O
from ..api import collective_functions, poll, synchronize  # noqa: F401 (horovod.torch.mpi_ops has them here too)
from ..frontend import Refused
from ..process_sets import global_process_set
from .autograd import (AllgatherFn, AllreduceFn, AlltoallFn, BroadcastFn, GroupedAllreduceFn, ReducescatterFn, front,
                       set_or_global, wants_grad)
from .compression import Compression

_async = collective_functions(front)

allreduce_async = _async["allreduce_async"]
allreduce_async_ = _async["allreduce_async_"]
allreduce_ = _async["allreduce_"]
grouped_allreduce_async = _async["grouped_allreduce_async"]
grouped_allreduce_async_ = _async["grouped_allreduce_async_"]
grouped_allreduce_ = _async["grouped_allreduce_"]
allgather_async = _async["allgather_async"]
grouped_allgather_async = _async["grouped_allgather_async"]
broadcast_async = _async["broadcast_async"]
broadcast_async_ = _async["broadcast_async_"]
broadcast_ = _async["broadcast_"]
alltoall_async = _async["alltoall_async"]
reducescatter_async = _async["reducescatter_async"]
grouped_reducescatter_async = _async["grouped_reducescatter_async"]


def allreduce(tensor, average=None, name=None, compression=Compression.none, op=None, prescale_factor=1.0,
              postscale_factor=1.0, process_set=global_process_set):
    """A new tensor: `tensor` reduced over the ranks of `process_set` (Average
    by default), differentiable; `compression` applies on the wire."""
    op = O.resolve(op, average)
    name = front.name_of("allreduce", name, process_set)
    compressed, ctx = compression.compress(tensor)
    if wants_grad(compressed):
        out = AllreduceFn.apply(compressed, op, name, float(prescale_factor), float(postscale_factor),
                                set_or_global(process_set))
    else:
        out = front.allreduce_async(compressed, op, name, prescale_factor, postscale_factor, process_set).wait()
    return compression.decompress(out, ctx)


def grouped_allreduce(tensors, average=None, name=None, compression=Compression.none, op=None, prescale_factor=1.0,
                      postscale_factor=1.0, process_set=global_process_set):
    op = O.resolve(op, average)
    name = front.name_of("grouped_allreduce", name, process_set)
    packed = [compression.compress(t) for t in tensors]
    inputs = [c for c, _ in packed]
    if wants_grad(*inputs):
        outs = GroupedAllreduceFn.apply(op, name, float(prescale_factor), float(postscale_factor),
                                        set_or_global(process_set), *inputs)
    else:
        outs = front.grouped_allreduce_async(inputs, op, name, prescale_factor, postscale_factor, process_set).wait()
    return [compression.decompress(o, ctx) for o, (_, ctx) in zip(outs, packed)]


def allgather(tensor, name=None, process_set=global_process_set):
    """Every rank's `tensor` concatenated along the first dimension (which may differ per rank)."""
    name = front.name_of("allgather", name, process_set)
    if wants_grad(tensor):
        return AllgatherFn.apply(tensor, name, set_or_global(process_set))
    return front.allgather_async(tensor, name, process_set).wait()


def grouped_allgather(tensors, name=None, process_set=global_process_set):
    tensors = list(tensors)
    if wants_grad(*tensors):
        base = front.name_of("grouped_allgather", name, process_set)
        return [allgather(t, f"{base}.{i}", process_set) for i, t in enumerate(tensors)]
    return front.grouped_allgather_async(tensors, name, process_set).wait()


def broadcast(tensor, root_rank, name=None, process_set=global_process_set):
    """A new tensor with root_rank's values (root_rank is a global rank)."""
    name = front.name_of("broadcast", name, process_set)
    if wants_grad(tensor):
        return BroadcastFn.apply(tensor, int(root_rank), name, set_or_global(process_set))
    return front.broadcast_async(tensor, root_rank, name, process_set).wait()


def alltoall(tensor, splits=None, name=None, process_set=global_process_set):
    """Rank i sends splits[j] rows to rank j (equal parts when None). Returns the
    received rows; with `splits`, (output, received_splits) as Horovod."""
    name = front.name_of("alltoall", name, process_set)
    try:
        split_list = None if splits is None or not wants_grad(tensor) else front.a.int_list(splits)
    except Refused:
        split_list = None  # refused through the negotiation below, on every rank
    if wants_grad(tensor) and (splits is None or split_list is not None):
        output, received = AlltoallFn.apply(tensor, split_list, name, set_or_global(process_set))
    else:
        output, received = front.alltoall_async(tensor, splits, name, process_set).wait()
    return (output, received) if splits is not None else output


def reducescatter(tensor, name=None, compression=Compression.none, op=O.Average, process_set=global_process_set,
                  prescale_factor=1.0, postscale_factor=1.0):
    """This rank's block of rows of the reduced tensor (the first ranks one row more when uneven)."""
    op = O.resolve(op)
    name = front.name_of("reducescatter", name, process_set)
    compressed, ctx = compression.compress(tensor)
    if wants_grad(compressed):
        out = ReducescatterFn.apply(compressed, op, name, set_or_global(process_set), float(prescale_factor),
                                    float(postscale_factor))
    else:
        out = front.reducescatter_async(compressed, op, name, process_set, prescale_factor, postscale_factor).wait()
    return compression.decompress(out, ctx)


def grouped_reducescatter(tensors, name=None, compression=Compression.none, op=O.Average,
                          process_set=global_process_set, prescale_factor=1.0, postscale_factor=1.0):
    op = O.resolve(op)
    tensors = list(tensors)
    packed = [compression.compress(t) for t in tensors]
    inputs = [c for c, _ in packed]
    if wants_grad(*inputs):
        base = front.name_of("grouped_reducescatter", name, process_set)
        outs = [ReducescatterFn.apply(c, op, f"{base}.{i}", set_or_global(process_set), float(prescale_factor),
                                      float(postscale_factor)) for i, c in enumerate(inputs)]
    else:
        outs = front.grouped_reducescatter_async(inputs, op, name, process_set, prescale_factor,
                                                 postscale_factor).wait()
    return [compression.decompress(o, ctx) for o, (_, ctx) in zip(outs, packed)]


class _SparseHandle:
    """sparse_allreduce_async's handle: the gathered indices and values, made one sparse tensor at the wait."""

    def __init__(self, indices, values, size, divisor, name):
        self._indices, self._values, self._size, self._divisor, self.name = indices, values, size, divisor, name
        self._result = None

    def poll(self):
        return self._indices.poll() and self._values.poll()

    def wait(self, timeout=None):
        if self._result is None:
            indices = self._indices.wait(timeout)
            values = self._values.wait(timeout)
            if self._divisor != 1:
                values = values / self._divisor
            self._result = torch.sparse_coo_tensor(indices.t(), values, self._size)
        return self._result

    synchronize = wait

    def __call__(self):  # Horovod's sparse handle is a callable
        return self.wait()


def sparse_allreduce_async(tensor, name=None, op=O.Average, process_set=global_process_set):
    """The sum (or average) of every rank's sparse `tensor`, as one allgather of
    its indices and one of its values (Horovod's); the result is an uncoalesced
    sparse tensor. Only Sum and Average; a dense tensor is refused."""
    name = front.name_of("sparse_allreduce", name, process_set)
    op = O.resolve(op)
    why = None
    if op not in (O.Sum, O.Average):
        why = f"sparse allreduce: op {O.NAMES[op]} is not supported (Sum, Average)"
    elif not isinstance(tensor, torch.Tensor) or not tensor.is_sparse:
        why = f"sparse allreduce: expected a sparse COO tensor, got {type(tensor).__name__}"
    parts = {part: front.name_of("allgather", f"{name}.{part}", process_set) for part in ("indices", "values")}
    if why is not None:  # refused through the negotiation (the same names): the other ranks' allgathers fail too
        set_id = set_or_global(process_set).process_set_id
        for part in ("indices", "values"):
            C.refuse(C.ALLGATHER, parts[part], why, set_id).wait()
    t = tensor.coalesce()
    indices = allgather_async(t.indices().t().contiguous(), name=parts["indices"], process_set=process_set)
    values = allgather_async(t.values().contiguous(), name=parts["values"], process_set=process_set)
    divisor = set_or_global(process_set).size() if op == O.Average else 1
    return _SparseHandle(indices, values, t.size(), divisor, name)
