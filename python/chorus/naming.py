"""Names of unnamed collectives. Ranks must give each collective the same
name; like Horovod's "allreduce.noname.<n>", a counter numbers the unnamed
calls, so ranks that make the same calls in the same order agree. There is
one counter per process set (Horovod has one per process), so calls inside
one set, which its non-members do not make, never shift the names of
another set's calls; the counters start again at init."""
import itertools
import threading

_counters = {}
_lock = threading.Lock()


def auto_name(kind, name=None, process_set=None):
    if name is not None:
        if not isinstance(name, str):
            raise TypeError(f"chorus: a collective's name must be a str, not {type(name).__name__}")
        return name
    set_id = getattr(process_set, "process_set_id", None) or 0
    with _lock:
        counter = _counters.get(set_id)
        if counter is None:
            counter = _counters[set_id] = itertools.count()
        n = next(counter)
    return f"{kind}.noname.{n}" if set_id == 0 else f"{kind}.noname.set{set_id}.{n}"


def reset():
    with _lock:
        _counters.clear()
