"""horovod.tensorflow.util's helpers, under the same path: Horovod's own
tests and some Horovod scripts import them (`_executing_eagerly`)."""
import tensorflow as tf


def _executing_eagerly():
    """True when ops run eagerly here, False while a graph (tf.function) is traced."""
    return tf.executing_eagerly()


def vars_to_refs(variables):
    """Hashable references of `variables` (tf.Variable is not hashable in TF2)."""
    return [v.ref() for v in variables]


def refs_to_vars(refs):
    """The variables behind `refs` (vars_to_refs's inverse)."""
    return [r.deref() for r in refs]
