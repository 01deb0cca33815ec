"""SyncBatchNorm (Horovod's hvd.SyncBatchNorm, torch's nn.SyncBatchNorm): in
training, the statistics of the union of every member's batch, as the C++
adapter computes them (frameworks/torch/src/sync_batch_norm.cc): one
allgather of (count, mean, biased variance) per rank in float64, combined
with the parallel-variance formula; backward allreduces the per-channel sums
of dy and dy * (x - mean). CPU and CUDA tensors alike (Horovod's is CUDA-only);
float16/bfloat16 inputs compute in float32."""
import itertools

import torch
from torch.nn.modules.batchnorm import _BatchNorm

from .. import collectives as C
from .. import ops as O
from ..process_sets import global_process_set
from .autograd import front

_modules = itertools.count()


def _reduce_dims(x):
    return [0] + list(range(2, x.dim()))


def _channel_view(t, x):
    return t.view([1, -1] + [1] * (x.dim() - 2))


class _SyncBatchNormFn(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, weight, bias, running_mean, running_var, eps, factor, name, process_set):
        work = x.float() if x.dtype in (torch.float16, torch.bfloat16) else x
        dims = _reduce_dims(work)
        channels = work.shape[1]
        local = torch.cat([torch.tensor([work.numel() / channels], dtype=torch.float64, device=x.device),
                           work.mean(dims).double(), work.var(dims, unbiased=False).double()])
        rows = front.allgather_async(local.unsqueeze(0), name + ".stats", process_set).wait()
        counts, means, variances = rows[:, :1], rows[:, 1:1 + channels], rows[:, 1 + channels:]
        total = counts.sum()
        if total < 2:
            raise ValueError(f"SyncBatchNorm '{name}': expected more than 1 value per channel when training, got "
                             f"{int(total)} over the process set")
        mean = (counts * means).sum(0) / total
        var = (counts * (variances + (means - mean) ** 2)).sum(0) / total
        if running_mean is not None:
            with torch.no_grad():
                running_mean.mul_(1 - factor).add_(mean.to(running_mean.dtype), alpha=factor)
                running_var.mul_(1 - factor).add_((var * total / (total - 1)).to(running_var.dtype), alpha=factor)
        mean_w, invstd = mean.to(work.dtype), torch.rsqrt(var + eps).to(work.dtype)
        xhat = (work - _channel_view(mean_w, work)) * _channel_view(invstd, work)
        ctx.save_for_backward(xhat, weight, invstd)
        ctx.total, ctx.name, ctx.ps, ctx.in_dtype = float(total), name, process_set, x.dtype
        y = xhat
        if weight is not None:
            y = y * _channel_view(weight.to(work.dtype), work) + _channel_view(bias.to(work.dtype), work)
        return y.to(x.dtype)

    @staticmethod
    def backward(ctx, dy):
        xhat, weight, invstd = ctx.saved_tensors
        dy_w = dy.to(xhat.dtype)
        dims = _reduce_dims(xhat)
        sum_dy, sum_dy_xhat = dy_w.sum(dims), (dy_w * xhat).sum(dims)
        both = front.allreduce_async(torch.cat([sum_dy, sum_dy_xhat]), O.Sum, ctx.name + ".grad", 1.0, 1.0,
                                     ctx.ps).wait()
        channels = sum_dy.numel()
        g_dy, g_dy_xhat = both[:channels] / ctx.total, both[channels:] / ctx.total
        scale = invstd if weight is None else invstd * weight.to(invstd.dtype)
        dx = _channel_view(scale, xhat) * (dy_w - _channel_view(g_dy, xhat) - xhat * _channel_view(g_dy_xhat, xhat))
        dweight = sum_dy_xhat.to(weight.dtype) if weight is not None and ctx.needs_input_grad[1] else None
        dbias = sum_dy.to(weight.dtype) if weight is not None and ctx.needs_input_grad[2] else None
        return dx.to(ctx.in_dtype), dweight, dbias, None, None, None, None, None, None


class SyncBatchNorm(_BatchNorm):
    """Batch normalization over the members of `process_set` together; inputs
    of 2 to 5 dimensions, channels on dimension 1. Build every rank's modules
    in the same order (their collectives are named by construction order),
    or give each a `name`."""

    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=True, track_running_stats=True,
                 process_set=global_process_set, name=None):
        super().__init__(num_features, eps, momentum, affine, track_running_stats)
        self.process_set = process_set
        self.collective_name = name or f"sync_batch_norm.{next(_modules)}"

    def _check_input_dim(self, x):
        if x.dim() < 2 or x.dim() > 5:
            raise ValueError(f"expected 2D to 5D input (got {x.dim()}D input)")

    def _refuse(self, why):
        # The others are already in this module's allgather: fail theirs too, then ours.
        name = front.name_of("allgather", self.collective_name + ".stats", self.process_set)  # the others' name
        C.refuse(C.ALLGATHER, name, why, self.process_set.process_set_id or 0).wait()

    def forward(self, x):
        if not isinstance(x, torch.Tensor) or x.dim() < 2 or x.dim() > 5 or x.shape[1] != self.num_features:
            got = f"a {x.dim()}D input of {x.shape[1] if x.dim() > 1 else '?'} channels" \
                if isinstance(x, torch.Tensor) else type(x).__name__
            if self.training or not self.track_running_stats:  # the others are in its allgather then
                self._refuse(f"SyncBatchNorm '{self.collective_name}' expects 2D to 5D input with "
                             f"{self.num_features} channels on dimension 1, got {got}")
            raise ValueError(f"SyncBatchNorm expects 2D to 5D input with {self.num_features} channels, got {got}")
        synced = self.training or not self.track_running_stats
        if not synced:
            return torch.nn.functional.batch_norm(x, self.running_mean, self.running_var, self.weight, self.bias,
                                                  False, 0.0, self.eps)
        factor = 0.0 if self.momentum is None else self.momentum
        if self.training and self.track_running_stats:
            self.num_batches_tracked.add_(1)
            if self.momentum is None:  # a cumulative moving average, as torch
                factor = 1.0 / float(self.num_batches_tracked)
        keep = self.training and self.track_running_stats
        return _SyncBatchNormFn.apply(x, self.weight, self.bias, self.running_mean if keep else None,
                                      self.running_var if keep else None, self.eps, factor,
                                      self.collective_name, self.process_set)
