#!/usr/bin/env python3
"""What one call into libchorus costs from Python, by binding technique:
ctypes (what the package uses), cffi in ABI mode (dlopen, no compiler), and
a plain Python function as the floor; on chorus_is_initialized() (no
arguments) and on chorus_poll(handle) (one int64 argument, an unknown
handle: the table lookup and an error path). nanobind and cffi's API mode
compile a module against the Python headers and are not measured here (see
docs/python.md for why they were not chosen).

    python3 binding_cost.py [--calls 200000]"""
import argparse
import ctypes
import os
import sys
import timeit

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
from chorus._library import fast, lib, path  # noqa: E402
import chorus  # noqa: E402


def per_call(fn, calls):
    best = min(timeit.repeat(fn, number=calls, repeat=5))
    return best / calls * 1e9


def submit_costs(rounds):
    """200 allreduces submitted (timed), then waited for (timed), one process:
    ctypes against chorus._fast, alternating; the median round's per-call ns."""
    import statistics

    import numpy as np
    chorus.init()
    arrays = [np.ones(1024, dtype=np.float32) for _ in range(200)]
    ptrs = [a.ctypes.data for a in arrays]
    shape = (ctypes.c_int64 * 1)(1024)
    h = ctypes.c_int64()
    names = [b"binding.%d" % i for i in range(200)]

    def ctypes_submit(k, p):
        lib.chorus_allreduce_shaped_async(0, k, p, p, shape, 1, 6, 0, 1.0, 1.0, -1, None, ctypes.byref(h))
        return h.value

    def fast_submit(k, p):
        return fast.allreduce(0, k, p, p, (1024,), 6, 0, 1.0, 1.0, -1, None)
    ways = {"ctypes": (ctypes_submit, lib.chorus_wait_timeout)}
    if fast is not None:
        ways["_fast "] = (fast_submit, fast.wait)
    times = {w: ([], []) for w in ways}
    for _ in range(rounds):
        for way, (submit, wait) in ways.items():
            t0 = timeit.default_timer()
            ids = [submit(k, p) for k, p in zip(names, ptrs)]
            t1 = timeit.default_timer()
            for i in ids:
                wait(i, 1.0)
            t2 = timeit.default_timer()
            times[way][0].append((t1 - t0) / 200 * 1e9)
            times[way][1].append((t2 - t1) / 200 * 1e9)
    chorus.shutdown()
    rows = []
    for way, (sub, wt) in times.items():
        rows.append((f"{way}  allreduce submit (200 in a row)", statistics.median(sub), None))
        rows.append((f"{way}  wait (200 in a row)", statistics.median(wt), None))
    return rows


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--calls", type=int, default=200000)
    args = p.parse_args()
    rows = [("python function (floor)", per_call(lambda: 0, args.calls), None)]
    rows.append(("ctypes  chorus_is_initialized()", per_call(lib.chorus_is_initialized, args.calls), None))
    poll = lib.chorus_poll
    rows.append(("ctypes  chorus_poll(int64)", per_call(lambda: poll(123456), args.calls), None))
    try:
        import cffi
        ffi = cffi.FFI()
        ffi.cdef("int chorus_is_initialized(void); int chorus_poll(int64_t handle);")
        c = ffi.dlopen(str(path))
        rows.append(("cffi ABI chorus_is_initialized()", per_call(c.chorus_is_initialized, args.calls), None))
        cpoll = c.chorus_poll
        rows.append(("cffi ABI chorus_poll(int64)", per_call(lambda: cpoll(123456), args.calls), None))
    except ImportError:
        rows.append(("cffi (not installed)", float("nan"), None))
    rows += submit_costs(50)
    print(f"# one call from Python, ns (best of 5 x {args.calls} calls), Python {sys.version.split()[0]}")
    for what, ns, _ in rows:
        print(f"{what:36s} {ns:8.1f} ns")


if __name__ == "__main__":
    main()
