"""horovod.tensorflow.elastic over Chorus (`hvd.elastic` after `import
chorus.tensorflow as hvd`): TensorFlowKerasState, TensorFlowState and run.

    state = hvd.elastic.TensorFlowKerasState(model, optimizer, epoch=0, batch=0)

    @hvd.elastic.run
    def train(state):
        ...

The model's weights and the optimizer's variables are saved as NumPy
copies at each commit, restored after a lost rank, and synced from rank 0
after every reset; other keyword arguments are plain values (ObjectState).
"""
import numpy as np
import tensorflow as tf

from .. import elastic as _elastic
from ..basics import is_running, rank
from ..elastic import HorovodInternalError, HostsUpdatedInterrupt, ObjectState, _check_names
from ..errors import AbortedError, PreconditionError
from ..objects import broadcast_object

__all__ = ["TensorFlowKerasState", "TensorFlowState", "run", "run_fn", "HostsUpdatedInterrupt",
           "HorovodInternalError"]


def _as_chorus_error(error):
    """The Chorus error a TensorFlow op error stands for, or None: a
    collective inside a graph fails as tf.errors.AbortedError when a rank is
    lost (FailedPrecondition after the runtime shut down)."""
    if isinstance(error, tf.errors.AbortedError):
        return AbortedError(error.message)
    if isinstance(error, tf.errors.FailedPreconditionError) and not is_running():
        return PreconditionError(error.message)
    return None


def run_fn(func, reset):
    """chorus.elastic.run_fn for TensorFlow functions (Horovod's run_fn)."""
    return _elastic.run_translating(func, _as_chorus_error, reset)


def run(func):
    """chorus.elastic.run (Horovod's hvd.elastic.run) for a function whose
    collectives may run inside tf.function or model.fit: TensorFlow's
    AbortedError from a lost rank is the loop's AbortedError."""
    return _elastic.run_translating(func, _as_chorus_error)


def _values(variables):
    return [np.array(v.numpy(), copy=True) for v in variables]


def _assign(variables, values):
    for v, value in zip(variables, values):
        v.assign(value)


def _broadcast(variables):
    """Rank 0's values into `variables`, on every rank (eagerly)."""
    from .functions import broadcast_variables
    broadcast_variables(variables, root_rank=0)


class TensorFlowState(ObjectState):
    """tf.Variables (or Keras variables) and plain values (Horovod's TensorFlowState)."""

    def __init__(self, variables=None, session=None, **kwargs):
        if session is not None:
            raise ValueError("chorus.tensorflow.elastic.TensorFlowState: TensorFlow 1 sessions are not supported")
        _check_names(self, kwargs)
        self._variables = list(variables or [])
        self._saved_values = _values(self._variables)
        super().__init__(lambda obj: broadcast_object(obj, 0, "elastic.TensorFlowState"), rank, **kwargs)

    def _tracked(self):
        return self._variables

    def save(self):
        self._saved_values = _values(self._tracked())
        super().save()

    def restore(self):
        _assign(self._tracked(), self._saved_values)
        super().restore()

    def sync(self):
        tracked = self._tracked()
        if tracked:
            _broadcast(tracked)
            self._saved_values = _values(tracked)
        super().sync()


class TensorFlowKerasState(TensorFlowState):
    """A Keras model and its optimizer, and plain values (Horovod's
    TensorFlowKerasState; also chorus.keras.elastic.KerasState). The
    optimizer is built on the model's trainable variables first if it is
    not yet, so a newcomer's variables line up with the survivors'."""

    def __init__(self, model, optimizer=None, backend=None, **kwargs):
        _check_names(self, kwargs)
        self.model = model
        self.optimizer = optimizer if optimizer is not None else getattr(model, "optimizer", None)
        super().__init__(variables=None, **kwargs)
        self._saved_values = _values(self._tracked())

    def _tracked(self):
        opt = self.optimizer
        if opt is not None and not opt.built:
            opt.build(self.model.trainable_variables)
        return list(self.model.variables) + (list(opt.variables) if opt is not None else [])
