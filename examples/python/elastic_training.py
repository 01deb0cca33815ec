# elastic_training.py: Fashion-MNIST trained elastically (docs/elastic.md).
# Ranks may die or join while it runs: the survivors roll back to the last
# commit, meet the remaining and new workers, and go on from there.
#   chorusrun --min-np 2 --max-np 4 --host-discovery-script ./hosts.sh python3 examples/python/elastic_training.py
# Rank 0 prints progress lines ("epoch E batch B size S") and, at the end,
# the test accuracy; the exit code is 1 below EXAMPLE_MIN_ACCURACY (85).
import os
import time

import torch
import torch.nn as nn
import torch.nn.functional as F
import torchvision

import chorus.torch as hvd
from fashion_mnist_data import prepare


class FashionNet(nn.Module):
    """The C++ main job's model (examples/train_fashion_mnist/model.cc)."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 16, 3, padding=1)
        self.conv2 = nn.Conv2d(16, 32, 3, padding=1)
        self.fc1 = nn.Linear(32 * 7 * 7, 128)
        self.fc2 = nn.Linear(128, 10)
        self.dropout = nn.Dropout(0.25)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        return self.fc2(self.dropout(F.relu(self.fc1(x.flatten(1)))))


def images(train):
    """The whole split as normalized tensors (no per-item decoding: fast on a CPU)."""
    data = torchvision.datasets.FashionMNIST(root=prepare(), train=train, download=False)
    x = (data.data.float().unsqueeze(1) / 255.0 - 0.2860) / 0.3530
    return torch.utils.data.TensorDataset(x, data.targets)


def accuracy(model, dataset):
    model.eval()
    with torch.no_grad():
        x, y = dataset.tensors
        correct = sum((model(x[i:i + 1000]).argmax(1) == y[i:i + 1000]).sum().item() for i in range(0, len(y), 1000))
    model.train()
    return 100.0 * correct / len(y)


def main():
    epochs = int(os.environ.get("EXAMPLE_EPOCHS", "3"))
    batch_size = int(os.environ.get("EXAMPLE_BATCH_SIZE", "64"))
    commit_every = int(os.environ.get("EXAMPLE_COMMIT_EVERY", "20"))  # batches between commits
    min_accuracy = float(os.environ.get("EXAMPLE_MIN_ACCURACY", "85"))
    torch.set_num_threads(1)  # several ranks share this machine's cores

    hvd.init()
    torch.manual_seed(0)
    train_set, test_set = images(True), images(False)
    model = FashionNet()
    base_lr = 0.01
    optimizer = hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=base_lr * hvd.size(), momentum=0.9),
                                         named_parameters=model.named_parameters())
    sampler = hvd.elastic.ElasticSampler(train_set, shuffle=True, seed=0)
    state = hvd.elastic.TorchState(model, optimizer, sampler=sampler, epoch=0)

    def on_reset():  # the learning rate follows the world's size, as at the start
        for group in optimizer.param_groups:
            group["lr"] = base_lr * hvd.size()
        if hvd.rank() == 0:
            print(f"reset: {hvd.size()} ranks, t={time.time():.3f}", flush=True)

    state.register_reset_callbacks([on_reset])

    @hvd.elastic.run
    def train(state):
        while state.epoch < epochs:
            loader = torch.utils.data.DataLoader(train_set, batch_size=batch_size, sampler=state.sampler)
            for batch_idx, (x, y) in enumerate(loader):
                optimizer.zero_grad()
                F.cross_entropy(model(x), y).backward()
                optimizer.step()
                state.sampler.record_batch(batch_idx, batch_size)
                if hvd.rank() == 0 and batch_idx % 50 == 0:
                    print(f"epoch {state.epoch + 1} batch {batch_idx} size {hvd.size()} t={time.time():.3f}",
                          flush=True)
                if batch_idx % commit_every == commit_every - 1:
                    state.commit()
            state.epoch += 1
            state.sampler.set_epoch(state.epoch)
            state.commit()

    train(state)
    if hvd.rank() == 0:
        acc = accuracy(model, test_set)
        print(f"test accuracy: {acc:.2f} % after {epochs} epochs on {hvd.size()} ranks", flush=True)
        if acc < min_accuracy:
            raise SystemExit(1)


if __name__ == "__main__":
    main()
