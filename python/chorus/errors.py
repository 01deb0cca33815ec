"""The exceptions of the chorus package: one root, one class per C ABI code.

Every class derives from ChorusError, itself a RuntimeError, as Horovod's
errors are (horovod.torch raises RuntimeError / HorovodInternalError from a
failed collective). Classes that mean what a built-in exception means derive
from it too, so `except ValueError` and `except TimeoutError` work as well.
The message is the C++ runtime's: a mismatch names the tensor and the ranks.
"""
import builtins


class ChorusError(RuntimeError):
    """Any failure reported by Chorus."""

    code = -1


class PreconditionError(ChorusError, ValueError):
    """Called before init() or after shutdown(), or in a state that forbids it.

    Also a ValueError, as Horovod's "Horovod has not been initialized" is."""

    code = -2


class AbortedError(ChorusError):
    """The runtime shut down (a rank stopped or failed) before the operation completed."""

    code = -3


class InvalidArgumentError(ChorusError, ValueError):
    """Bad input: mismatched shapes, dtypes, names or ops across ranks, a bad tensor, a bad argument."""

    code = -4


class TimeoutError(ChorusError, builtins.TimeoutError):  # noqa: A001 (Chorus's own, also a builtins.TimeoutError)
    """A wait with a timeout gave up; the operation goes on."""

    code = -6


class InternalError(ChorusError):
    """A broken invariant inside Chorus (a bug: please report it)."""

    code = -7


class UnknownHandleError(ChorusError, ValueError):
    """A handle that was never returned, or already waited for."""

    code = -100


# Horovod's name for a failed collective (horovod.common.exceptions).
HorovodInternalError = ChorusError

_BY_CODE = {cls.code: cls for cls in (PreconditionError, AbortedError, InvalidArgumentError, TimeoutError,
                                      InternalError, UnknownHandleError)}


def error_for(code, message):
    """The exception for a negative C ABI return code and its message."""
    return _BY_CODE.get(code, ChorusError)(message or f"chorus: error code {code}")
