"""Fashion-MNIST with a small CNN in plain JAX and optax, data-parallel with
chorus.jax: the train step runs under jax.jit with the gradients' allreduce
inside it (DistributedGradientTransformation: one grouped call per step).
Debian's dataset-fashion-mnist files; nothing is downloaded.
Run: chorusrun -np 2 python3 fashion_mnist.py (or chorusrun --tcp, mpirun).
Rank 0 prints the test accuracy; the exit code is 1 below
EXAMPLE_MIN_ACCURACY (85). EXAMPLE_EPOCHS (default 2),
EXAMPLE_TRAIN_SUBSET (all)."""
import os
import sys
import time

import jax
import jax.numpy as jnp
import numpy as np
import optax

import chorus.jax as hvd

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tensorflow"))
import fashion_mnist  # noqa: E402 (the IDX reader the TensorFlow examples use)


def init_params(key):
    """The C++ main job's model: conv 16, conv 32 (3x3, each then 2x2 max pool), dense 128, dense 10."""
    def dense(k, fan_in, shape):
        return jax.random.normal(k, shape) * np.sqrt(2.0 / fan_in)
    k = jax.random.split(key, 4)
    return {"c1": dense(k[0], 9, (3, 3, 1, 16)), "b1": jnp.zeros(16),
            "c2": dense(k[1], 9 * 16, (3, 3, 16, 32)), "b2": jnp.zeros(32),
            "d1": dense(k[2], 7 * 7 * 32, (7 * 7 * 32, 128)), "e1": jnp.zeros(128),
            "d2": dense(k[3], 128, (128, 10)), "e2": jnp.zeros(10)}


def conv_pool(x, w, b):
    y = jax.lax.conv_general_dilated(x, w, (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"))
    y = jax.nn.relu(y + b)
    return jax.lax.reduce_window(y, -jnp.inf, jax.lax.max, (1, 2, 2, 1), (1, 2, 2, 1), "VALID")


def logits(params, x):
    x = conv_pool(x, params["c1"], params["b1"])
    x = conv_pool(x, params["c2"], params["b2"])
    x = jax.nn.relu(x.reshape(x.shape[0], -1) @ params["d1"] + params["e1"])
    return x @ params["d2"] + params["e2"]


def loss(params, x, y):
    return optax.softmax_cross_entropy_with_integer_labels(logits(params, x), y).mean()


def main():
    epochs = int(os.environ.get("EXAMPLE_EPOCHS", "2"))
    min_accuracy = float(os.environ.get("EXAMPLE_MIN_ACCURACY", "85"))
    batch = 64
    hvd.init()
    (x_train, y_train), (x_test, y_test) = fashion_mnist.load()
    if fashion_mnist.subset():
        x_train, y_train = x_train[:fashion_mnist.subset()], y_train[:fashion_mnist.subset()]
    per_rank = len(x_train) // hvd.size()  # equal shards: every rank runs the same steps
    x_mine = x_train[hvd.rank() * per_rank:(hvd.rank() + 1) * per_rank]
    y_mine = y_train[hvd.rank() * per_rank:(hvd.rank() + 1) * per_rank]

    params = hvd.broadcast_parameters(init_params(jax.random.PRNGKey(hvd.rank())), root_rank=0)
    tx = hvd.optax.DistributedGradientTransformation(optax.adam(1e-3 * hvd.size()))
    opt_state = tx.init(params)

    @jax.jit
    def step(params, opt_state, x, y):
        grads = jax.grad(loss)(params, x, y)
        updates, opt_state = tx.update(grads, opt_state, params)  # the allreduce runs here, inside jit
        return optax.apply_updates(params, updates), opt_state

    rng = np.random.default_rng(hvd.rank())
    start = time.time()
    for epoch in range(epochs):
        order = rng.permutation(per_rank)
        for i in range(per_rank // batch):
            idx = order[i * batch:(i + 1) * batch]
            params, opt_state = step(params, opt_state, x_mine[idx], y_mine[idx])
        if hvd.rank() == 0:
            print(f"epoch {epoch + 1} done, {time.time() - start:.1f} s", flush=True)

    if hvd.rank() == 0:
        predict = jax.jit(lambda p, x: jnp.argmax(logits(p, x), axis=1))
        correct = sum(int((predict(params, x_test[i:i + 1000]) == y_test[i:i + 1000]).sum())
                      for i in range(0, len(y_test), 1000))
        accuracy = 100.0 * correct / len(y_test)
        print(f"test accuracy {accuracy:.2f} % after {epochs} epochs at {hvd.size()} ranks", flush=True)
        if accuracy < min_accuracy:
            raise SystemExit(1)


if __name__ == "__main__":
    main()
