#!/usr/bin/env python3
"""What a collective costs from Python over the C ABI: one 4 KiB float32 Sum
allreduce (median and p99 of enqueue..wait, each after a barrier) and a storm
of 200 x 16 KiB allreduces submitted at once and then waited for (median
round), through chorus (NumPy) and chorus.torch. Compare with the same
sections of collective_benchmark (C++) run in the same job:
scripts/bench_python.sh runs both.

    chorusrun -np 2 python3 call_cost.py [--iters 2000] [--storm-rounds 30]"""
import argparse
import statistics
import time

import numpy as np

import chorus


def latency(submit, iters):
    times = []
    for _ in range(iters):
        chorus.barrier()
        t0 = time.perf_counter()
        submit().wait()
        times.append(time.perf_counter() - t0)
    times.sort()
    return statistics.median(times) * 1e6, times[int(0.99 * (len(times) - 1))] * 1e6


def storm(submit_all, rounds):
    times = []
    for _ in range(rounds):
        chorus.barrier()
        t0 = time.perf_counter()
        for h in submit_all():
            h.wait()
        times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1e3


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--iters", type=int, default=2000)
    p.add_argument("--storm-tensors", type=int, default=200)
    p.add_argument("--storm-bytes", type=int, default=16384)
    p.add_argument("--storm-rounds", type=int, default=30)
    args = p.parse_args()
    chorus.init()
    rank = chorus.rank()
    small = np.ones(1024, dtype=np.float32)
    n = args.storm_bytes // 4
    tensors = [np.ones(n, dtype=np.float32) for _ in range(args.storm_tensors)]
    names = [f"storm.{i}" for i in range(args.storm_tensors)]
    rows = []
    med, p99 = latency(lambda: chorus.allreduce_async_(small, op=chorus.Sum, name="latency.numpy"), args.iters)
    rows.append(("chorus (NumPy) 4 KiB allreduce_async_..wait", f"median {med:8.1f} us   p99 {p99:8.1f} us"))
    ms = storm(lambda: [chorus.allreduce_async_(t, op=chorus.Sum, name=k) for t, k in zip(tensors, names)],
               args.storm_rounds)
    rows.append((f"chorus (NumPy) storm {args.storm_tensors} x {args.storm_bytes} B", f"median {ms:8.3f} ms"))
    try:
        import torch
        import chorus.torch as hvd
    except ImportError:
        torch = None
    if torch is not None:
        t_small = torch.ones(1024)
        med, p99 = latency(lambda: hvd.allreduce_async_(t_small, op=hvd.Sum, name="latency.torch"), args.iters)
        rows.append(("chorus.torch 4 KiB allreduce_async_..wait", f"median {med:8.1f} us   p99 {p99:8.1f} us"))
        t_tensors = [torch.ones(n) for _ in range(args.storm_tensors)]
        ms = storm(lambda: [hvd.allreduce_async_(t, op=hvd.Sum, name=k) for t, k in zip(t_tensors, names)],
                   args.storm_rounds)
        rows.append((f"chorus.torch storm {args.storm_tensors} x {args.storm_bytes} B", f"median {ms:8.3f} ms"))
    if rank == 0:
        print(f"# Python call cost, {chorus.size()} ranks, {args.iters} latency iterations, "
              f"{args.storm_rounds} storm rounds")
        for what, value in rows:
            print(f"{what:50s} {value}")
    chorus.shutdown()


if __name__ == "__main__":
    main()
