"""Gradient compression on the wire (Horovod's hvd.Compression): fp16 and bf16
halve the bytes of float32/float64 tensors; the result comes back in the
tensor's own dtype."""
import torch


class Compressor:
    """compress(tensor) -> (tensor, ctx); decompress(tensor, ctx) -> tensor."""

    @staticmethod
    def compress(tensor):
        raise NotImplementedError

    @staticmethod
    def decompress(tensor, ctx):
        raise NotImplementedError


class NoneCompressor(Compressor):
    @staticmethod
    def compress(tensor):
        return tensor, None

    @staticmethod
    def decompress(tensor, ctx):
        return tensor


class _CastCompressor(Compressor):
    wire = None

    @classmethod
    def compress(cls, tensor):
        if isinstance(tensor, torch.Tensor) and tensor.dtype.is_floating_point and tensor.dtype != cls.wire:
            return tensor.type(cls.wire), tensor.dtype
        return tensor, None

    @classmethod
    def decompress(cls, tensor, ctx):
        return tensor if ctx is None else tensor.type(ctx)


class FP16Compressor(_CastCompressor):
    wire = torch.float16


class BF16Compressor(_CastCompressor):
    wire = torch.bfloat16


class Compression:
    """Horovod's names: Compression.none, Compression.fp16; and Compression.bf16."""

    none = NoneCompressor
    fp16 = FP16Compressor
    bf16 = BF16Compressor
