"""horovod.keras's DistributedOptimizer for Keras 3: the optimizer's own
class, whose gradients are reduced over the ranks before they are clipped,
decayed and applied. The hook is the one step every Keras 3 backend's
`Optimizer.apply` (and so `model.fit`) takes with the final gradients,
after Keras's own gradient accumulation: `_clip_gradients`."""
import keras

from .. import ops as O
from ..process_sets import global_process_set


def _reducer():
    backend = keras.backend.backend()
    if backend == "tensorflow":
        from ..tensorflow.gradient_tape import _reduce
        return _reduce
    if backend == "jax":
        return _reduce_jax
    if backend == "torch":
        return _reduce_torch
    raise NotImplementedError(f"chorus.keras: the Keras backend '{backend}' is not supported "
                              "(supported: tensorflow, jax, torch; KERAS_BACKEND picks the backend)")


def _not_a_member(process_set):
    """A rank outside the set keeps its own gradients (Horovod's, and the
    TensorFlow backend's: gradient_tape._reduce)."""
    return process_set is not None and process_set.included() is False


def _scales(op, predivide):
    if predivide != 1.0 and op != O.Average:
        raise ValueError("chorus.keras.DistributedOptimizer: gradient_predivide_factor needs op=Average")
    return (1.0 / predivide, predivide) if predivide != 1.0 else (1.0, 1.0)


def _reduce_torch(grads, variables, compression, sparse_as_dense, op, predivide, num_groups, groups, process_set):
    """The torch backend: Keras runs the train step eagerly, so the
    gradients (torch tensors) go through chorus.torch in one grouped call
    (num_groups and groups do not split it)."""
    from ..torch import Compression as TorchCompression
    from ..torch import grouped_allreduce
    if _not_a_member(process_set):
        return list(grads)
    prescale, postscale = _scales(op, predivide)
    present = [i for i, g in enumerate(grads) if g is not None]
    reduced = grouped_allreduce([grads[i] for i in present], op=op, prescale_factor=prescale,
                                postscale_factor=postscale, process_set=process_set,
                                compression=getattr(TorchCompression, _compression_name(compression)))
    out = list(grads)
    for i, r in zip(present, reduced):
        out[i] = r
    return out


def _reduce_jax(grads, variables, compression, sparse_as_dense, op, predivide, num_groups, groups, process_set):
    """The JAX backend: Keras traces the train step under jax.jit, so the
    gradients go through chorus.jax's primitives, all in one grouped call
    (num_groups and groups do not split it)."""
    from ..jax import compression as jax_compression
    from ..jax.mpi_ops import grouped_allreduce
    if _not_a_member(process_set):
        return list(grads)
    prescale, postscale = _scales(op, predivide)
    # The same compression under the JAX backend's name for it.
    wire = getattr(jax_compression.Compression, _compression_name(compression))
    present = [i for i, g in enumerate(grads) if g is not None]
    packed = [wire.compress(grads[i]) for i in present]
    reduced = grouped_allreduce([p for p, _ in packed], op=op, prescale_factor=prescale, postscale_factor=postscale,
                                process_set=process_set)
    out = list(grads)
    for i, r, (_, ctx) in zip(present, reduced, packed):
        out[i] = wire.decompress(r, ctx)
    return out


def _compression_name(compression):
    for name in ("none", "fp16", "bf16"):
        if compression.__name__.lower().startswith(name):
            return name
    raise ValueError(f"chorus.keras.DistributedOptimizer: unknown compression {compression.__name__}")


def _no_compression():
    from ..compression import NoneCompressor
    return NoneCompressor


class _DistributedOptimizer:
    """Mixed in front of the optimizer's class."""

    def _backend_apply_gradients(self, grads, trainable_variables):
        # After Keras's filtering: one per gradient. Set past Keras's attribute
        # tracking, which would count the model's variables as the optimizer's.
        object.__setattr__(self, "_chorus_variables", list(trainable_variables))
        return super()._backend_apply_gradients(grads, trainable_variables)

    def _clip_gradients(self, grads):
        s = self._chorus_settings
        variables = self._chorus_variables
        if s["steps"] > 1 and not s["average_aggregated"]:
            grads = [g if g is None else g * s["steps"] for g in grads]  # Keras averaged them: the sum, as Horovod
        reduced = self._chorus_reduce(list(grads), variables, compression=s["compression"],
                                      sparse_as_dense=s["sparse_as_dense"], op=s["op"], predivide=s["predivide"],
                                      num_groups=s["num_groups"], groups=s["groups"], process_set=s["process_set"])
        return super()._clip_gradients(reduced)


def DistributedOptimizer(optimizer, name=None, device_dense="", device_sparse="", compression=None,
                         sparse_as_dense=False, gradient_predivide_factor=1.0, op=O.Average,
                         backward_passes_per_step=1, average_aggregated_gradients=False, num_groups=0, groups=None,
                         process_set=global_process_set, scale_local_gradients=True):
    """`optimizer` (a Keras 3 optimizer, not yet built) whose gradients are
    reduced over the ranks of `process_set` with `op` before they are
    applied, as horovod.keras's. backward_passes_per_step > 1 accumulates
    that many local gradients first (Keras's gradient accumulation) and
    reduces their sum, or their mean with average_aggregated_gradients."""
    if not isinstance(optimizer, keras.optimizers.Optimizer):
        raise TypeError(f"chorus.keras.DistributedOptimizer: a keras.optimizers.Optimizer, not "
                        f"{type(optimizer).__name__}")
    if optimizer.built:
        raise ValueError("chorus.keras.DistributedOptimizer: wrap the optimizer before it is built (before "
                         "compile() or its first apply())")
    steps = int(backward_passes_per_step)
    if steps < 1:
        raise ValueError(f"chorus.keras.DistributedOptimizer: backward_passes_per_step must be >= 1, not {steps}")
    reduce = _reducer()
    cls = type(optimizer.__class__.__name__, (_DistributedOptimizer, optimizer.__class__), {})
    optimizer.__class__ = cls
    if steps > 1:
        optimizer.gradient_accumulation_steps = steps
    optimizer._chorus_reduce = reduce
    optimizer._chorus_settings = dict(compression=compression or _no_compression(), sparse_as_dense=sparse_as_dense,
                                      op=O.resolve(op, None), predivide=float(gradient_predivide_factor),
                                      num_groups=num_groups, groups=groups, process_set=process_set, steps=steps,
                                      average_aggregated=average_aggregated_gradients)
    return optimizer
