"""Names of unnamed collectives. Ranks must give each collective the same
name; like Horovod's "allreduce.noname.<n>", one counter numbers every
unnamed call, so ranks that make the same calls in the same order agree."""
import itertools
import threading

_counter = itertools.count()
_lock = threading.Lock()


def auto_name(kind, name=None):
    if name is not None:
        if not isinstance(name, str):
            raise TypeError(f"chorus: a collective's name must be a str, not {type(name).__name__}")
        return name
    with _lock:
        return f"{kind}.noname.{next(_counter)}"
