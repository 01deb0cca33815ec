"""A training step under tf.function, the normal case: data-parallel SGD
with DistributedGradientTape gives the weights of one process training on
the whole batch. And the ordering inside a graph: many collectives in one
function, ranks that trace and run it at different times, never a hang."""
import time

import numpy as np
import tensorflow as tf

import chorus.tensorflow as hvd


def _data(n_rows):
    rng = np.random.default_rng(7)
    x = rng.normal(size=(n_rows, 3)).astype(np.float32)
    y = (x @ np.array([[1.5], [-2.0], [0.5]], np.float32) + 0.25).astype(np.float32)
    return x, y


def _train(x, y, steps, tape_wrapper):
    w = tf.Variable(tf.zeros([3, 1]))
    b = tf.Variable(tf.zeros([1]))
    opt = tf.keras.optimizers.SGD(learning_rate=0.1)

    @tf.function
    def step(xb, yb):
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.square(xb @ w + b - yb))
        tape = tape_wrapper(tape)
        grads = tape.gradient(loss, [w, b])
        opt.apply_gradients(zip(grads, [w, b]))
        return loss

    for _ in range(steps):
        step(x, y)
    return w.numpy(), b.numpy()


def test_tf_function_training_matches_one_process():
    n, r = hvd.size(), hvd.rank()
    x, y = _data(8 * n)
    shard = slice(8 * r, 8 * (r + 1))
    w, b = _train(x[shard], y[shard], 20, hvd.DistributedGradientTape)
    w_ref, b_ref = _train(x, y, 20, lambda tape: tape)  # one process, the whole batch
    np.testing.assert_allclose(w, w_ref, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(b, b_ref, rtol=1e-4, atol=1e-5)


def test_many_collectives_in_one_function_ranks_out_of_step():
    n, r = hvd.size(), hvd.rank()

    @tf.function
    def many(x):
        outs = [hvd.allreduce(x * k, op=hvd.Sum) for k in range(24)]  # independent ops: chained in program order
        outs.append(hvd.allgather(tf.reshape(x, [1, -1]))[0] * 0)
        return tf.add_n(outs)

    time.sleep(0.2 * r)  # ranks trace and run at different times
    got = many(tf.fill([4], float(r)))
    total = n * (n - 1) / 2
    np.testing.assert_allclose(got.numpy(), np.full(4, total * sum(range(24))))
    for _ in range(3):  # called again: each collective once per call
        np.testing.assert_allclose(many(tf.fill([4], float(r))).numpy(), np.full(4, total * sum(range(24))))
