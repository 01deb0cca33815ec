"""The few JAX internals chorus.jax needs, found where each JAX release
keeps them, so one install serves every jax from 0.5 on (jax.ffi, or
jax.extend.ffi where a release lacks it). Ordered effects have no public API: the
effect registries are reached in jax._src.effects, as every library that
orders custom calls (mpi4jax) does."""
import jax

version = tuple(int(p) for p in jax.__version__.split(".")[:3] if p.isdigit())
if version < (0, 5, 0):
    # jaxlib 0.4.38's CPU runtime aborts the process on a token operand of an
    # FFI custom call ("Unhandled primitive type 17"), which the ordered effect needs.
    raise ImportError(f"chorus.jax needs jax 0.5 or later (tested: 0.5.3, 0.8.0); this is jax {jax.__version__}")

from jax.interpreters import ad, batching, mlir  # noqa: E402,F401 (re-exported)

try:
    import jax.ffi as ffi  # noqa: E402
    ffi.ffi_lowering  # noqa: B018 (jax < 0.5 has no jax.ffi)
except (ImportError, AttributeError):
    import jax.extend.ffi as ffi

try:
    from jax.extend.core import Primitive
except ImportError:
    from jax.core import Primitive

from jax._src import effects as _effects
from jax._src.core import ShapedArray, trace_state_clean  # noqa: F401

try:
    abstract_token = ffi.abstract_token
except AttributeError:
    from jax._src.core import abstract_token  # noqa: F401

try:
    from jax._src.dispatch import apply_primitive
except ImportError:
    from jax.interpreters.xla import apply_primitive  # noqa: F401

TokenSet = mlir.TokenSet
Tracer = jax.core.Tracer


def ordered_effect(effect_type):
    """An instance of `effect_type` registered as an ordered effect that may
    appear inside control flow, custom derivatives and remat."""
    for registry in ("lowerable_effects", "ordered_effects", "control_flow_allowed_effects",
                     "custom_derivatives_allowed_effects", "remat_allowed_effects"):
        if hasattr(_effects, registry):
            getattr(_effects, registry).add_type(effect_type)
    return effect_type()


Effect = _effects.Effect
