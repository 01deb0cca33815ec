"""Gradient compression on the wire for torch tensors (Horovod's
hvd.Compression; chorus/compression.py has the shared part)."""
import torch

from ..compression import CastCompressor, Compressor, NoneCompressor, compression_class  # noqa: F401


class _TorchCast(CastCompressor):
    @staticmethod
    def is_float(tensor):
        return isinstance(tensor, torch.Tensor) and tensor.dtype.is_floating_point

    @staticmethod
    def cast(tensor, dtype):
        return tensor.type(dtype)


class FP16Compressor(_TorchCast):
    wire = torch.float16


class BF16Compressor(_TorchCast):
    wire = torch.bfloat16


Compression = compression_class(FP16Compressor, BF16Compressor)
