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
