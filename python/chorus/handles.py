"""Handles of operations in flight, and the allocation callback through which
Chorus asks for outputs whose size only the ranks' agreement tells
(allgather, alltoall, reducescatter)."""
import ctypes
import itertools
import threading
import time

from . import errors
from ._library import ALLOC_FN, fast, lib

_CHORUS_ERR_TIMEOUT = -6
_wait_timeout = fast.wait if fast is not None else lib.chorus_wait_timeout
_WAIT_SLICE_SECONDS = 0.5  # a wait returns to Python this often, so Ctrl-C works


def check(rc):
    """rc when >= 0; else the exception for the code, with this thread's message."""
    if rc < 0:
        raise errors.error_for(rc, lib.chorus_last_error().decode("utf-8", "replace"))
    return rc


class Handle:
    """An operation in flight (Horovod's handle): poll(), wait(timeout),
    synchronize(). Keeps its buffers alive until it completes; wait returns
    the operation's result (its output, or a tuple for alltoall with splits)."""

    __slots__ = ("_ids", "_keep", "_finish", "_result", "_error", "_done", "_peek", "name", "__weakref__")

    def __init__(self, ids, keep, finish, name, peek=None):
        if _orphans:
            reap_orphans()
        self._ids = list(ids)
        self._peek = peek          # (id) -> None: reads what the C side offers between completion and release
        self._keep = keep          # inputs, outputs and allocators the C side still points at
        self._finish = finish      # () -> result, called once after every id completed
        self._done = False
        self._result = None
        self._error = None
        self.name = name

    def poll(self):
        """True once the operation completed (successfully or not)."""
        if self._done:
            return True
        for i in self._ids:
            rc = lib.chorus_poll(i)
            if rc == 0:
                return False
            if rc < 0 and rc != -100:  # failed: wait() raises it
                return True
        return True

    def wait(self, timeout=None):
        """Blocks until done and returns the result; raises the operation's
        error on failure, errors.TimeoutError when `timeout` seconds pass first
        (the operation goes on: wait again)."""
        if not self._done:
            self._wait_ids(timeout)
        if self._error is not None:
            raise self._error
        return self._result

    synchronize = wait

    def _wait_ids(self, timeout):
        deadline = None if timeout is None else time.monotonic() + timeout
        first_error = None
        while self._ids:
            rc = self._wait_one(self._ids[0], deadline)
            if rc == _CHORUS_ERR_TIMEOUT:
                raise errors.TimeoutError(f"operation '{self.name}' did not complete within {timeout} s")
            self._ids.pop(0)
            if rc < 0 and first_error is None:
                first_error = errors.error_for(rc, lib.chorus_last_error().decode("utf-8", "replace"))
        self._done = True
        try:
            if first_error is not None:
                self._error = first_error
            else:
                self._result = self._finish()
        except BaseException as e:  # a result that cannot be made is this handle's error
            self._error = e
        finally:
            self._keep = None
            self._finish = None

    def _wait_one(self, handle_id, deadline):
        """Waits in slices (Ctrl-C gets through between them): the C result,
        or the timeout code with the handle kept."""
        if deadline is None and self._peek is None:
            rc = _wait_timeout(handle_id, _WAIT_SLICE_SECONDS)  # most waits end in the first slice
            if rc != _CHORUS_ERR_TIMEOUT:
                return rc
        wait = lib.chorus_wait_completed if self._peek else _wait_timeout
        while True:
            left = _WAIT_SLICE_SECONDS if deadline is None else min(_WAIT_SLICE_SECONDS,
                                                                     max(0.0, deadline - time.monotonic()))
            rc = wait(handle_id, left)
            if rc != _CHORUS_ERR_TIMEOUT:
                break
            if deadline is not None and time.monotonic() >= deadline:
                return rc
        if self._peek and rc == 1:
            if lib.chorus_poll(handle_id) == 1:  # completed successfully: what it offers can be read
                self._peek(handle_id)
            rc = lib.chorus_wait(handle_id)
        return rc

    def __del__(self):
        # Dropped before its wait (Horovod's tests do that): the C side may still
        # use the buffers, and waiting here could deadlock (the other ranks may be
        # waiting for this one elsewhere). Keep them until the operation ends.
        if getattr(self, "_ids", None) and self._keep is not None:
            _orphans.append((self._ids, self._keep))


# Handles dropped before completion: their ids and the buffers they keep alive,
# released once chorus_poll says they ended (reap_orphans, at each new handle).
_orphans = []


def reap_orphans():
    """Releases the dropped handles whose operations ended."""
    still = []
    for ids, keep in _orphans:
        left = [i for i in ids if lib.chorus_poll(i) == 0]
        for i in ids:
            if i not in left:
                lib.chorus_wait(i)  # ended: release the C handle (its error, if any, was never asked for)
        if left:
            still.append((left, keep))
    _orphans[:] = still


class FailedHandle(Handle):
    """A handle whose operation could not start; wait raises `error`."""

    def __init__(self, error, name):
        super().__init__([], None, None, name)
        self._done = True
        self._error = error


# --- outputs sized by the negotiation ---------------------------------------

_allocators = {}            # key -> Allocator, while its operation is in flight
_keys = itertools.count(1)
_keys_lock = threading.Lock()
_EMPTY = ctypes.create_string_buffer(8)  # what a zero-byte output points at (NULL would fail the operation)


class Allocator:
    """Makes one output when Chorus asks, through `make(shape) -> (object, pointer)`."""

    __slots__ = ("key", "make", "output", "shape")

    def __init__(self, make):
        self.make = make
        self.output = None
        self.shape = None
        with _keys_lock:
            self.key = next(_keys)
        _allocators[self.key] = self

    def release(self):
        _allocators.pop(self.key, None)


@ALLOC_FN
def _allocate(user_data, nbytes, shape, ndim):
    # Runs on a Chorus thread with the GIL taken by ctypes; NULL fails the operation.
    try:
        alloc = _allocators.pop(user_data)  # one allocation per operation: unregistered at once
        alloc.shape = tuple(shape[i] for i in range(ndim))
        alloc.output, ptr = alloc.make(alloc.shape)
        if nbytes == 0:
            return ptr or ctypes.addressof(_EMPTY)
        return ptr or None
    except BaseException:  # noqa: BLE001 (nothing may escape into C)
        return None


ALLOCATE = _allocate
