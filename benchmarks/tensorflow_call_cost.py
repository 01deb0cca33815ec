"""Per-call cost of a small allreduce from TensorFlow, against the same
allreduce from NumPy through chorus (the package's ctypes/_fast path), in one
run: `mpirun -n 2 python3 benchmarks/tensorflow_call_cost.py` (or chorusrun).
Prints microseconds per call (median of 5 rounds) for a 4 KiB float32
allreduce: NumPy, TensorFlow eager, a tf.function without a collective
(TensorFlow's own call cost), one allreduce per tf.function call, 100
chained in one call (per allreduce), the same through tf.numpy_function
(the mechanism not taken), and 200 16 KiB gradients in one
grouped call, as DistributedGradientTape makes."""
import statistics
import time

import numpy as np
import tensorflow as tf

import chorus
import chorus.tensorflow as hvd


def per_call_us(fn, calls):
    fn()  # warm: traces, first negotiation
    rounds = []
    for _ in range(5):
        chorus.barrier()
        start = time.perf_counter()
        for _ in range(calls):
            fn()
        rounds.append((time.perf_counter() - start) / calls * 1e6)
    return statistics.median(rounds)


def main():
    hvd.init()
    a = np.ones(1024, np.float32)
    t = tf.ones([1024])
    one = tf.function(lambda x: hvd.allreduce(x, op=hvd.Sum, name="cost.fn"))
    empty = tf.function(lambda x: x + 1)  # TensorFlow's own cost of calling a function

    @tf.function
    def hundred(x):  # 100 allreduces per call: the function call's cost spread over them
        for k in range(100):
            x = hvd.allreduce(x, op=hvd.Max, name=f"cost.chain.{k}")
        return x
    @tf.function
    def hundred_numpy_function(x):  # the candidate not taken: tf.numpy_function over the package's NumPy path
        for k in range(100):
            x = tf.numpy_function(lambda a, k=k: chorus.allreduce(a, op=chorus.Max, name=f"cost.npf.{k}"), [x],
                                  tf.float32)
        return x

    grads = [tf.ones([4096]) for _ in range(200)]
    storm = tf.function(lambda *g: hvd.grouped_allreduce(list(g), op=hvd.Average))
    rows = [
        ("numpy chorus.allreduce 4 KiB", per_call_us(lambda: chorus.allreduce(a, op=chorus.Sum, name="cost.np"), 2000)),
        ("tf eager allreduce 4 KiB", per_call_us(lambda: hvd.allreduce(t, op=hvd.Sum, name="cost.eager"), 2000)),
        ("tf.function x + 1 (no collective)", per_call_us(lambda: empty(t), 2000)),
        ("tf.function allreduce 4 KiB", per_call_us(lambda: one(t), 2000)),
        ("tf.function 100 allreduces 4 KiB, each", per_call_us(lambda: hundred(t), 20) / 100),
        ("tf.numpy_function 100 allreduces, each", per_call_us(lambda: hundred_numpy_function(t), 20) / 100),
        ("tf.function 200 x 16 KiB grouped", per_call_us(lambda: storm(*grads), 50)),
    ]
    if hvd.rank() == 0:
        print(f"ranks {hvd.size()}, TensorFlow {tf.__version__}")
        for name, us in rows:
            print(f"{name:36s} {us:9.1f} us/call")
    hvd.shutdown()


if __name__ == "__main__":
    main()
