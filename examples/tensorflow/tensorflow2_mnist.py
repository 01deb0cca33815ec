"""Horovod's TensorFlow 2 example (a custom training loop with
DistributedGradientTape under tf.function), on Fashion-MNIST, written for
Chorus with one changed import. Run: chorusrun -np 2 python3
tensorflow2_mnist.py (or chorusrun --tcp, mpirun, torchrun's variables).
EXAMPLE_EPOCHS (default 2), EXAMPLE_TRAIN_SUBSET (all)."""
import os

import tensorflow as tf

import chorus.tensorflow as hvd  # was: import horovod.tensorflow as hvd
import fashion_mnist

hvd.init()
tf.random.set_seed(42)

(x_train, y_train), (x_test, y_test) = fashion_mnist.load()
if fashion_mnist.subset():
    x_train, y_train = x_train[:fashion_mnist.subset()], y_train[:fashion_mnist.subset()]
batch = 64
dataset = (tf.data.Dataset.from_tensor_slices((x_train, y_train))
           .shard(hvd.size(), hvd.rank()).shuffle(10000, seed=hvd.rank()).batch(batch))

model = tf.keras.Sequential([
    tf.keras.Input((28, 28, 1)),
    tf.keras.layers.Conv2D(32, 3, activation="relu"),
    tf.keras.layers.Conv2D(64, 3, activation="relu"),
    tf.keras.layers.MaxPooling2D(),
    tf.keras.layers.Dropout(0.25),
    tf.keras.layers.Flatten(),
    tf.keras.layers.Dense(128, activation="relu"),
    tf.keras.layers.Dropout(0.5),
    tf.keras.layers.Dense(10),
])
loss_fn = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)
opt = tf.keras.optimizers.Adam(0.001 * hvd.size())  # Horovod: scale the learning rate by the ranks


@tf.function
def training_step(images, labels, first_batch):
    with tf.GradientTape() as tape:
        loss = loss_fn(labels, model(images, training=True))
    tape = hvd.DistributedGradientTape(tape)  # the gradients averaged over the ranks
    grads = tape.gradient(loss, model.trainable_variables)
    opt.apply_gradients(zip(grads, model.trainable_variables))
    # After the first step (the optimizer's variables exist now): everyone from rank 0's state.
    if first_batch:
        hvd.broadcast_variables(model.variables, root_rank=0)
        hvd.broadcast_variables(opt.variables, root_rank=0)
    return loss


epochs = int(os.environ.get("EXAMPLE_EPOCHS", "2"))
first = True
for epoch in range(epochs):
    for step, (images, labels) in enumerate(dataset):
        loss = training_step(images, labels, first)
        first = False
        if step % 100 == 0 and hvd.rank() == 0:
            print(f"epoch {epoch} step {step}: loss {float(loss):.4f}", flush=True)

if hvd.rank() == 0:
    logits = model.predict(x_test, batch_size=1000, verbose=0)
    accuracy = float(tf.reduce_mean(tf.cast(tf.argmax(logits, 1) == y_test, tf.float32)))
    print(f"test accuracy {accuracy:.4f} after {epochs} epochs at {hvd.size()} ranks")
