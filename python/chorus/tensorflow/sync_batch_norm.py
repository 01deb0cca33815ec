"""horovod.tensorflow's SyncBatchNormalization for Keras 3 (the TensorFlow
backend): batch normalization whose batch statistics are those of every
rank's batch together, as if one process saw the whole global batch. Each
rank's sum, sum of squares and count go through one grouped allreduce
(Sum); the gradient flows back through it (the allreduce's gradient), so
each rank's inputs get the gradient of the global batch's statistics."""
import keras
import tensorflow as tf

from ..ops import Sum
from ..process_sets import global_process_set
from .mpi_ops import grouped_allreduce

if int(keras.__version__.split(".")[0]) < 3:
    raise ImportError(f"chorus SyncBatchNormalization needs Keras 3; this is Keras {keras.__version__}")


class SyncBatchNormalization(keras.layers.BatchNormalization):
    """keras.layers.BatchNormalization with statistics over the ranks of
    `process_set` in training; inference uses the moving averages, which
    then agree on every rank."""

    def __init__(self, *args, process_set=global_process_set, fused=False, **kwargs):
        # Horovod's takes fused=False (tf.keras 2's BatchNormalization had it); Keras 3 has no fused kernel.
        if fused is not False:
            raise ValueError(f"chorus SyncBatchNormalization: fused={fused!r} is not supported (fused=False only)")
        if kwargs.get("synchronized"):
            raise ValueError("chorus SyncBatchNormalization: synchronized=True is tf.distribute's; this layer "
                             "synchronizes through Chorus already")
        super().__init__(*args, **kwargs)
        self._process_set = process_set

    def _moments(self, inputs, mask):
        if mask is not None:
            raise NotImplementedError("chorus SyncBatchNormalization: masked inputs are not supported")
        compute = tf.float32 if inputs.dtype in (tf.float16, tf.bfloat16) else inputs.dtype
        x = tf.cast(inputs, compute)
        axes = list(self._reduction_axes)
        count = tf.cast(tf.reduce_prod(tf.gather(tf.shape(x), axes)), compute)
        total, squares, n = grouped_allreduce(
            [tf.reduce_sum(x, axes), tf.reduce_sum(tf.square(x), axes), tf.reshape(count, [1])], op=Sum,
            process_set=self._process_set)
        mean = total / n
        variance = tf.maximum(squares / n - tf.square(mean), 0.0)
        return tf.cast(mean, inputs.dtype), tf.cast(variance, inputs.dtype)
