"""Loads Chorus's TensorFlow ops (libchorus_tensorflow.so, built from
frameworks/tensorflow against no TensorFlow) and binds them to the libchorus
the package loaded, so TensorFlow's ops and every other call of the process
share one runtime."""
import ctypes

import tensorflow as tf

from .. import _library

_NAME = "libchorus_tensorflow.so"


def _load():
    path = _library.adapter_library(_NAME, "CHORUS_TENSORFLOW_LIBRARY", "frameworks/tensorflow", "chorus.tensorflow")
    module = tf.load_op_library(str(path))
    handle = ctypes.CDLL(str(path))  # the same library TensorFlow loaded
    handle.chorus_tf_registration_error.restype = ctypes.c_char_p
    why = handle.chorus_tf_registration_error().decode()
    if why:
        raise ImportError(f"chorus.tensorflow: TensorFlow {tf.__version__} did not take Chorus's ops: {why}")
    error = ctypes.create_string_buffer(512)
    if handle.chorus_tf_bind(str(_library.path).encode(), error, len(error)) != 0:
        raise ImportError("chorus.tensorflow: " + error.value.decode())
    return module


ops = _load()
