"""Horovod's Compression for JAX arrays (hvd.Compression.none / fp16, and
bf16): float arrays travel as float16 or bfloat16 and come back in their
own dtype."""
import jax.numpy as jnp

from ..compression import CastCompressor, compression_class


class _JaxCast(CastCompressor):
    @staticmethod
    def is_float(tensor):
        return jnp.issubdtype(tensor.dtype, jnp.floating)

    @staticmethod
    def cast(tensor, dtype):
        return tensor.astype(dtype)


class FP16Compressor(_JaxCast):
    wire = jnp.dtype(jnp.float16)


class BF16Compressor(_JaxCast):
    wire = jnp.dtype(jnp.bfloat16)


Compression = compression_class(FP16Compressor, BF16Compressor)
