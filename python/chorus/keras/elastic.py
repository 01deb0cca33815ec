"""horovod.tensorflow.keras.elastic over Chorus (`hvd.elastic` after
`import chorus.keras as hvd`): KerasState and the callbacks that keep it
current inside model.fit, with run.

    state = hvd.elastic.KerasState(model, batch=0, epoch=0)

    @hvd.elastic.run
    def train(state):
        model.fit(..., epochs=epochs - state.epoch, callbacks=[
            hvd.elastic.CommitStateCallback(state),
            hvd.elastic.UpdateBatchStateCallback(state),
            hvd.elastic.UpdateEpochStateCallback(state)])
"""
import keras
import numpy as np

from ..basics import rank
from ..elastic import HorovodInternalError, HostsUpdatedInterrupt, ObjectState, _check_names  # noqa: F401
from ..objects import broadcast_object
from .callbacks import broadcast_variables


class _BackendKerasState(ObjectState):
    """KerasState on the JAX and torch backends: the model's and optimizer's
    variables kept as NumPy copies at each commit, restored after a lost
    rank, synced from rank 0 after a reset (keras.ops, no TensorFlow)."""

    def __init__(self, model, optimizer=None, backend=None, **kwargs):
        _check_names(self, kwargs)
        self.model = model
        self.optimizer = optimizer if optimizer is not None else getattr(model, "optimizer", None)
        super().__init__(lambda obj: broadcast_object(obj, 0, "elastic.KerasState"), rank, **kwargs)
        self._saved_values = self._values()

    def _tracked(self):
        opt = self.optimizer
        if opt is not None and not opt.built:
            opt.build(self.model.trainable_variables)  # a newcomer's variables line up with the survivors'
        return list(self.model.variables) + (list(opt.variables) if opt is not None else [])

    def _values(self):
        return [np.array(keras.ops.convert_to_numpy(v), copy=True) for v in self._tracked()]

    def save(self):
        self._saved_values = self._values()
        super().save()

    def restore(self):
        for v, value in zip(self._tracked(), self._saved_values):
            v.assign(value)
        super().restore()

    def sync(self):
        broadcast_variables(self._tracked(), root_rank=0)
        self._saved_values = self._values()
        super().sync()


if keras.backend.backend() == "tensorflow":  # its ops' errors from a lost rank are translated there
    from ..tensorflow.elastic import TensorFlowKerasState as KerasState
    from ..tensorflow.elastic import run, run_fn  # noqa: F401
else:
    from ..elastic import run, run_fn  # noqa: F401
    KerasState = _BackendKerasState

__all__ = ["KerasState", "CommitStateCallback", "UpdateBatchStateCallback", "UpdateEpochStateCallback", "run",
           "run_fn", "HostsUpdatedInterrupt", "HorovodInternalError"]


class CommitStateCallback(keras.callbacks.Callback):
    """Commits `state` every `batches_per_commit` batches and at each epoch's
    end (a commit is a collective: every rank commits at the same batches)."""

    def __init__(self, state, batches_per_commit=1):
        super().__init__()
        if batches_per_commit < 1:
            raise ValueError(f"chorus.keras.elastic.CommitStateCallback: batches_per_commit must be >= 1, not "
                             f"{batches_per_commit}")
        self.state, self.batches_per_commit, self.remaining = state, batches_per_commit, batches_per_commit

    def on_train_begin(self, logs=None):
        self.remaining = self.batches_per_commit  # after a reset every rank counts from the same start

    def on_batch_end(self, batch, logs=None):
        self.remaining -= 1
        if self.remaining == 0:
            self.state.commit()
            self.remaining = self.batches_per_commit

    def on_epoch_end(self, epoch, logs=None):
        self.state.commit()
        self.remaining = self.batches_per_commit


class UpdateBatchStateCallback(keras.callbacks.Callback):
    """Keeps state.batch at the batches done in this epoch (0 at its end).
    Horovod's keeps the last batch's index instead, and shortens the epoch
    resumed after a reset by it; Keras 3 fixes an epoch's steps when it
    starts, so here a resumed epoch runs in full from the restored state."""

    def __init__(self, state):
        super().__init__()
        self.state = state

    def on_batch_end(self, batch, logs=None):
        self.state.batch = batch + 1

    def on_epoch_end(self, epoch, logs=None):
        self.state.batch = 0


class UpdateEpochStateCallback(keras.callbacks.Callback):
    """Keeps state.epoch at the epochs done over every fit() of the elastic
    function: fit(epochs=E - state.epoch) (Horovod's examples) and
    fit(initial_epoch=state.epoch, epochs=E) both count right."""

    def __init__(self, state):
        super().__init__()
        self.state, self.start, self.first = state, state.epoch, None

    def on_train_begin(self, logs=None):
        self.start, self.first = self.state.epoch, None

    def on_epoch_begin(self, epoch, logs=None):
        if self.first is None:
            self.first = epoch  # Keras counts from 0 or from initial_epoch

    def on_epoch_end(self, epoch, logs=None):
        self.state.epoch = self.start + (epoch - self.first) + 1
