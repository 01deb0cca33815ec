"""horovod.tensorflow.DistributedOptimizer: for a TF1 optimizer
(tf.compat.v1.train.Optimizer, graph mode) its compute_gradients() returns
the gradients reduced over the ranks of the process set, as Horovod's; a
Keras 3 optimizer goes to chorus.keras.DistributedOptimizer."""
import tensorflow as tf

from .. import ops as O
from ..process_sets import global_process_set
from .compression import Compression
from .gradient_tape import _reduce, _source_key, _set_size


class _LegacyDistributedOptimizer(tf.compat.v1.train.Optimizer):
    def __init__(self, optimizer, name, use_locking, settings, scale_local_gradients):
        super().__init__(name=name or f"Distributed{type(optimizer).__name__}", use_locking=use_locking)
        self._optimizer = optimizer
        self._chorus_settings = settings
        self._chorus_local = set()
        self._chorus_scale_local = scale_local_gradients

    def register_local_var(self, var):
        """`var`'s gradient stays this rank's own (divided by the set's size
        when scale_local_gradients), as Horovod's."""
        self._chorus_local.add(_source_key(var))

    def compute_gradients(self, *args, **kwargs):
        pairs = self._optimizer.compute_gradients(*args, **kwargs)
        local = [_source_key(v) in self._chorus_local for _, v in pairs]
        reduced = _reduce([None if loc else g for (g, _), loc in zip(pairs, local)], [v for _, v in pairs],
                          **self._chorus_settings)
        n = float(_set_size(self._chorus_settings["process_set"]))
        out = []
        for (g, v), r, loc in zip(pairs, reduced, local):
            if loc and g is not None and self._chorus_scale_local:
                r = tf.IndexedSlices(g.values / n, g.indices, g.dense_shape) if isinstance(g, tf.IndexedSlices) \
                    else g / n
            elif loc:
                r = g
            out.append((r, v))
        return out

    def apply_gradients(self, *args, **kwargs):
        return self._optimizer.apply_gradients(*args, **kwargs)

    def get_slot(self, *args, **kwargs):
        return self._optimizer.get_slot(*args, **kwargs)

    def get_slot_names(self, *args, **kwargs):
        return self._optimizer.get_slot_names(*args, **kwargs)

    def variables(self, *args, **kwargs):
        return self._optimizer.variables(*args, **kwargs)


def DistributedOptimizer(optimizer, name=None, use_locking=False, device_dense="", device_sparse="",
                         compression=Compression.none, sparse_as_dense=False, backward_passes_per_step=1,
                         op=O.Average, gradient_predivide_factor=1.0, average_aggregated_gradients=False,
                         num_groups=0, groups=None, process_set=global_process_set, scale_local_gradients=True):
    """Horovod's horovod.tensorflow.DistributedOptimizer. A TF1 optimizer
    (graph mode): its gradients reduced with `op` over `process_set`
    (backward_passes_per_step 1 only: NotImplementedError otherwise). A
    Keras 3 optimizer: chorus.keras.DistributedOptimizer with these
    arguments."""
    if isinstance(optimizer, tf.compat.v1.train.Optimizer):
        if int(backward_passes_per_step) != 1:
            raise NotImplementedError("chorus.tensorflow.DistributedOptimizer: backward_passes_per_step > 1 is not "
                                      "supported for TF1 optimizers (use a Keras 3 optimizer)")
        settings = dict(compression=compression, sparse_as_dense=sparse_as_dense, op=O.resolve(op, None),
                        predivide=float(gradient_predivide_factor), num_groups=num_groups, groups=groups,
                        process_set=process_set)
        return _LegacyDistributedOptimizer(optimizer, name, use_locking, settings, bool(scale_local_gradients))
    from ..keras import DistributedOptimizer as KerasDistributedOptimizer
    return KerasDistributedOptimizer(optimizer, name=name, compression=compression, sparse_as_dense=sparse_as_dense,
                                     gradient_predivide_factor=gradient_predivide_factor, op=op,
                                     backward_passes_per_step=backward_passes_per_step,
                                     average_aggregated_gradients=average_aggregated_gradients,
                                     num_groups=num_groups, groups=groups, process_set=process_set,
                                     scale_local_gradients=scale_local_gradients)
