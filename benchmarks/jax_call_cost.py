"""Per-call cost of a small allreduce from JAX, in one run:
`chorusrun -np 2 python3 benchmarks/jax_call_cost.py` (or mpirun).
Prints microseconds per call (median of 5 rounds) for a 4 KiB float32
allreduce: through the package's NumPy path, chorus.jax outside a trace,
a jitted function without a collective (JAX's own call cost), one
allreduce per jitted call, 100 in one jitted call (per allreduce), and 200
16 KiB gradients in one grouped call inside jit, as the optax
transformation makes."""
import statistics
import time

import jax
import jax.numpy as jnp
import numpy as np

import chorus
import chorus.jax as hvd


def per_call_us(fn, calls):
    jax.block_until_ready(fn())  # warm: traces, compiles, first negotiation
    rounds = []
    for _ in range(5):
        chorus.barrier()
        start = time.perf_counter()
        for _ in range(calls):
            out = fn()
        jax.block_until_ready(out)
        rounds.append((time.perf_counter() - start) / calls * 1e6)
    return statistics.median(rounds)


def main():
    hvd.init()
    a = np.ones(1024, np.float32)
    x = jnp.ones(1024)
    empty = jax.jit(lambda v: v + 1)
    one = jax.jit(lambda v: hvd.allreduce(v, op=hvd.Sum))

    @jax.jit
    def hundred(v):
        for _ in range(100):
            v = hvd.allreduce(v, op=hvd.Max)
        return v

    grads = [jnp.ones(4096) for _ in range(200)]
    storm = jax.jit(lambda g: hvd.grouped_allreduce(g, op=hvd.Average))
    rows = [
        ("numpy chorus.allreduce 4 KiB", per_call_us(lambda: chorus.allreduce(a, op=chorus.Sum, name="c.np"), 2000)),
        ("chorus.jax eager allreduce 4 KiB", per_call_us(lambda: hvd.allreduce(x, op=hvd.Sum, name="c.e"), 2000)),
        ("jax.jit x + 1 (no collective)", per_call_us(lambda: empty(x), 2000)),
        ("jax.jit allreduce 4 KiB", per_call_us(lambda: one(x), 2000)),
        ("jax.jit 100 allreduces 4 KiB, each", per_call_us(lambda: hundred(x), 20) / 100),
        ("jax.jit 200 x 16 KiB grouped", per_call_us(lambda: storm(grads), 50)),
    ]
    if hvd.rank() == 0:
        print(f"chorus.jax call cost, {hvd.size()} ranks, jax {jax.__version__}, median of 5 rounds")
        for label, us in rows:
            print(f"{label:<40} {us:10.1f} us")


if __name__ == "__main__":
    main()
