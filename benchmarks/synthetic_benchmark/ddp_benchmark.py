#!/usr/bin/env python3
"""ResNet-18 training throughput with PyTorch DDP (gloo): the same workload
as synthetic_benchmark (Horovod's pytorch_synthetic_benchmark), for the
side-by-side comparison in scripts/compare_ddp.sh.

One process per rank, started with torch.distributed's env:// variables
(RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT), e.g. by
`python3 -m torch.distributed.run --nproc_per_node 2 ddp_benchmark.py`.
Prints the same lines as synthetic_benchmark, ending with
`RESULT np=N imgs_per_sec_total=... per_rank=... std=...`.
"""

import argparse
import contextlib
import os
import sys
import timeit

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP


# torchvision is not a dependency (Debian has no python3-torchvision for
# this torch), so ResNet-18 is written out here in torchvision's layout,
# exactly as benchmarks/synthetic_benchmark/resnet.cc builds it.
class BasicBlock(nn.Module):
    def __init__(self, in_channels, out_channels, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(in_channels, out_channels, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(out_channels)
        self.conv2 = nn.Conv2d(out_channels, out_channels, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(out_channels)
        self.downsample = None
        if stride != 1 or in_channels != out_channels:
            self.downsample = nn.Sequential(
                nn.Conv2d(in_channels, out_channels, 1, stride, bias=False), nn.BatchNorm2d(out_channels))

    def forward(self, x):
        out = F.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        out += x if self.downsample is None else self.downsample(x)
        return F.relu(out)


class ResNet18(nn.Module):
    def __init__(self, num_classes=10):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 64, 7, 2, 3, bias=False)
        self.bn1 = nn.BatchNorm2d(64)
        self.layer1 = nn.Sequential(BasicBlock(64, 64, 1), BasicBlock(64, 64, 1))
        self.layer2 = nn.Sequential(BasicBlock(64, 128, 2), BasicBlock(128, 128, 1))
        self.layer3 = nn.Sequential(BasicBlock(128, 256, 2), BasicBlock(256, 256, 1))
        self.layer4 = nn.Sequential(BasicBlock(256, 512, 2), BasicBlock(512, 512, 1))
        self.fc = nn.Linear(512, num_classes)
        for m in self.modules():  # torchvision's initialization
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
            elif isinstance(m, nn.BatchNorm2d):
                nn.init.ones_(m.weight)
                nn.init.zeros_(m.bias)

    def forward(self, x):
        x = F.relu(self.bn1(self.conv1(x)))
        x = F.max_pool2d(x, 3, 2, 1)
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(x, 1), 1))


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--batch-size", type=int, default=32, help="images per rank and backward pass")
    p.add_argument("--num-warmup-batches", type=int, default=10)
    p.add_argument("--num-batches-per-iter", type=int, default=10)
    p.add_argument("--num-iters", type=int, default=10)
    p.add_argument("--batches-per-allreduce", type=int, default=1,
                   help="backward passes per step (the first ones under no_sync)")
    p.add_argument("--fp16-allreduce", action="store_true", help="DDP's fp16 compression communication hook")
    p.add_argument("--lr", type=float, default=0.01, help="per rank; SGD gets lr x world size")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--seed", type=int, default=42)
    return p.parse_args()


def main():
    args = parse_args()
    torch.set_num_threads(args.threads)
    dist.init_process_group("gloo")
    rank, size = dist.get_rank(), dist.get_world_size()
    log = rank == 0
    torch.manual_seed(args.seed)

    model = DDP(ResNet18(10))  # broadcasts rank 0's weights; gloo allreduce in buckets during backward
    if args.fp16_allreduce:
        from torch.distributed.algorithms.ddp_comm_hooks import default_hooks
        model.register_comm_hook(None, default_hooks.fp16_compress_hook)
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr * size)
    data = torch.randn(args.batch_size, 3, 32, 32)
    target = torch.randint(0, 10, (args.batch_size,))

    def step():
        optimizer.zero_grad()
        for i in range(args.batches_per_allreduce):
            last = i == args.batches_per_allreduce - 1
            # Accumulating passes skip DDP's allreduce, as Chorus's do.
            with model.no_sync() if not last else contextlib.nullcontext():
                loss = F.cross_entropy(model(data), target) / args.batches_per_allreduce
                loss.backward()
        optimizer.step()

    if log:
        params = sum(p.numel() for p in model.parameters())
        print(f"Model: resnet18 ({params} parameters), input 3x32x32, random data (PyTorch DDP, gloo)")
        print(f"Batch size: {args.batch_size} per rank, {args.batches_per_allreduce} batches per allreduce, "
              f"fp16 allreduce {'on' if args.fp16_allreduce else 'off'}, {args.threads} threads per rank")
        print(f"Number of ranks: {size}\nRunning warmup...", flush=True)
    model.train()
    timeit.timeit(step, number=args.num_warmup_batches)

    if log:
        print("Running benchmark...", flush=True)
    images = args.batch_size * args.batches_per_allreduce * args.num_batches_per_iter
    rates = []
    for i in range(args.num_iters):
        rates.append(images / timeit.timeit(step, number=args.num_batches_per_iter))
        if log:
            print(f"Iter #{i}: {rates[-1]:.1f} img/sec on rank 0", flush=True)

    totals = torch.tensor(rates, dtype=torch.float64)
    dist.all_reduce(totals)  # sum over ranks, per iteration
    per_rank = totals / size
    if log:
        # numpy's std (population), as Horovod's benchmark uses.
        r_mean, r_std = per_rank.mean().item(), per_rank.std(unbiased=False).item()
        t_mean, t_std = totals.mean().item(), totals.std(unbiased=False).item()
        print(f"Img/sec per rank: {r_mean:.1f} +-{1.96 * r_std:.1f}")
        print(f"Total img/sec on {size} rank(s): {t_mean:.1f} +-{1.96 * t_std:.1f}")
        print(f"RESULT np={size} imgs_per_sec_total={t_mean:.1f} per_rank={r_mean:.1f} std={r_std:.1f}", flush=True)
    # No teardown: in torch 1.13, destroying DDP's reducer and the gloo
    # process group at exit deadlocks now and then (~ProcessGroupGloo waits
    # on a mutex its worker thread holds; seen here with a rank spinning for
    # 14 minutes after the results were printed). Every rank is done once
    # the barrier passes, so leave at once.
    dist.barrier()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


if __name__ == "__main__":
    if "RANK" not in os.environ:  # a plain `python3 ddp_benchmark.py`: one rank
        os.environ.update(RANK="0", WORLD_SIZE="1", MASTER_ADDR="127.0.0.1", MASTER_PORT="29517")
    main()
