"""horovod.tensorflow's DistributedGradientTape: the tape's gradients,
averaged (or summed) over the ranks before they are returned."""
import tensorflow as tf

from .. import ops as O
from ..process_sets import global_process_set
from .compression import Compression
from .mpi_ops import _set_size, allreduce, grouped_allreduce


def _groups_of(grads, variables, num_groups, groups):
    """Indices of the dense gradients, split into the groups asked for:
    `groups` (lists of variables), else `num_groups` near-equal parts, else
    one group (the engine fuses a group's tensors into as few transfers as
    fit: Horovod's default of one op per gradient gives the same sums)."""
    dense = [i for i, g in enumerate(grads) if g is not None and not isinstance(g, tf.IndexedSlices)]
    if groups is not None:
        if num_groups:
            raise ValueError("chorus.DistributedGradientTape: give num_groups or groups, not both")
        where = {id(v): i for i, v in enumerate(variables)}
        out, seen = [], set()
        for group in groups:
            members = [where[id(v)] for v in group if id(v) in where and where[id(v)] in dense]
            out.append(members)
            seen.update(members)
        rest = [i for i in dense if i not in seen]
        return [g for g in out + [rest] if g]
    if num_groups and num_groups > 0:
        n = min(num_groups, len(dense)) or 1
        return [dense[k::n] for k in range(n) if dense[k::n]]
    return [dense] if dense else []


def _reduce(grads, variables, compression, sparse_as_dense, op, predivide, num_groups, groups, process_set):
    if process_set is not None and process_set.included() is False:
        return list(grads)  # not a member: this rank's own gradients, as Horovod's
    if predivide != 1.0 and op != O.Average:
        raise ValueError("chorus.DistributedGradientTape: gradient_predivide_factor needs op=Average")
    prescale, postscale = (1.0 / predivide, predivide) if predivide != 1.0 else (1.0, 1.0)
    grads = [tf.convert_to_tensor(g) if sparse_as_dense and isinstance(g, tf.IndexedSlices) else g for g in grads]
    out = list(grads)
    for k, members in enumerate(_groups_of(grads, variables, num_groups, groups)):
        reduced = grouped_allreduce([grads[i] for i in members], compression=compression, op=op,
                                    prescale_factor=prescale, postscale_factor=postscale, process_set=process_set)
        for i, r in zip(members, reduced):
            out[i] = r
    for i, g in enumerate(grads):
        if isinstance(g, tf.IndexedSlices):
            out[i] = allreduce(g, op=op, compression=compression, process_set=process_set)
    return out


def _source_key(source):
    """A hashable key for a variable (tf.Variable is not hashable in TF 2)."""
    return source.ref() if hasattr(source, "ref") else id(source)


class _DistributedGradientTape(tf.GradientTape):
    def register_local_source(self, source):
        """Marks `source` (a variable) as local to this rank, as Horovod's: its
        gradient is never reduced over the ranks (model-parallel layers),
        only divided by the set's size when scale_local_gradients (the
        default), to match the averaged gradients' scale."""
        self._chorus_local.add(_source_key(source))

    def gradient(self, target, sources, output_gradients=None, unconnected_gradients=tf.UnconnectedGradients.NONE):
        grads = super().gradient(target, sources, output_gradients, unconnected_gradients)
        flat_sources = tf.nest.flatten(sources)
        flat = tf.nest.flatten(grads, expand_composites=False)
        local = [_source_key(s) in self._chorus_local for s in flat_sources]
        reduced = _reduce([None if loc else g for g, loc in zip(flat, local)], flat_sources, **self._chorus_settings)
        for i, g in enumerate(flat):
            if local[i]:
                reduced[i] = self._scaled_local(g)
        return tf.nest.pack_sequence_as(grads, reduced)

    def _scaled_local(self, grad):
        if grad is None or not self._chorus_scale_local:
            return grad
        n = float(_set_size(self._chorus_settings["process_set"]))
        if isinstance(grad, tf.IndexedSlices):
            return tf.IndexedSlices(grad.values / n, grad.indices, grad.dense_shape)
        return grad / n

    def get_local_and_global_gradients(self, target, sources, output_gradients=None):
        """gradient(), split as Horovod's: ([(local source, gradient)], [(other source, gradient)])."""
        flat_sources = tf.nest.flatten(sources)
        grads = tf.nest.flatten(self.gradient(target, sources, output_gradients), expand_composites=False)
        pairs = list(zip(flat_sources, grads))
        return ([p for p in pairs if _source_key(p[0]) in self._chorus_local],
                [p for p in pairs if _source_key(p[0]) not in self._chorus_local])


def DistributedGradientTape(gradtape, device_dense="", device_sparse="", compression=Compression.none,
                            sparse_as_dense=False, op=O.Average, gradient_predivide_factor=1.0, num_groups=0,
                            groups=None, process_set=global_process_set, scale_local_gradients=True):
    """`gradtape` whose gradient() returns the gradients reduced over the
    ranks of `process_set` with `op` (Average: Horovod's default), after
    `compression` on the wire; IndexedSlices are allgathered, or reduced
    dense with sparse_as_dense. Sources registered with
    register_local_source() keep their own gradient (divided by the set's
    size when scale_local_gradients). An instance of the tape's own class."""
    cls = type(gradtape.__class__.__name__, (_DistributedGradientTape, gradtape.__class__), {})
    tape = cls.__new__(cls)
    tape.__dict__.update(gradtape.__dict__)
    tape._chorus_settings = dict(compression=compression, sparse_as_dense=sparse_as_dense, op=O.resolve(op, None),
                                 predivide=float(gradient_predivide_factor), num_groups=num_groups, groups=groups,
                                 process_set=process_set)
    tape._chorus_local = set()
    tape._chorus_scale_local = bool(scale_local_gradients)
    return tape


def PartialDistributedGradientTape(gradtape, device_dense="", device_sparse="", compression=Compression.none,
                                   sparse_as_dense=False, op=O.Average, gradient_predivide_factor=1.0, num_groups=0,
                                   groups=None, process_set=global_process_set, local_layers=None,
                                   scale_local_gradients=True):
    """DistributedGradientTape whose `local_layers` (a Keras layer or a list
    of them) keep their own gradients: each of their trainable weights is
    registered with register_local_source()."""
    if local_layers is None:
        local_layers = []
    elif not isinstance(local_layers, (list, tuple)):
        local_layers = [local_layers]
    for layer in local_layers:
        if not hasattr(layer, "trainable_weights"):
            raise ValueError(f"chorus.PartialDistributedGradientTape: local_layers must be Keras layers, not "
                             f"{type(layer).__name__}")
    tape = DistributedGradientTape(gradtape, device_dense, device_sparse, compression, sparse_as_dense, op,
                                   gradient_predivide_factor, num_groups, groups, process_set, scale_local_gradients)
    for layer in local_layers:
        for var in layer.trainable_weights:
            tape.register_local_source(var)
    return tape
