"""Images/s of examples/jax's train step (its CNN, Adam, batch 64 per rank
of synthetic 28x28 images) at 2 ranks: the gradients averaged by
chorus.jax inside jax.jit against the same step with lax.pmean over JAX's
own gloo CPU collectives (pmap after jax.distributed.initialize).
scripts/bench_jax.sh runs both in one run.
  --mode chorus : under chorusrun -np 2
  --mode gloo   : RANK / WORLD_SIZE / MASTER_ADDR / MASTER_PORT set by hand"""
import argparse
import os
import sys
import time

import jax
import jax.numpy as jnp
import numpy as np
import optax

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples", "jax"))
from fashion_mnist import init_params, loss  # noqa: E402

BATCH, WARM, STEPS = 64, 5, 40


def batch(rank):
    rng = np.random.default_rng(rank)
    return (rng.normal(size=(BATCH, 28, 28, 1)).astype(np.float32),
            rng.integers(0, 10, size=BATCH).astype(np.int32))


def run_chorus():
    import chorus.jax as hvd
    hvd.init()
    tx = hvd.optax.DistributedGradientTransformation(optax.adam(1e-3))
    params = init_params(jax.random.PRNGKey(0))
    state = tx.init(params)

    @jax.jit
    def step(params, state, x, y):
        updates, state = tx.update(jax.grad(loss)(params, x, y), state, params)
        return optax.apply_updates(params, updates), state

    x, y = batch(hvd.rank())
    return hvd.size(), hvd.rank(), lambda p, s: step(p, s, x, y), params, state, hvd.barrier


def run_gloo():
    jax.config.update("jax_cpu_collectives_implementation", "gloo")
    rank, size = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    jax.distributed.initialize(f"{os.environ['MASTER_ADDR']}:{os.environ['MASTER_PORT']}", size, rank)
    tx = optax.adam(1e-3)
    params = init_params(jax.random.PRNGKey(0))
    state = tx.init(params)

    def one(params, state, x, y):
        grads = jax.lax.pmean(jax.grad(loss)(params, x, y), "i")
        updates, state = tx.update(grads, state, params)
        return optax.apply_updates(params, updates), state

    step = jax.pmap(one, axis_name="i")
    x, y = (a[None] for a in batch(rank))
    params, state = jax.tree_util.tree_map(lambda a: a[None], (params, state))
    return size, rank, lambda p, s: step(p, s, x, y), params, state, lambda: None


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--mode", choices=["chorus", "gloo"], required=True)
    args = parser.parse_args()
    size, rank, step, params, state, barrier = (run_chorus if args.mode == "chorus" else run_gloo)()
    for _ in range(WARM):
        params, state = step(params, state)
    jax.block_until_ready(params)
    barrier()
    start = time.perf_counter()
    for _ in range(STEPS):
        params, state = step(params, state)
    jax.block_until_ready(params)
    seconds = time.perf_counter() - start
    if rank == 0:
        print(f"# {args.mode} train step: {size} ranks, batch {BATCH} per rank, jax {jax.__version__}")
        print(f"RESULT {args.mode} {BATCH * size * STEPS / seconds:.1f} images/s", flush=True)


if __name__ == "__main__":
    main()
