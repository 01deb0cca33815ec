"""Horovod's Keras example (model.fit with DistributedOptimizer and its
callbacks), on Fashion-MNIST, written for Chorus with one changed import.
Run: chorusrun -np 2 python3 tensorflow2_keras_mnist.py (or chorusrun
--tcp, mpirun, torchrun's variables). EXAMPLE_EPOCHS (default 2),
EXAMPLE_TRAIN_SUBSET (all)."""
import os

import keras

import chorus.tensorflow.keras as hvd  # was: import horovod.tensorflow.keras as hvd
import fashion_mnist

hvd.init()
keras.utils.set_random_seed(42)

(x_train, y_train), (x_test, y_test) = fashion_mnist.load()
if fashion_mnist.subset():
    x_train, y_train = x_train[:fashion_mnist.subset()], y_train[:fashion_mnist.subset()]
x_train, y_train = x_train[hvd.rank()::hvd.size()], y_train[hvd.rank()::hvd.size()]  # this rank's shard

model = keras.Sequential([
    keras.Input((28, 28, 1)),
    keras.layers.Conv2D(32, 3, activation="relu"),
    keras.layers.Conv2D(64, 3, activation="relu"),
    keras.layers.MaxPooling2D(),
    keras.layers.Dropout(0.25),
    keras.layers.Flatten(),
    keras.layers.Dense(128, activation="relu"),
    keras.layers.Dropout(0.5),
    keras.layers.Dense(10),
])
scaled_lr = 0.001 * hvd.size()  # Horovod: scale the learning rate by the ranks
opt = hvd.DistributedOptimizer(keras.optimizers.Adam(scaled_lr))
model.compile(optimizer=opt, loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
              metrics=["accuracy"])
callbacks = [
    hvd.callbacks.BroadcastGlobalVariablesCallback(0),  # every rank starts from rank 0's state
    hvd.callbacks.MetricAverageCallback(),  # the epoch's metrics averaged over the ranks
    hvd.callbacks.LearningRateWarmupCallback(initial_lr=scaled_lr, warmup_epochs=1, verbose=1),
]
epochs = int(os.environ.get("EXAMPLE_EPOCHS", "2"))
model.fit(x_train, y_train, batch_size=64, epochs=epochs, callbacks=callbacks, verbose=2 if hvd.rank() == 0 else 0)

if hvd.rank() == 0:
    _, accuracy = model.evaluate(x_test, y_test, batch_size=1000, verbose=0)
    print(f"test accuracy {accuracy:.4f} after {epochs} epochs at {hvd.size()} ranks")
