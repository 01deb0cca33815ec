"""Chorus's core collectives on NumPy arrays (no torch at all).

    chorusrun -np 2 python3 examples/python/numpy_allreduce.py

Every rank checks the results; rank 0 prints them.
"""

import numpy as np

import chorus


def main():
    chorus.init()
    rank, n = chorus.rank(), chorus.size()

    # Rank r contributes eight copies of r + 1.
    x = np.full(8, rank + 1, dtype=np.float32)
    total = chorus.allreduce(x, op=chorus.Sum, name="x")  # returns a new array

    # The same, asynchronously, averaged: start it, then wait for the result.
    h = chorus.allreduce_async(x, op=chorus.Average, name="x.avg")
    avg = chorus.synchronize(h)

    # Rank r sends r + 1 values, 0..r; every rank gets them all, in rank order.
    g = chorus.allgather(np.arange(rank + 1, dtype=np.int64), name="ranks")

    expected_sum = n * (n + 1) / 2  # 1 + 2 + ... + n
    expected_avg = (n + 1) / 2
    expected_g = np.concatenate([np.arange(r + 1, dtype=np.int64) for r in range(n)])

    assert np.array_equal(x, np.full(8, rank + 1, dtype=np.float32)), f"input changed: {x}"
    assert total is not x and total.dtype == np.float32 and total.shape == (8,), (total.dtype, total.shape)
    assert np.array_equal(total, np.full(8, expected_sum, dtype=np.float32)), f"sum {total}, want {expected_sum}"
    assert avg.dtype == np.float32 and avg.shape == (8,), (avg.dtype, avg.shape)
    assert np.allclose(avg, expected_avg), f"average {avg}, want {expected_avg}"
    assert g.dtype == np.int64 and np.array_equal(g, expected_g), f"allgather {g}, want {expected_g}"

    if rank == 0:
        print(f"{n} ranks")
        print(f"allreduce Sum:           {total}  (n(n+1)/2 = {expected_sum:g})")
        print(f"allreduce_async Average: {avg}  ((n+1)/2 = {expected_avg:g})")
        print(f"allgather:               {g}")
        print("all results right")

    chorus.shutdown()


if __name__ == "__main__":
    main()
