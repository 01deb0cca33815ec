"""Model and optimizer state across the ranks (horovod/torch/functions.py):
broadcast_parameters, broadcast_optimizer_state; broadcast_object and
allgather_object come from the core."""
import io

import torch

from ..errors import InvalidArgumentError
from ..objects import allgather_object, broadcast_object
from ..process_sets import global_process_set
from .mpi_ops import broadcast_async_

__all__ = ["broadcast_parameters", "broadcast_optimizer_state", "broadcast_object", "allgather_object"]


def broadcast_parameters(params, root_rank, process_set=global_process_set):
    """Overwrites every rank's tensors with root_rank's, in place: a dict
    (model.state_dict(), taken in sorted key order, the keys as names) or a
    list of tensors or (name, tensor) pairs (list(model.named_parameters()))."""
    if isinstance(params, dict):
        params = sorted(params.items())
    elif isinstance(params, list):
        params = [p if isinstance(p, tuple) else (None, p) for p in params]
    else:
        raise ValueError(f"invalid params of type: {type(params)} (a dict such as model.state_dict(), or a list "
                         "such as list(model.named_parameters()))")
    handles = [broadcast_async_(p.data if isinstance(p, torch.nn.Parameter) else p, root_rank,
                                None if name is None else f"broadcast_parameters.{name}", process_set)
               for name, p in params]
    for h in handles:
        h.wait()


def _layout(optimizer):
    return [[tuple(p.shape) for p in group["params"]] for group in optimizer.param_groups]


def _create_state(optimizer):
    """A fresh optimizer's state, made as Horovod makes it: every parameter
    that requires a gradient and has none gets zeros, and the wrapped
    optimizer steps once (not the distributed step: nothing is reduced).
    Unlike Horovod, the parameters are put back afterwards, so weight decay
    does not move them."""
    params = [p for group in optimizer.param_groups for p in group["params"] if p.requires_grad]
    saved = [p.detach().clone() for p in params]
    for p in params:
        if p.grad is None:
            p.grad = torch.zeros_like(p)
    if getattr(optimizer, "_chorus_distributed", False):
        super(type(optimizer), optimizer).step()
    else:
        optimizer.step()
    with torch.no_grad():
        for p, before in zip(params, saved):
            p.copy_(before)


def broadcast_optimizer_state(optimizer, root_rank, model=None, process_set=global_process_set):
    """root_rank's optimizer state and param-group options (lr, momentum,
    ...) loaded into every rank's optimizer: state the others lack is
    created, state the root lacks is dropped. A fresh optimizer (no state
    yet) first gets its state as Horovod's does (_create_state: zero
    gradients and one step of the wrapped optimizer), with its parameters
    left as they were. The optimizers' layouts (groups, parameter shapes)
    are compared first: a rank with another layout makes every rank raise
    InvalidArgumentError naming it."""
    if isinstance(optimizer, torch.optim.LBFGS):
        raise ValueError("cannot broadcast torch.optim.LBFGS state")
    if len(optimizer.state) == 0:
        _create_state(optimizer)
    layouts = allgather_object(_layout(optimizer), "broadcast_optimizer_state.layout", process_set)
    root_index = process_set.ranks.index(root_rank) if process_set.process_set_id else root_rank
    differing = [r for r, layout in zip(process_set.ranks or range(len(layouts)), layouts)
                 if layout != layouts[root_index]]
    if differing:
        raise InvalidArgumentError(f"broadcast_optimizer_state: the optimizer's param groups or parameter shapes on "
                                   f"ranks {differing} differ from root rank {root_rank}'s")
    from ..basics import rank
    blob = None
    if rank() == root_rank:
        buf = io.BytesIO()
        torch.save(optimizer.state_dict(), buf)
        blob = buf.getvalue()
    blob = broadcast_object(blob, root_rank, "broadcast_optimizer_state.state", process_set)
    if rank() != root_rank:
        optimizer.load_state_dict(torch.load(io.BytesIO(blob)))
