"""ElasticSampler (horovod.torch.elastic.ElasticSampler): DistributedSampler's
partition of a dataset over the ranks, which remembers what this epoch has
processed, so that after a reset the rest is partitioned over the new world."""
import math
import random

import torch.utils.data

from .. import basics


class ElasticSampler(torch.utils.data.Sampler):
    """Use: pass it to TorchState (which gathers every rank's processed
    indices at commit and syncs them from rank 0 after a reset); call
    record_batch(batch_idx, batch_size) after each batch, and set_epoch(e)
    at the end of an epoch (not the start: a partly done epoch goes on).

    dataset: of constant length. shuffle: a permutation by `seed` + epoch,
    the same on every rank (the seed must be too). Like DistributedSampler,
    the partition is padded with repeated indices so every rank gets
    ceil(remaining / size) of them (ranks run the same number of steps)."""

    def __init__(self, dataset, shuffle=True, seed=0):
        self.dataset = dataset
        self.shuffle = shuffle
        self.seed = seed
        self.epoch = 0
        self.processed_indices = set()
        self.num_replicas = 0
        self.rank = 0
        self.remaining_indices = []
        self.num_samples = 0
        self.total_size = 0
        self.indices = []
        self.reset()

    def set_epoch(self, epoch):
        """A new epoch: a new order, nothing processed yet."""
        self.epoch = epoch
        self.processed_indices = set()
        self.reset()

    def record_batch(self, batch_idx, batch_size):
        """Marks this rank's batch `batch_idx` (of `batch_size`) of this partition processed."""
        self.record_indices(self.get_indices(batch_idx, batch_size))

    def record_indices(self, indices):
        self.processed_indices.update(indices)

    def get_indices(self, batch_idx, batch_size):
        """This rank's dataset indices of batch `batch_idx`."""
        start = batch_idx * batch_size
        return self.indices[start:min(start + batch_size, len(self.indices))]

    def state_dict(self):
        return dict(epoch=self.epoch, processed_indices=set(self.processed_indices))

    def load_state_dict(self, state_dict):
        self.epoch = state_dict["epoch"]
        self.processed_indices = set(state_dict["processed_indices"])
        self.reset()

    def _world(self):
        """(rank, size) now. Between a lost rank and the next init (TorchState's
        restore) there is no world: the old partition stands until the sync
        after the reset loads the state again."""
        if basics.is_running():
            return basics.rank(), basics.size()
        return self.rank, max(self.num_replicas, 1)

    def reset(self):
        """Partitions the indices not processed this epoch over the current world."""
        self.rank, self.num_replicas = self._world()
        self.remaining_indices = [i for i in range(len(self.dataset)) if i not in self.processed_indices]
        self.num_samples = int(math.ceil(len(self.remaining_indices) / self.num_replicas))
        self.total_size = self.num_samples * self.num_replicas
        self.indices = self._partition()

    def _partition(self):
        order = list(self.remaining_indices)
        if self.shuffle:
            random.Random(self.seed + self.epoch).shuffle(order)
        padding = self.total_size - len(order)
        if order and padding:  # cycled: fewer remaining indices than ranks needs more than one copy
            order += (order * int(math.ceil(padding / len(order))))[:padding]
        return order[self.rank:self.total_size:self.num_replicas]

    def __iter__(self):
        return iter(list(self.indices))

    def __len__(self):
        return self.num_samples
