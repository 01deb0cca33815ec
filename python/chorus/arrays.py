"""The collectives on NumPy arrays and on any CPU array that speaks DLPack
(`__dlpack__`): results are NumPy arrays; in-place calls (`allreduce_`,
`broadcast_`) write into the caller's memory."""
import ctypes

import numpy as np

from . import buffers as B
from . import dlpack
from .frontend import Frontend, Refused

_DTYPES = {np.dtype(np.uint8): B.UINT8, np.dtype(np.int8): B.INT8, np.dtype(np.int16): B.INT16,
           np.dtype(np.int32): B.INT32, np.dtype(np.int64): B.INT64, np.dtype(np.float16): B.FLOAT16,
           np.dtype(np.float32): B.FLOAT32, np.dtype(np.float64): B.FLOAT64, np.dtype(np.bool_): B.BOOL}


def address(arr):
    """The data pointer of a C-contiguous array (from_buffer is 2-3x cheaper
    than arr.ctypes.data, for the writable arrays it accepts)."""
    if arr.flags.writeable and arr.size:
        return ctypes.addressof(ctypes.c_char.from_buffer(arr))
    return arr.ctypes.data


class NumpyAdapter:
    @staticmethod
    def as_numpy(x):
        if isinstance(x, np.ndarray):
            return x
        if hasattr(x, "__dlpack__"):
            try:
                return np.from_dlpack(x)
            except (TypeError, RuntimeError, BufferError) as e:
                raise Refused(f"the DLPack array could not be read on the host ({e}); chorus.torch takes CUDA tensors")
        raise Refused(f"expected a NumPy array or an array with __dlpack__, got {type(x).__name__}")

    def buffer(self, x, writable=False):
        if type(x) is np.ndarray and x.flags.c_contiguous and x.flags.writeable and x.size:  # the common case
            dtype = _DTYPES.get(x.dtype)
            if dtype is not None:
                return x, B.Buffer(ctypes.addressof(ctypes.c_char.from_buffer(x)), dtype, x.shape, B.HOST, None)
        if not isinstance(x, np.ndarray) and hasattr(x, "__dlpack__"):
            return self._dlpack_buffer(x, writable)
        arr = self.as_numpy(x)
        if arr.dtype not in _DTYPES:
            raise Refused(f"dtype {arr.dtype} is not supported (" + ", ".join(str(d) for d in _DTYPES) + ")")
        if writable and not arr.flags.writeable:
            raise Refused("the array is read-only, and an in-place collective writes into it")
        src = arr if arr.flags.c_contiguous else np.ascontiguousarray(arr)
        return src, B.host_buffer(address(src), _DTYPES[src.dtype], src.shape)

    def _dlpack_buffer(self, x, writable):
        """In place: the DLPack memory itself. Out of place: a NumPy view (a copy when not contiguous)."""
        try:
            capsule, buf, contiguous = dlpack.read(x)
        except dlpack.Unsupported as why:
            raise Refused(str(why))
        if writable:
            if not contiguous:
                raise Refused("a non-contiguous DLPack array cannot be written in place; use the out-of-place call")
            return _Kept(capsule), buf
        return self.buffer(self.as_numpy(x), False)

    @staticmethod
    def empty_like(src):
        out = np.empty_like(src)
        return out, B.host_buffer(address(out), _DTYPES[out.dtype], out.shape)

    def copy_of(self, src):
        out = np.array(src, copy=True, order="C")
        return out, B.host_buffer(address(out), _DTYPES[out.dtype], out.shape)

    @staticmethod
    def copy_into(original, contiguous):
        if isinstance(contiguous, _Kept):  # DLPack memory written in place
            return original
        np.copyto(NumpyAdapter.as_numpy(original), contiguous)
        return original

    @staticmethod
    def maker(src):
        def make(shape):
            out = np.empty(shape, dtype=src.dtype)
            return out, out.ctypes.data
        return make

    @staticmethod
    def int_list(splits):
        arr = np.asarray(splits)
        if arr.ndim != 1 or not np.issubdtype(arr.dtype, np.integer):
            raise Refused(f"expected a 1-D list of integers, got {arr.dtype} of shape {arr.shape}")
        return [int(v) for v in arr]

    @staticmethod
    def int_array(values):
        return np.asarray(values, dtype=np.int64)


class _Kept:
    """A DLPack capsule kept alive while a collective writes into its memory."""

    def __init__(self, capsule):
        self.capsule = capsule


_front = Frontend(NumpyAdapter())
