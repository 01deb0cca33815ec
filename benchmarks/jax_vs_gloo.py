"""A float32 allreduce inside jax.jit at 2 ranks, 4 KiB to 64 MiB: Chorus
(chorus.jax.allreduce) against JAX's own CPU collectives over gloo
(lax.psum under pmap after jax.distributed.initialize) and against
mpi4jax (where it installs), same sizes, same machine; scripts/bench_jax.sh
runs them and prints them side by side.
  --mode chorus  : under chorusrun -np 2
  --mode gloo    : RANK / WORLD_SIZE / MASTER_ADDR / MASTER_PORT set by hand
  --mode mpi4jax : under mpirun -n 2
Prints one line per size: 'SIZE bytes: T us, B GB/s bus bandwidth'."""
import argparse
import os
import statistics
import time

import jax
import jax.numpy as jnp
import numpy as np

SIZES = [4 << 10, 64 << 10, 1 << 20, 16 << 20, 64 << 20]


def timed(fn, x, iters):
    jax.block_until_ready(fn(x))  # compile, warm
    samples = []
    for _ in range(iters):
        start = time.perf_counter()
        jax.block_until_ready(fn(x))
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def chorus_rows(iters):
    import chorus.jax as hvd
    hvd.init()
    fn = jax.jit(lambda v: hvd.allreduce(v, op=hvd.Sum))
    out = []
    for size in SIZES:
        hvd.barrier()
        out.append((size, timed(fn, jnp.ones(size // 4, jnp.float32), iters(size))))
    return hvd.size(), hvd.rank(), out


def gloo_rows(iters):
    jax.config.update("jax_cpu_collectives_implementation", "gloo")
    rank, size = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    jax.distributed.initialize(f"{os.environ['MASTER_ADDR']}:{os.environ['MASTER_PORT']}", size, rank)
    fn = jax.pmap(lambda v: jax.lax.psum(v, "i"), axis_name="i")
    out = []
    for nbytes in SIZES:
        x = jnp.ones((jax.local_device_count(), nbytes // 4), jnp.float32)
        out.append((nbytes, timed(fn, x, iters(nbytes))))
    return size, rank, out


def mpi4jax_rows(iters):
    import mpi4jax
    from mpi4py import MPI
    comm = MPI.COMM_WORLD
    fn = jax.jit(lambda v: mpi4jax.allreduce(v, op=MPI.SUM, comm=comm))
    out = []
    for nbytes in SIZES:
        comm.Barrier()
        out.append((nbytes, timed(fn, jnp.ones(nbytes // 4, jnp.float32), iters(nbytes))))
    return comm.Get_size(), comm.Get_rank(), out


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--mode", choices=["chorus", "gloo", "mpi4jax"], required=True)
    args = parser.parse_args()
    iters = lambda nbytes: 200 if nbytes <= (1 << 20) else 20  # noqa: E731
    size, rank, rows = {"chorus": chorus_rows, "gloo": gloo_rows, "mpi4jax": mpi4jax_rows}[args.mode](iters)
    if rank == 0:
        print(f"# {args.mode}: float32 allreduce inside jit, {size} ranks, jax {jax.__version__}, median")
        for nbytes, seconds in rows:
            bus = 2 * (size - 1) / size * nbytes / seconds / 1e9
            print(f"{nbytes} bytes: {seconds * 1e6:.1f} us, {bus:.3f} GB/s bus bandwidth", flush=True)


if __name__ == "__main__":
    main()
