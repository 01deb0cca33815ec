"""horovod.keras's callbacks for Keras 3: the first batch's variables from
one rank, metrics averaged over the ranks, and the learning-rate warmup
and schedule of Goyal et al. that Horovod ships."""
import keras
import numpy as np

from .. import ops as O
from ..basics import rank, size
from ..process_sets import global_process_set


def _variables_of(model):
    out = list(model.variables)
    if getattr(model, "optimizer", None) is not None and model.optimizer.built:
        out += list(model.optimizer.variables)
    return out


def broadcast_variables(variables, root_rank, process_set=global_process_set):
    """Assigns root_rank's values to `variables` (Keras variables) on every rank."""
    from ..arrays import _front
    for i, v in enumerate(variables):
        value = np.ascontiguousarray(keras.ops.convert_to_numpy(v))
        got = _front.broadcast_async(value, root_rank, f"keras.broadcast.{i}.{v.path}", process_set,
                                     inplace=True).wait()
        v.assign(np.reshape(got, tuple(v.shape)))


class BroadcastGlobalVariablesCallback(keras.callbacks.Callback):
    """Broadcasts the model's and the optimizer's variables from root_rank at
    the end of the first batch (the optimizer's variables exist then), so
    every rank trains from the same state."""

    def __init__(self, root_rank, device="", process_set=global_process_set):
        super().__init__()
        self.root_rank, self.process_set, self.done = root_rank, process_set, False

    def on_batch_end(self, batch, logs=None):
        if self.done:
            return
        broadcast_variables(_variables_of(self.model), self.root_rank, self.process_set)
        self.done = True


class MetricAverageCallback(keras.callbacks.Callback):
    """Averages the epoch's metrics (the logs) over the ranks at each epoch
    end, before the callbacks after it see them (put it first)."""

    def __init__(self, device="", process_set=global_process_set):
        super().__init__()
        self.process_set = process_set

    def on_epoch_end(self, epoch, logs=None):
        if not logs:
            return
        from ..arrays import _front
        names = sorted(k for k, v in logs.items() if np.isscalar(v) or np.ndim(v) == 0)
        values = np.array([float(logs[k]) for k in names], np.float64)
        averaged = _front.allreduce_async(values, O.Average, f"keras.metrics.{epoch}", 1.0, 1.0,
                                          self.process_set).wait()
        for k, v in zip(names, averaged.tolist()):
            logs[k] = v


class LearningRateScheduleCallback(keras.callbacks.Callback):
    """Sets the learning rate to initial_lr * multiplier(epoch) from
    start_epoch to end_epoch (per batch when not staircase, with the
    fraction of the epoch; `multiplier` a number or a function of the epoch)."""

    def __init__(self, initial_lr, multiplier, start_epoch=0, end_epoch=None, staircase=True,
                 momentum_correction=True, steps_per_epoch=None):
        super().__init__()
        self.initial_lr, self.start_epoch, self.end_epoch = initial_lr, start_epoch, end_epoch
        self.staircase, self.steps_per_epoch = staircase, steps_per_epoch
        self.multiplier = multiplier if callable(multiplier) else (lambda epoch: multiplier)
        self.current_epoch = 0

    def _in_range(self, epoch):
        return epoch >= self.start_epoch and (self.end_epoch is None or epoch < self.end_epoch)

    def _set(self, epoch):
        self.model.optimizer.learning_rate.assign(self.initial_lr * self.multiplier(epoch))

    def on_epoch_begin(self, epoch, logs=None):
        self.current_epoch = epoch
        if self.staircase and self._in_range(epoch):
            self._set(epoch)

    def on_batch_begin(self, batch, logs=None):
        if self.staircase or not self._in_range(self.current_epoch):
            return
        steps = self.steps_per_epoch or self.params.get("steps")
        if not steps:
            raise ValueError("chorus.keras: a non-staircase schedule needs steps_per_epoch (or fit's steps)")
        self._set(self.current_epoch + batch / steps)


class LearningRateWarmupCallback(LearningRateScheduleCallback):
    """Ramps the learning rate from initial_lr / size() to initial_lr over
    warmup_epochs, per batch, ending at initial_lr (Goyal et al.:
    large-batch training with the learning rate scaled by the number of
    ranks)."""

    def __init__(self, initial_lr, warmup_epochs=5, momentum_correction=True, steps_per_epoch=None, verbose=0):
        def multiplier(epoch):
            return 1.0 / size() * (epoch * (size() - 1) / warmup_epochs + 1)

        super().__init__(initial_lr, multiplier, start_epoch=0, end_epoch=warmup_epochs, staircase=False,
                         momentum_correction=momentum_correction, steps_per_epoch=steps_per_epoch)
        self.verbose = verbose

    def on_epoch_end(self, epoch, logs=None):
        if epoch != self.end_epoch - 1:
            return
        self._set(self.end_epoch)  # the warmup ends at initial_lr exactly
        if self.verbose > 0 and rank() == 0:
            print(f"\nEpoch {epoch + 1}: finished gradual learning rate warmup to {self.initial_lr:g}.")
