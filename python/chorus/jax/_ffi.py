"""Loads Chorus's XLA FFI handlers (libchorus_jax.so, built against jaxlib's
header-only XLA FFI C API), binds them to the libchorus the package loaded,
and registers each as a custom-call target of XLA's CPU platform."""
import ctypes

import jax

from .. import _library
from ._compat import ffi

_NAME = "libchorus_jax.so"
# Collective kind -> the handler's symbol and custom-call target name.
KINDS = ("allreduce", "allgather", "reducescatter", "broadcast", "alltoall", "barrier", "join", "refuse")


def target(kind):
    return "chorus_jax_" + kind


def _load():
    path = _library.adapter_library(_NAME, "CHORUS_JAX_LIBRARY", "frameworks/jax",
                                    "chorus.jax (built where the build found jax: docs/jax.md)")
    handle = ctypes.CDLL(str(path))
    error = ctypes.create_string_buffer(512)
    if handle.chorus_jax_bind(str(_library.path).encode(), error, len(error)) != 0:
        raise ImportError("chorus.jax: " + error.value.decode())
    for kind in KINDS:
        function = getattr(handle, target(kind))
        try:
            ffi.register_ffi_target(target(kind), ffi.pycapsule(function), platform="cpu")
        except Exception as e:  # noqa: BLE001 (jaxlib raises its own types)
            raise ImportError(f"chorus.jax: jax {jax.__version__} did not take Chorus's FFI handler "
                              f"{target(kind)}: {e}") from e
    return handle


library = _load()
