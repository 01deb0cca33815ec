"""horovod.tensorflow's helpers: variables and Python objects from one rank
to all."""
import tensorflow as tf

from ..objects import allgather_object, broadcast_object  # noqa: F401 (horovod.tensorflow's names)
from ..process_sets import global_process_set
from .mpi_ops import broadcast


def broadcast_variables(variables, root_rank, process_set=global_process_set, inplace=True):
    """Assigns root_rank's value to each variable (tf.Variable, or a Keras 3
    variable) on every rank of `process_set`, eagerly or as ops inside
    tf.function."""
    assigns = []
    for i, var in enumerate(variables):
        if not isinstance(var, tf.Variable) and not hasattr(var, "assign"):
            raise TypeError(f"chorus.broadcast_variables: item {i} is a {type(var).__name__}, not a variable")
        value = var.value if not isinstance(var, tf.Variable) else var  # a Keras variable holds its tf.Variable
        assigns.append(var.assign(broadcast(tf.convert_to_tensor(value), root_rank, process_set=process_set)))
    return None if tf.executing_eagerly() else tf.group(*[a for a in assigns if a is not None])


def broadcast_global_variables(root_rank):
    """Horovod's TF1-graph call: root_rank's value of every global variable
    (tf.compat.v1.global_variables()) on every rank, as one grouped op.
    Eagerly there are no global variables: RuntimeError, as Horovod's, which
    names broadcast_variables as the call to use."""
    if tf.executing_eagerly():
        raise RuntimeError("chorus.tensorflow.broadcast_global_variables() does not support eager execution: "
                           "use broadcast_variables(<model/optimizer variables>, root_rank) instead")
    return broadcast_variables(tf.compat.v1.global_variables(), root_rank)
