"""One job, two frameworks: a torch model and a Keras model trained side by
side on Fashion-MNIST in the same processes, on the one Chorus runtime (one
init; their gradients negotiated and fused by the same background thread).
Run: chorusrun -np 2 python3 torch_and_keras.py. EXAMPLE_EPOCHS (default 1),
EXAMPLE_TRAIN_SUBSET (all)."""
import os

import keras
import numpy as np
import torch

import chorus.keras as hvd_keras
import chorus.torch as hvd_torch
import fashion_mnist

hvd_torch.init()  # one runtime for both
rank, size = hvd_torch.rank(), hvd_torch.size()
torch.manual_seed(0)
keras.utils.set_random_seed(0)

(x_train, y_train), (x_test, y_test) = fashion_mnist.load()
if fashion_mnist.subset():
    x_train, y_train = x_train[:fashion_mnist.subset()], y_train[:fashion_mnist.subset()]
x_shard, y_shard = x_train[rank::size], y_train[rank::size]
epochs, batch = int(os.environ.get("EXAMPLE_EPOCHS", "1")), 64

# torch: an MLP with horovod.torch's DistributedOptimizer.
net = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(784, 128), torch.nn.ReLU(), torch.nn.Linear(128, 10))
opt = hvd_torch.DistributedOptimizer(torch.optim.Adam(net.parameters(), 1e-3 * size),
                                     named_parameters=net.named_parameters())
hvd_torch.broadcast_parameters(net.state_dict(), root_rank=0)

# Keras: a small CNN with chorus.keras's DistributedOptimizer.
model = keras.Sequential([keras.Input((28, 28, 1)), keras.layers.Conv2D(16, 3, activation="relu"),
                          keras.layers.MaxPooling2D(), keras.layers.Flatten(), keras.layers.Dense(10)])
model.compile(optimizer=hvd_keras.DistributedOptimizer(keras.optimizers.Adam(1e-3 * size)),
              loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True), metrics=["accuracy"])

for epoch in range(epochs):
    for start in range(0, len(x_shard) - batch + 1, batch):  # torch steps
        xb = torch.from_numpy(x_shard[start:start + batch])
        yb = torch.from_numpy(y_shard[start:start + batch])
        opt.zero_grad()
        torch.nn.functional.cross_entropy(net(xb), yb).backward()
        opt.step()
    model.fit(x_shard, y_shard, batch_size=batch, epochs=1, verbose=0,
              callbacks=[hvd_keras.callbacks.BroadcastGlobalVariablesCallback(0)] if epoch == 0 else [])

if rank == 0:
    with torch.no_grad():
        torch_accuracy = float((net(torch.from_numpy(x_test)).argmax(1).numpy() == y_test).mean())
    keras_accuracy = float((np.argmax(model.predict(x_test, batch_size=1000, verbose=0), 1) == y_test).mean())
    print(f"test accuracy torch {torch_accuracy:.4f}, keras {keras_accuracy:.4f} after {epochs} epochs at {size} ranks")
