"""Loads Chorus's TensorFlow ops (libchorus_tensorflow.so, built from
frameworks/tensorflow against no TensorFlow) and binds them to the libchorus
the package loaded, so TensorFlow's ops and every other call of the process
share one runtime."""
import ctypes
import os
import pathlib

import tensorflow as tf

from .. import _library

_NAME = "libchorus_tensorflow.so"


def _candidates():
    explicit = os.environ.get("CHORUS_TENSORFLOW_LIBRARY")
    if explicit:
        return [pathlib.Path(explicit)]
    here = pathlib.Path(__file__).resolve().parent.parent
    found = [here / "lib" / _NAME]  # installed by pip: inside the package
    build = os.environ.get("CHORUS_BUILD_DIR", str(here.parent.parent / "build"))
    found.append(pathlib.Path(build) / "frameworks" / "tensorflow" / _NAME)
    return found


def _load():
    tried = []
    for path in _candidates():
        if path.is_file():
            break
        tried.append(str(path))
    else:
        raise ImportError("chorus.tensorflow: " + _NAME + " not found (looked at " + ", ".join(tried) +
                          "); install the package with pip, or set CHORUS_TENSORFLOW_LIBRARY")
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
