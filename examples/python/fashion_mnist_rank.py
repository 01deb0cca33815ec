"""One rank's part of the Fashion-MNIST example for the cluster engines
(examples/spark, examples/ray): the C++ main job's CNN trained with
chorus.torch's DistributedOptimizer on this rank's shard, Debian's
dataset-fashion-mnist (nothing downloaded)."""
import torch
import torch.nn.functional as F

import chorus.torch as hvd
from elastic_training import FashionNet, accuracy, images


def train(epochs, after_epoch=None):
    """Trains `epochs` epochs on every rank; returns rank 0's test accuracy
    (%), None on the others. after_epoch(epoch, model): called on every rank
    after each epoch (Ray Train's reports)."""
    hvd.init()
    torch.set_num_threads(1)
    torch.manual_seed(0)
    train_set, test_set = images(True), images(False)
    model = FashionNet()
    optimizer = hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.01 * hvd.size(), momentum=0.9),
                                         named_parameters=model.named_parameters())
    hvd.broadcast_parameters(model.state_dict(), root_rank=0)
    sampler = torch.utils.data.distributed.DistributedSampler(train_set, num_replicas=hvd.size(), rank=hvd.rank(),
                                                              shuffle=True, seed=0)
    loader = torch.utils.data.DataLoader(train_set, batch_size=64, sampler=sampler)
    for epoch in range(epochs):
        sampler.set_epoch(epoch)
        for x, y in loader:
            optimizer.zero_grad()
            F.cross_entropy(model(x), y).backward()
            optimizer.step()
        if after_epoch is not None:
            after_epoch(epoch, model)
    return accuracy(model, test_set) if hvd.rank() == 0 else None
