"""Flat gradients for DistributedOptimizer (the C++ adapter's flat_gradients,
DDP's gradient_as_bucket_view): after the first step every CPU gradient
moves into one buffer per dtype, laid out in the order autograd produced
them, and .grad becomes a slice of it. Fused allreduces then cover one
contiguous range that the core reduces where it lies, and the buffer comes
from the shared-memory arena (chorus_allocate_shared_host), so ranks on one
host read and write each other's gradients in place, with no staging copy."""
import ctypes

import torch

from .._library import lib


class _ArenaBlock:
    """A block of this rank's shared-memory arena, freed when the last tensor over it is gone."""

    def __init__(self, ptr):
        self.ptr = ptr

    def __del__(self):
        lib.chorus_free_shared_host(ctypes.c_void_p(self.ptr))


def shared_host_empty(numel, dtype):
    """An uninitialized 1-D CPU tensor in the arena, or in ordinary memory when the arena has no room."""
    nbytes = numel * torch.empty((), dtype=dtype).element_size()
    ptr = ctypes.c_void_p()
    if nbytes == 0 or lib.chorus_allocate_shared_host(nbytes, ctypes.byref(ptr)) != 0 or not ptr.value:
        return torch.empty(numel, dtype=dtype)
    raw = (ctypes.c_char * nbytes).from_address(ptr.value)
    raw.owner = _ArenaBlock(ptr.value)  # lives as long as the buffer object the tensor holds
    return torch.frombuffer(raw, dtype=dtype)


def flatten(params_in_order):
    """Moves the dense CPU gradients of `params_in_order` into one buffer per
    dtype, in that order; returns the buffers (zero_grad fills them) and each
    moved parameter's gradient address (a gradient replaced since is not
    the buffer's any more)."""
    by_dtype = {}
    for p in params_in_order:
        g = p.grad
        if g is not None and not g.is_sparse and g.device.type == "cpu" and g.is_contiguous():
            by_dtype.setdefault(g.dtype, []).append(p)
    buffers, where = [], {}
    for dtype, params in by_dtype.items():
        flat = shared_host_empty(sum(p.grad.numel() for p in params), dtype)
        at = 0
        for p in params:
            n = p.grad.numel()
            piece = flat[at:at + n].view_as(p.grad)
            piece.copy_(p.grad)
            p.grad = piece
            where[p] = piece.data_ptr()
            at += n
        buffers.append(flat)
    return buffers, where
