"""Horovod's elastic Keras example (tensorflow2_keras_mnist_elastic.py) on
Fashion-MNIST, written for Chorus with one changed import: model.fit inside
hvd.elastic.run, its state kept by the elastic callbacks. Workers may die
or join while it runs: the survivors go back to the last commit, meet the
remaining and new workers, and fit on from there (docs/tensorflow.md).
Run:
  chorusrun --min-np 2 --max-np 3 --host-discovery-script ./hosts.sh \\
      python3 tensorflow2_keras_elastic.py
Rank 0 prints "epoch E batch B size S" lines and at the end the test
accuracy; the exit code is 1 below EXAMPLE_MIN_ACCURACY (85).
EXAMPLE_EPOCHS (default 3), EXAMPLE_TRAIN_SUBSET (all)."""
import os
import time

import keras

import chorus.tensorflow.keras as hvd  # was: import horovod.tensorflow.keras as hvd
import fashion_mnist

epochs = int(os.environ.get("EXAMPLE_EPOCHS", "3"))
min_accuracy = float(os.environ.get("EXAMPLE_MIN_ACCURACY", "85"))
base_lr = 0.001

hvd.init()
keras.utils.set_random_seed(42)
(x_train, y_train), (x_test, y_test) = fashion_mnist.load()
if fashion_mnist.subset():
    x_train, y_train = x_train[:fashion_mnist.subset()], y_train[:fashion_mnist.subset()]

model = keras.Sequential([  # the C++ main job's model (examples/train_fashion_mnist/model.cc)
    keras.Input((28, 28, 1)),
    keras.layers.Conv2D(16, 3, padding="same", activation="relu"),
    keras.layers.MaxPooling2D(),
    keras.layers.Conv2D(32, 3, padding="same", activation="relu"),
    keras.layers.MaxPooling2D(),
    keras.layers.Flatten(),
    keras.layers.Dense(128, activation="relu"),
    keras.layers.Dropout(0.25),
    keras.layers.Dense(10),
])
model.compile(optimizer=hvd.DistributedOptimizer(keras.optimizers.Adam(base_lr * hvd.size())),
              loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True), metrics=["accuracy"])
state = hvd.elastic.KerasState(model, batch=0, epoch=0)


def on_reset():  # the learning rate follows the world's size, as at the start
    model.optimizer.learning_rate.assign(base_lr * hvd.size())
    if hvd.rank() == 0:
        print(f"reset: {hvd.size()} ranks, t={time.time():.3f}", flush=True)


state.register_reset_callbacks([on_reset])


class Progress(keras.callbacks.Callback):
    def on_batch_end(self, batch, logs=None):
        if hvd.rank() == 0 and batch % 50 == 0:
            print(f"epoch {state.epoch + 1} batch {batch} size {hvd.size()} t={time.time():.3f}", flush=True)


callbacks = [
    hvd.elastic.CommitStateCallback(state, batches_per_commit=20),
    hvd.elastic.UpdateBatchStateCallback(state),
    hvd.elastic.UpdateEpochStateCallback(state),
    Progress(),
]


@hvd.elastic.run
def train(state):
    # Equal shards of the world of the moment: every rank runs the same
    # number of steps, so every rank makes the same collectives.
    per_rank = len(x_train) // hvd.size()
    shard = slice(hvd.rank() * per_rank, (hvd.rank() + 1) * per_rank)
    model.fit(x_train[shard], y_train[shard], batch_size=64, epochs=epochs - state.epoch, callbacks=callbacks,
              verbose=0)


train(state)
if hvd.rank() == 0:
    _, accuracy = model.evaluate(x_test, y_test, batch_size=1000, verbose=0)
    print(f"test accuracy: {100 * accuracy:.2f} % after {epochs} epochs on {hvd.size()} ranks", flush=True)
    if 100 * accuracy < min_accuracy:
        raise SystemExit(1)
