"""Gradient compression on the wire for TensorFlow tensors
(horovod.tensorflow's Compression; chorus/compression.py has the shared
part)."""
import tensorflow as tf

from ..compression import CastCompressor, Compressor, NoneCompressor, compression_class  # noqa: F401


class _TensorFlowCast(CastCompressor):
    @staticmethod
    def is_float(tensor):
        return tensor.dtype.is_floating

    @staticmethod
    def cast(tensor, dtype):
        return tf.cast(tensor, dtype)


class FP16Compressor(_TensorFlowCast):
    wire = tf.float16


class BF16Compressor(_TensorFlowCast):
    wire = tf.bfloat16


Compression = compression_class(FP16Compressor, BF16Compressor)
