"""Training throughput from TensorFlow, Chorus against TensorFlow's own
MultiWorkerMirroredStrategy (its CPU collective ops), on the same model,
batch and TensorFlow: a small ResNet-style Keras CNN on synthetic 32x32
images. scripts/bench_tensorflow.sh runs both at 2 ranks in one run and
prints the ratio; one side alone:

    chorusrun -np 2 python3 benchmarks/tensorflow_vs_mwms.py --mode chorus
    TF_CONFIG=... python3 benchmarks/tensorflow_vs_mwms.py --mode mwms   (one per worker)
    chorusrun -np 2 python3 benchmarks/tensorflow_vs_mwms.py --mode alone  (no collective: the ceiling)
"""
import argparse
import json
import os
import time

import numpy as np
import tensorflow as tf


def resnet_like(classes=10):
    """Three stages of two residual blocks (32, 64, 128 channels): ~0.7 M parameters."""
    keras = tf.keras
    x = inputs = keras.Input((32, 32, 3))
    x = keras.layers.Conv2D(32, 3, padding="same", activation="relu")(x)
    for width, stride in ((32, 1), (64, 2), (128, 2)):
        for block in range(2):
            s = stride if block == 0 else 1
            y = keras.layers.Conv2D(width, 3, strides=s, padding="same", activation="relu")(x)
            y = keras.layers.Conv2D(width, 3, padding="same")(y)
            if s != 1 or x.shape[-1] != width:
                x = keras.layers.Conv2D(width, 1, strides=s)(x)
            x = keras.layers.Activation("relu")(keras.layers.Add()([x, y]))
    x = keras.layers.GlobalAveragePooling2D()(x)
    return keras.Model(inputs, keras.layers.Dense(classes)(x))


def synthetic(batch):
    rng = np.random.default_rng(0)
    return (tf.constant(rng.normal(size=(batch, 32, 32, 3)).astype(np.float32)),
            tf.constant(rng.integers(0, 10, size=(batch,)), tf.int64))


def timed(step, warmup, steps):
    for _ in range(warmup):
        step()
    start = time.perf_counter()
    for _ in range(steps):
        loss = step()
    float(loss)  # the last step finished
    return time.perf_counter() - start


def run_chorus(args, communicate=True):
    """Chorus's step; communicate=False: the same processes, each training
    alone with no collective at all (the ceiling any method can reach here)."""
    import chorus.tensorflow as hvd
    hvd.init()
    model, (x, y) = resnet_like(), synthetic(args.batch)
    opt = tf.keras.optimizers.SGD(0.01)
    loss_fn = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)

    @tf.function
    def step():
        with tf.GradientTape() as tape:
            loss = loss_fn(y, model(x, training=True))
        if communicate:
            tape = hvd.DistributedGradientTape(tape)
        grads = tape.gradient(loss, model.trainable_variables)
        opt.apply_gradients(zip(grads, model.trainable_variables))
        return loss

    seconds = timed(step, args.warmup, args.steps)
    return hvd.rank(), hvd.size(), seconds


def run_mwms(args):
    options = tf.distribute.experimental.CommunicationOptions(
        implementation=tf.distribute.experimental.CommunicationImplementation.RING)
    strategy = tf.distribute.MultiWorkerMirroredStrategy(communication_options=options)
    with strategy.scope():
        model = resnet_like()
        opt = tf.keras.optimizers.SGD(0.01)
    x, y = synthetic(args.batch)
    loss_fn = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True,
                                                           reduction=tf.keras.losses.Reduction.NONE)

    def replica_step():
        with tf.GradientTape() as tape:
            loss = tf.nn.compute_average_loss(loss_fn(y, model(x, training=True)))
        grads = tape.gradient(loss, model.trainable_variables)
        opt.apply_gradients(zip(grads, model.trainable_variables))  # all-reduces across the workers
        return loss

    @tf.function
    def step():
        return strategy.reduce(tf.distribute.ReduceOp.SUM, strategy.run(replica_step), axis=None)

    seconds = timed(step, args.warmup, args.steps)
    config = json.loads(os.environ["TF_CONFIG"])
    return config["task"]["index"], len(config["cluster"]["worker"]), seconds


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--mode", choices=["chorus", "mwms", "alone"], required=True)
    p.add_argument("--batch", type=int, default=32, help="images per rank per step")
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--steps", type=int, default=30)
    args = p.parse_args()
    if args.mode == "mwms":
        rank, size, seconds = run_mwms(args)
    else:
        rank, size, seconds = run_chorus(args, communicate=args.mode == "chorus")
    if rank == 0:
        images = args.batch * size * args.steps
        print(f"{args.mode}: {size} ranks, batch {args.batch}/rank, {args.steps} steps: "
              f"{images / seconds:.1f} images/s (TensorFlow {tf.__version__})", flush=True)


if __name__ == "__main__":
    main()
