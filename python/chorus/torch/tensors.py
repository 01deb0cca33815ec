"""torch tensors as Chorus Buffers, without compiling anything against
torch: a tensor crosses as its data_ptr, dtype, shape, device and current
CUDA stream, so one install serves every torch version."""
import numbers

import torch

from .. import buffers as B
from ..frontend import Refused

DTYPES = {torch.uint8: B.UINT8, torch.int8: B.INT8, torch.int16: B.INT16, torch.int32: B.INT32,
          torch.int64: B.INT64, torch.float16: B.FLOAT16, torch.bfloat16: B.BFLOAT16, torch.float32: B.FLOAT32,
          torch.float64: B.FLOAT64, torch.bool: B.BOOL}


def describe(t):
    """A tensor's Buffer (it must be contiguous)."""
    if t.is_cpu:
        return B.Buffer(t.data_ptr(), DTYPES[t.dtype], tuple(t.shape), B.HOST, None)
    index = t.device.index if t.device.index is not None else torch.cuda.current_device()
    return B.Buffer(t.data_ptr(), DTYPES[t.dtype], tuple(t.shape), index, torch.cuda.current_stream(index).cuda_stream)


class TorchAdapter:
    @staticmethod
    def check(x):
        if type(x) is torch.Tensor and x.is_cpu and x.layout is torch.strided and x.dtype in DTYPES:
            return  # the common case, checked in a few attribute reads
        if not isinstance(x, torch.Tensor):
            raise Refused(f"expected a torch.Tensor, got {type(x).__name__}")
        if x.layout != torch.strided:
            raise Refused(f"a {x.layout} tensor is not supported here (sparse gradients: sparse_allreduce_async, "
                          "or DistributedOptimizer(sparse_as_dense=True))")
        if x.dtype not in DTYPES:
            raise Refused(f"dtype {x.dtype} is not supported (" + ", ".join(str(d) for d in DTYPES) + ")")
        if x.device.type not in ("cpu", "cuda"):
            raise Refused(f"a tensor on device '{x.device}' is not supported (cpu and cuda are)")

    def buffer(self, x, writable=False):
        if type(x) is torch.Tensor and x.is_cpu and x.layout is torch.strided and x.is_contiguous():
            dtype = DTYPES.get(x.dtype)  # the common case, in a few attribute reads
            if dtype is not None:
                return x, B.Buffer(x.data_ptr(), dtype, tuple(x.shape), B.HOST, None)
        self.check(x)
        src = x if x.is_contiguous() else x.contiguous()
        return src, describe(src)

    @staticmethod
    def empty_like(src):
        out = torch.empty_like(src, memory_format=torch.contiguous_format)
        return out, describe(out)

    @staticmethod
    def copy_of(src):
        out = src.detach().clone(memory_format=torch.contiguous_format)
        return out, describe(out)

    @staticmethod
    def copy_into(original, contiguous):
        with torch.no_grad():
            original.copy_(contiguous)
        return original

    @staticmethod
    def maker(src):
        dtype, device = src.dtype, src.device

        def make(shape):
            out = torch.empty(shape, dtype=dtype, device=device)
            return out, out.data_ptr()
        return make

    @staticmethod
    def int_list(splits):
        if isinstance(splits, torch.Tensor):
            if splits.dtype.is_floating_point or splits.dim() != 1:
                raise Refused(f"expected a 1-D integer tensor, got {splits.dtype} of shape {tuple(splits.shape)}")
            return [int(v) for v in splits.tolist()]
        values = list(splits) if not isinstance(splits, (str, bytes)) else None
        if values is None or not all(isinstance(v, numbers.Integral) for v in values):
            raise Refused(f"expected a list of integers, got {splits!r}")
        return [int(v) for v in values]

    @staticmethod
    def int_array(values):
        return torch.tensor(values, dtype=torch.int32)
