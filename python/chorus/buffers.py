"""What a collective needs to know of an array, whatever made it: a pointer,
a Chorus dtype, a shape and where the memory is. Front ends (NumPy, DLPack,
torch) turn their arrays into a Buffer; the collectives take only Buffers."""
import collections

# chorus_dtype (c_api.h)
UINT8, INT8, INT32, INT64, FLOAT16, BFLOAT16, FLOAT32, FLOAT64, BOOL, INT16 = range(10)
DTYPE_NAMES = ("uint8", "int8", "int32", "int64", "float16", "bfloat16", "float32", "float64", "bool", "int16")
FLOAT_DTYPES = frozenset((FLOAT16, BFLOAT16, FLOAT32, FLOAT64))

HOST = -1  # Buffer.device for host memory; >= 0 is a CUDA device index

Buffer = collections.namedtuple("Buffer", "ptr dtype shape device stream")
Buffer.__doc__ = """ptr: int address; dtype: a chorus_dtype; shape: tuple of ints;
device: HOST or a CUDA device index; stream: a cudaStream_t as int (0: default) or None."""


def numel(shape):
    n = 1
    for d in shape:
        n *= d
    return n


def host_buffer(ptr, dtype, shape):
    return Buffer(ptr, dtype, tuple(shape), HOST, None)
