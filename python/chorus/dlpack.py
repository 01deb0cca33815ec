"""Reads a DLPack capsule (`x.__dlpack__()`) with ctypes: the data pointer,
device, dtype, shape and strides of any array that speaks DLPack, writable,
without a copy (NumPy's from_dlpack gives read-only arrays before NumPy 2)."""
import ctypes

from . import buffers as B


class _DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class _DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", _DLDevice), ("ndim", ctypes.c_int32),
                ("dtype", _DLDataType), ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64)]


_CPU, _CUDA_HOST = 1, 3
# (DLDataTypeCode, bits) -> chorus dtype: kDLInt 0, kDLUInt 1, kDLFloat 2, kDLBfloat 4, kDLBool 6
_DTYPES = {(0, 8): B.INT8, (0, 16): B.INT16, (0, 32): B.INT32, (0, 64): B.INT64, (1, 8): B.UINT8,
           (2, 16): B.FLOAT16, (2, 32): B.FLOAT32, (2, 64): B.FLOAT64, (4, 16): B.BFLOAT16, (6, 8): B.BOOL}

_get_pointer = ctypes.pythonapi.PyCapsule_GetPointer
_get_pointer.restype = ctypes.c_void_p
_get_pointer.argtypes = [ctypes.py_object, ctypes.c_char_p]


class Unsupported(Exception):
    pass


def read(obj):
    """(capsule, Buffer, contiguous) of `obj`'s memory; keep the capsule alive
    while the memory is used (its deleter runs when it is collected)."""
    capsule = obj.__dlpack__()
    t = _DLTensor.from_address(_get_pointer(capsule, b"dltensor"))  # DLManagedTensor starts with its DLTensor
    if t.device.device_type not in (_CPU, _CUDA_HOST):
        raise Unsupported(f"a DLPack array on device type {t.device.device_type} is not supported here (host "
                          "memory is; CUDA tensors go through chorus.torch)")
    key = (t.dtype.code, t.dtype.bits)
    if t.dtype.lanes != 1 or key not in _DTYPES:
        raise Unsupported(f"DLPack dtype (code {t.dtype.code}, {t.dtype.bits} bits, {t.dtype.lanes} lanes) is not "
                          "supported")
    shape = tuple(t.shape[i] for i in range(t.ndim))
    contiguous = True
    if t.strides:
        expected = 1
        for i in reversed(range(t.ndim)):
            if shape[i] != 1 and t.strides[i] != expected:
                contiguous = False
            expected *= shape[i]
    ptr = (t.data or 0) + t.byte_offset
    return capsule, B.host_buffer(ptr, _DTYPES[key], shape), contiguous
