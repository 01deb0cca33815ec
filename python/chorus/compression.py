"""Gradient compression on the wire (Horovod's hvd.Compression), shared by
the framework front ends: fp16 and bf16 halve the bytes of float32/float64
tensors; the result comes back in the tensor's own dtype. A framework
supplies how to tell a float tensor and how to cast (chorus.torch's and
chorus.tensorflow's compression modules)."""


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


class CastCompressor(Compressor):
    """Casts float tensors to `wire` and back. Subclasses give `wire`,
    is_float(tensor) and cast(tensor, dtype)."""

    wire = None

    @classmethod
    def compress(cls, tensor):
        if cls.is_float(tensor) and tensor.dtype != cls.wire:
            return cls.cast(tensor, cls.wire), tensor.dtype
        return tensor, None

    @classmethod
    def decompress(cls, tensor, ctx):
        return tensor if ctx is None else cls.cast(tensor, ctx)


def compression_class(fp16, bf16):
    """Horovod's names: Compression.none, Compression.fp16; and Compression.bf16."""
    return type("Compression", (), {"none": NoneCompressor, "fp16": fp16, "bf16": bf16,
                                    "__doc__": compression_class.__doc__})
