"""Autograd through the collectives, with Horovod's backward formulas and the
C++ adapter's factors (frameworks/torch/src/autograd_ops.cc is the reference;
names here carry horovod.torch's operation prefix, the adapter's do not):
allreduce and alltoall give the gradient of the sum of every rank's loss;
allgather and broadcast average it over the set (Horovod's); reducescatter
multiplies it by the set size for Sum. The backward collective of a forward
named N is named N + '.grad', so every rank agrees whatever the order."""
import torch

from .. import ops as O
from ..errors import InvalidArgumentError
from ..frontend import Frontend
from ..process_sets import global_process_set
from .tensors import TorchAdapter

front = Frontend(TorchAdapter(), op_prefixed_names=True)  # names as horovod.torch's


def _differentiable(ctx, what):
    if ctx.op not in (O.Sum, O.Average):
        raise InvalidArgumentError(f"{what} '{ctx.name}' with {O.NAMES[ctx.op]} has no gradient; only Sum and "
                                   "Average are differentiable")


def _set_size(process_set):
    return process_set.size()


def _set_rank(process_set):
    return process_set.rank()


class AllreduceFn(torch.autograd.Function):
    @staticmethod
    def forward(ctx, tensor, op, name, prescale, postscale, process_set):
        ctx.op, ctx.name, ctx.pre, ctx.post, ctx.ps = op, name, prescale, postscale, process_set
        return front.allreduce_async(tensor, op, name, prescale, postscale, process_set).wait()

    @staticmethod
    def backward(ctx, grad):
        _differentiable(ctx, "allreduce of tensor")
        out = front.allreduce_async(grad, ctx.op, ctx.name + ".grad", ctx.pre, ctx.post, ctx.ps).wait()
        return out, None, None, None, None, None


class GroupedAllreduceFn(torch.autograd.Function):
    @staticmethod
    def forward(ctx, op, name, prescale, postscale, process_set, *tensors):
        ctx.op, ctx.name, ctx.pre, ctx.post, ctx.ps = op, name, prescale, postscale, process_set
        return tuple(front.grouped_allreduce_async(tensors, op, name, prescale, postscale, process_set).wait())

    @staticmethod
    def backward(ctx, *grads):
        _differentiable(ctx, "grouped allreduce of tensor")
        outs = front.grouped_allreduce_async(grads, ctx.op, ctx.name + ".grad", ctx.pre, ctx.post, ctx.ps).wait()
        return (None, None, None, None, None, *outs)


class AllgatherFn(torch.autograd.Function):
    @staticmethod
    def forward(ctx, tensor, name, process_set):
        ctx.name, ctx.ps = name, process_set
        ctx.rows = tensor.shape[0] if tensor.dim() > 0 else 0
        return front.allgather_async(tensor, name, process_set).wait()

    @staticmethod
    def backward(ctx, grad):
        rows = front.allgather_async(torch.tensor([ctx.rows], dtype=torch.int64), ctx.name + ".grad.rows",
                                     ctx.ps).wait()
        averaged = front.allreduce_async(grad, O.Average, ctx.name + ".grad", 1.0, 1.0, ctx.ps).wait()
        offset = int(rows[:_set_rank(ctx.ps)].sum())
        return averaged.narrow(0, offset, ctx.rows), None, None


class BroadcastFn(torch.autograd.Function):
    @staticmethod
    def forward(ctx, tensor, root_rank, name, process_set):
        ctx.name, ctx.ps, ctx.root = name, process_set, root_rank
        return front.broadcast_async(tensor, root_rank, name, process_set).wait()

    @staticmethod
    def backward(ctx, grad):
        from ..basics import rank
        averaged = front.allreduce_async(grad, O.Average, ctx.name + ".grad", 1.0, 1.0, ctx.ps).wait()
        if rank() != ctx.root:
            averaged.zero_()
        return averaged, None, None, None


class AlltoallFn(torch.autograd.Function):
    @staticmethod
    def forward(ctx, tensor, splits, name, process_set):
        ctx.name, ctx.ps = name, process_set
        ctx.rows = tensor.shape[0] if tensor.dim() > 0 else 0
        output, received = front.alltoall_async(tensor, splits, name, process_set).wait()
        ctx.received = received.tolist()
        ctx.mark_non_differentiable(received)
        return output, received

    @staticmethod
    def backward(ctx, grad, _received_grad):
        back, _ = front.alltoall_async(grad.contiguous(), ctx.received, ctx.name + ".grad", ctx.ps).wait()
        missing = ctx.rows - back.shape[0]
        if missing > 0:  # rows past the splits were not sent: zero gradient
            back = torch.cat([back, back.new_zeros((missing,) + tuple(back.shape[1:]))])
        return back, None, None, None


class ReducescatterFn(torch.autograd.Function):
    @staticmethod
    def forward(ctx, tensor, op, name, process_set, prescale, postscale):
        ctx.op, ctx.name, ctx.ps, ctx.pre, ctx.post = op, name, process_set, prescale, postscale
        return front.reducescatter_async(tensor, op, name, process_set, prescale, postscale).wait()

    @staticmethod
    def backward(ctx, grad):
        _differentiable(ctx, "reducescatter of tensor")
        scale = ctx.pre * ctx.post * (_set_size(ctx.ps) if ctx.op == O.Sum else 1)
        gathered = front.allgather_async(grad.contiguous(), ctx.name + ".grad", ctx.ps).wait()
        return (gathered if scale == 1 else gathered.mul_(scale)), None, None, None, None, None


def wants_grad(*tensors):
    return torch.is_grad_enabled() and any(isinstance(t, torch.Tensor) and t.requires_grad for t in tensors)


def set_or_global(process_set):
    return global_process_set if process_set is None else process_set
