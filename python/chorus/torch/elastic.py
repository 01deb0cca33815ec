"""horovod.torch.elastic over Chorus (`hvd.elastic` after `import chorus.torch
as hvd`): TorchState, ElasticSampler and run.

    state = hvd.elastic.TorchState(model, optimizer, sampler=sampler, epoch=0, batch=0)
    state.register_reset_callbacks([lambda: scale_lr(hvd.size())])

    @hvd.elastic.run
    def train(state):
        ...

Models, optimizers, learning-rate schedulers and ElasticSamplers among the
values are saved, restored and synced by a handler of their type (as
Horovod's); every other value as ObjectState keeps it (pickled).
"""
import copy

import torch

from ..basics import rank
from ..elastic import HorovodInternalError, HostsUpdatedInterrupt, ObjectState, _check_names, run, run_fn
from .elastic_sampler import ElasticSampler
from .functions import allgather_object, broadcast_object, broadcast_optimizer_state, broadcast_parameters

__all__ = ["TorchState", "ElasticSampler", "run", "run_fn", "HostsUpdatedInterrupt", "HorovodInternalError"]


class _Handler:
    """Save, restore and sync of one value kept by TorchState. Building one
    and replacing its value make no collective (a newcomer builds its state
    while the survivors are already syncing)."""

    def __init__(self, name, value):
        self.name, self.value = name, value
        self._snapshot()

    def set_value(self, value):
        """A new object under the same name (state.model = other): its state is saved at once."""
        self.value = value
        self._snapshot()

    def _snapshot(self):
        self._saved = copy.deepcopy(self.value.state_dict())

    def save(self):
        self._snapshot()

    def restore(self):
        # A copy: torch 2's optimizer may keep the given tensors, which its steps then change.
        self.value.load_state_dict(copy.deepcopy(self._saved))

    def sync(self):
        """The root's state_dict, loaded everywhere (schedulers)."""
        self.value.load_state_dict(broadcast_object(self.value.state_dict(), 0, f"elastic.{self.name}"))


class _ModelHandler(_Handler):
    def restore(self):
        self.value.load_state_dict(self._saved)  # copied into the parameters and buffers

    def sync(self):
        broadcast_parameters(self.value.state_dict(), root_rank=0)


class _OptimizerHandler(_Handler):
    def sync(self):
        broadcast_optimizer_state(self.value, root_rank=0)


class _SamplerHandler(_Handler):
    def save(self):
        # Every rank processed its own part: the union is the world's progress, kept
        # by the sampler too, so that rank 0's state_dict carries it at the next sync.
        gathered = allgather_object(self.value.processed_indices, f"elastic.{self.name}.processed")
        self.value.record_indices(set().union(*gathered))
        self._snapshot()


_LRScheduler = getattr(torch.optim.lr_scheduler, "LRScheduler", None) or torch.optim.lr_scheduler._LRScheduler

# (type, handler), the first match wins (Horovod's handler registry).
_HANDLERS = [
    (torch.nn.Module, _ModelHandler),
    (torch.optim.Optimizer, _OptimizerHandler),
    (_LRScheduler, _Handler),
    (torch.optim.lr_scheduler.ReduceLROnPlateau, _Handler),
    (ElasticSampler, _SamplerHandler),
]


def _handler_for(name, value):
    for kind, handler in _HANDLERS:
        if isinstance(value, kind):
            return handler(name, value)
    return None


class TorchState(ObjectState):
    """The state of a torch training process (Horovod's TorchState): `model`
    and `optimizer` (either may be None), more of them, schedulers and
    ElasticSamplers as keyword arguments, and plain values; all are
    attributes (state.model, state.epoch). Handled values are saved as deep
    copies of their state_dict() and synced from rank 0: parameters and
    buffers with broadcast_parameters, the optimizer with
    broadcast_optimizer_state, samplers with every rank's processed indices."""

    def __init__(self, model=None, optimizer=None, **kwargs):
        kwargs.update(model=model, optimizer=optimizer)
        _check_names(self, kwargs)
        handlers = {}
        for name, value in kwargs.items():
            handler = _handler_for(name, value)
            if handler is not None:
                handlers[name] = handler
        self._handlers = handlers
        for name, handler in handlers.items():
            object.__setattr__(self, name, handler.value)
        plain = {k: v for k, v in kwargs.items() if k not in handlers}
        super().__init__(lambda obj: broadcast_object(obj, 0, "elastic.TorchState"), rank, **plain)

    def save(self):
        for handler in self._handlers.values():
            handler.save()
        super().save()

    def restore(self):
        for handler in self._handlers.values():
            handler.restore()
        super().restore()

    def sync(self):
        for handler in self._handlers.values():
            handler.sync()
        super().sync()

    def __setattr__(self, name, value):
        handler = self.__dict__.get("_handlers", {}).get(name)
        if handler is not None:
            handler.set_value(value)
        super().__setattr__(name, value)
